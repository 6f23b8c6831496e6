"""Wire models of the reference profile (DEF, DRY, PRO-03), validated in pydantic strict mode.

Strict mode is what PRO-01 asks of integer fields: `16384.0`, `"16384"` and `true` are refused
rather than coerced. Bodies reach these models already parsed by `strictjson`, so `Any` fields
hold only JSON values. Budget bounds come from the validation context, which lets the engine
(and a mutant subclassing it) decide them; the documented bounds are the defaults.
"""

from __future__ import annotations

from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from arck.reference.canonical import pointer_token
from arck.reference.capability import SCOPE_PATTERN, CapabilityDeclaration
from arck.reference.errors import ValidationFailed

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_CONTEXT_TOKENS",
    "MAX_BUDGET",
    "MIN_BUDGET",
    "REMOVED_FIELDS",
    "AgentVersion",
    "AgentVersionCreate",
    "Binding",
    "BindingCreate",
    "ContextPreview",
    "DryRunRequest",
    "DryRunResponse",
    "ErrorBody",
    "ErrorDetail",
    "Health",
    "MockReceipt",
    "PublishedTool",
    "ToolDefinition",
    "ToolSet",
    "ToolSetCreate",
    "find_removed_field",
    "pointer",
    "validation_failed",
]

DEFAULT_BUDGET = 16384
DEFAULT_CONTEXT_TOKENS = 256_000  # RUN-05: the default max_context_tokens of a version
MIN_BUDGET = 1024
MAX_BUDGET = 32768
TOOL_NAME_PATTERN = SCOPE_PATTERN  # the same names: a declaration's scope is its tool's name
REMOVED_FIELDS = {
    "max_result_tokens": "the token budget max_result_tokens was removed",
    "max_result_bytes": "the receipt-rejection limit max_result_bytes was removed",
}
ReceiptKind = Literal[
    "accepted",
    "progress",
    "completed",
    "failed",
    "cancelled",
    "reconciliation_required",
    "submission",
]
ErrorCode = Literal[
    "unauthorized",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "invalid_json",
    "body_too_large",
    "validation_failed",
    "removed_field",
    "unknown_binding",
    "conflict",
]

_STRICT = ConfigDict(strict=True, extra="forbid")


def pointer(parts: tuple[str | int, ...] | list[str | int]) -> str:
    """An RFC 6901 JSON Pointer from path segments."""
    return "".join("/" + pointer_token(p) for p in parts)


def _check_json_schema(value: dict[str, Any]) -> dict[str, Any]:
    try:
        Draft202012Validator.check_schema(value)
    except SchemaError as exc:
        raise PydanticCustomError(
            "invalid_json_schema",
            "not a valid JSON Schema (2020-12): {reason}",
            {"reason": exc.message[:200], "pointer": pointer(list(exc.absolute_path))},
        ) from None
    except Exception as exc:
        # A tool author's schema can break the checker itself: a regex repetition too large
        # for `re` (OverflowError), nesting past the interpreter's stack (RecursionError).
        # Whatever the checker cannot check is refused, never a 500.
        raise PydanticCustomError(
            "invalid_json_schema",
            "JSON Schema cannot be checked: {reason}",
            {"reason": f"{type(exc).__name__}: {str(exc)[:200]}"},
        ) from None
    return value


class BindingCreate(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1)
    description: str = ""
    capability: CapabilityDeclaration | None = None  # CAP-01: docs/capabilities.md


class Binding(BaseModel):
    binding_id: str
    name: str
    description: str
    # the declaration as sent, what it left out left out; absent on a binding without one
    capability: dict[str, Any] | None = None


class ToolDefinition(BaseModel):
    """DEF-01, DEF-02: one tool of a tool set as published."""

    model_config = _STRICT
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str
    binding_id: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    max_result_context_bytes: StrictInt = Field(
        default=DEFAULT_BUDGET,
        json_schema_extra={"minimum": MIN_BUDGET, "maximum": MAX_BUDGET},
    )

    @field_validator("input_schema", "output_schema")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check_json_schema(value)

    @field_validator("max_result_context_bytes")
    @classmethod
    def _budget_in_range(cls, value: int, info: ValidationInfo) -> int:
        context = info.context if isinstance(info.context, dict) else {}
        low = int(context.get("min_budget", MIN_BUDGET))
        high = int(context.get("max_budget", MAX_BUDGET))
        if not low <= value <= high:
            raise PydanticCustomError(
                "budget_range",
                "max_result_context_bytes must be an integer from {low} to {high} bytes",
                {"low": low, "high": high},
            )
        return value


