"""Wire models and the engine's validators (DEF-01..03, DRY request shape, PRO-01 integers)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from arck.reference.engine import Engine
from arck.reference.errors import ApiError, RemovedField, ValidationFailed
from arck.reference.models import (
    DryRunRequest,
    DryRunResponse,
    ToolDefinition,
    find_removed_field,
    validation_failed,
)


def tool(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "search",
        "description": "Search orders.",
        "binding_id": "bnd-000001",
        "input_schema": {"type": "object"},
        "output_schema": {"type": "object"},
    }
    return base | changes


def tool_set(*tools: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {"name": "orders", "tools": list(tools) or [tool()]} | changes


def refused(data: object) -> ApiError:
    with pytest.raises(ApiError) as info:
        Engine().validate_tool_set(data)
    return info.value


def test_default_budget_is_filled_in() -> None:
    assert Engine().validate_tool_set(tool_set()).tools[0].max_result_context_bytes == 16384


@pytest.mark.parametrize("budget", [1024, 16384, 32768])
def test_budget_bounds_accepted(budget: int) -> None:
    parsed = Engine().validate_tool_set(tool_set(tool(max_result_context_bytes=budget)))
    assert parsed.tools[0].max_result_context_bytes == budget


@pytest.mark.parametrize("budget", [1023, 32769, 0, -1, 10**30, "16384", 16384.0, True, None])
def test_budget_refused_naming_the_field(budget: object) -> None:
    error = refused(tool_set(tool(), tool(name="b", max_result_context_bytes=budget)))
    assert isinstance(error, ValidationFailed)
    assert error.path == "/tools/1/max_result_context_bytes"


def test_a_subclass_can_widen_the_bounds() -> None:
    class Wide(Engine):
        min_budget = 1

    assert Wide().validate_tool_set(tool_set(tool(max_result_context_bytes=5))).tools[0]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        (tool_set(tool(max_result_tokens=4000)), "/tools/0/max_result_tokens"),
        (tool_set(tool(), tool(name="b", max_result_bytes=1)), "/tools/1/max_result_bytes"),
        (tool_set(max_result_tokens=4000), "/max_result_tokens"),
        # checked before any other validation: the bad budget is not what is reported
        (
            tool_set(tool(max_result_context_bytes=1, max_result_bytes=5)),
            "/tools/0/max_result_bytes",
        ),
    ],
)
def test_removed_fields(data: dict[str, Any], path: str) -> None:
    error = refused(data)
    assert isinstance(error, RemovedField)
    assert error.path == path
    assert "removed" in error.message
    assert "no alias" in error.message


def test_removed_names_inside_schemas_are_ordinary_data() -> None:
    schema = {"type": "object", "properties": {"max_result_tokens": {"type": "integer"}}}
    assert find_removed_field(tool_set(tool(input_schema=schema))) is None
    Engine().validate_tool_set(tool_set(tool(input_schema=schema)))


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ([], ""),
        ({"name": "x"}, "/tools"),
        (tool_set(tool(extra=1)), "/tools/0/extra"),
        (tool_set(tool(name="has space")), "/tools/0/name"),
        (tool_set(tool(name="x" * 65)), "/tools/0/name"),
        (tool_set(tool(), tool()), "/tools/1/name"),
        (tool_set(tool(input_schema=[])), "/tools/0/input_schema"),
        (tool_set(tool(output_schema={"type": "objekt"})), "/tools/0/output_schema/type"),
        (
            tool_set(tool(input_schema={"properties": {"a": {"minimum": "1"}}})),
            "/tools/0/input_schema/properties/a/minimum",
        ),
        (tool_set(tool(description=None)), "/tools/0/description"),
    ],
)
def test_validation_names_the_path(data: object, path: str) -> None:
    error = refused(data)
    assert isinstance(error, ValidationFailed)
    assert error.path == path


def test_pointer_escapes_keys() -> None:
    with pytest.raises(ValidationError) as info:
        ToolDefinition.model_validate(tool(**{"a/b~c": 1}), strict=True)
    assert validation_failed(info.value, "/tools/0").path == "/tools/0/a~1b~0c"


def test_dry_run_request_shape() -> None:
    request = DryRunRequest.model_validate(
        {
            "agent_version": "av-000001",
            "tool_name": "search",
            "arguments": {},
            "mock_receipts": [{"receipt_id": "r1", "kind": "completed", "result": [1]}],
        },
        strict=True,
    )
    assert request.mock_receipts[0].result == [1]
    with pytest.raises(ValidationError):
        DryRunRequest.model_validate(
            {
                "agent_version": "a",
                "tool_name": "t",
                "arguments": {},
                "mock_receipts": [{"receipt_id": "r", "kind": "done", "result": 1}],
            },
            strict=True,
        )


def test_dry_run_response_is_never_verified() -> None:
    assert DryRunResponse(context_preview=None).model_dump() == {
        "context_preview": None,
        "execution_verified": False,
    }