class ToolSetCreate(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1)
    tools: list[ToolDefinition]

    @model_validator(mode="after")
    def _unique_names(self) -> ToolSetCreate:
        seen: set[str] = set()
        for i, tool in enumerate(self.tools):
            if tool.name in seen:
                raise PydanticCustomError(
                    "duplicate_tool_name",
                    "tool name '{name}' is used twice in the tool set",
                    {"name": tool.name, "pointer": f"/tools/{i}/name"},
                )
            seen.add(tool.name)
        return self


class PublishedTool(BaseModel):
    """A published tool, defaults filled in; read back without re-checking bounds."""

    name: str
    description: str
    binding_id: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    max_result_context_bytes: int


class ToolSet(BaseModel):
    tool_set_id: str
    name: str
    tools: list[PublishedTool]


class AgentVersionCreate(BaseModel):
    """A version; `channel_id` (needed to run it) and the rest are optional (docs/runs.md)."""

    model_config = _STRICT
    tool_set_id: str
    system_prompt: str
    channel_id: str | None = None
    summary_channel_id: str | None = None
    max_context_tokens: StrictInt | None = Field(default=None, ge=4_096, le=100_000_000)


class AgentVersion(BaseModel):
    """The run members are left out of the answer when a version names no channel."""

    agent_version: str
    agent_id: str
    tool_set_id: str
    system_prompt: str
    channel_id: str | None = None
    summary_channel_id: str | None = None
    max_context_tokens: int | None = None


class MockReceipt(BaseModel):
    model_config = _STRICT
    receipt_id: str
    kind: ReceiptKind
    result: Any = None


class DryRunRequest(BaseModel):
    """SPEC §3: `POST /v1/tools/dry-run`."""

    model_config = _STRICT
    agent_version: str
    tool_name: str
    arguments: dict[str, Any]
    mock_receipts: list[MockReceipt]


class ContextPreview(BaseModel):
    """DRY-01: what the first completed result would be on entering the history."""

    max_result_context_bytes: int
    original_bytes: int
    retained_bytes: int
    truncated: bool
    result: Any


class DryRunResponse(BaseModel):
    context_preview: ContextPreview | None
    execution_verified: Literal[False] = False


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class ErrorDetail(BaseModel):
    code: ErrorCode
    message: str
    path: str


class ErrorBody(BaseModel):
    """PRO-03: every error answer."""

    error: ErrorDetail


def find_removed_field(data: object) -> tuple[str, str] | None:
    """DEF-03: the first removed setting on a tool set or one of its tools, as (path, name).

    Only these two levels are configuration; the same names inside schemas are ordinary data.
    """
    if not isinstance(data, dict):
        return None
    places: list[tuple[str, object]] = [("", data)]
    tools = data.get("tools")
    if isinstance(tools, list):
        places += [(f"/tools/{i}", tool) for i, tool in enumerate(tools)]
    for prefix, place in places:
        if isinstance(place, dict):
            for name in REMOVED_FIELDS:
                if name in place:
                    return f"{prefix}/{name}", name
    return None


def validation_failed(exc: ValidationError, prefix: str = "") -> ValidationFailed:
    """The first pydantic error as a 422 naming its JSON Pointer path."""
    error = exc.errors(include_url=False, include_input=False)[0]
    ctx = error.get("ctx") or {}
    path = prefix + pointer(list(error["loc"])) + str(ctx.get("pointer", ""))
    message = error["msg"]
    if error["type"] in {"model_type", "model_attributes_type", "dict_type"}:
        message = "must be a JSON object"
    elif error["type"] == "extra_forbidden":
        message = "unknown member; not part of this object"
    where = path or "the body"
    return ValidationFailed(f"{where}: {message}", path)
