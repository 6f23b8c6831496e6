"""Mutants that publish what they should refuse, or change what was published (DEF-01..06)."""

from __future__ import annotations

from typing import Any, ClassVar

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.routing import Route

from arck.reference.auth import Principal
from arck.reference.engine import Engine
from arck.reference.models import (
    MAX_BUDGET,
    MIN_BUDGET,
    REMOVED_FIELDS,
    PublishedTool,
    ToolSet,
    ToolSetCreate,
)
from arck.reference.mutants.base import serve

LEGACY_DEFAULT = 8192


def _tools(data: object) -> list[dict[str, Any]]:
    """The tool objects of a tool set body, for mutants that rewrite them before validating."""
    if not isinstance(data, dict) or not isinstance(data.get("tools"), list):
        return []
    return [tool for tool in data["tools"] if isinstance(tool, dict)]


class LowBudgetEngine(Engine):
    min_budget: ClassVar[int] = MIN_BUDGET - 1


class HighBudgetEngine(Engine):
    max_budget: ClassVar[int] = MAX_BUDGET + 1


def _lax_int(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value


class LaxIntEngine(Engine):
    """Coerces a budget given as a bool, an integral float or a numeric string."""

    def validate_tool_set(self, data: object) -> ToolSetCreate:
        for tool in _tools(data):
            if "max_result_context_bytes" in tool:
                tool["max_result_context_bytes"] = _lax_int(tool["max_result_context_bytes"])
        return super().validate_tool_set(data)


class LegacyDefaultEngine(Engine):
    def validate_tool_set(self, data: object) -> ToolSetCreate:
        for tool in _tools(data):
            tool.setdefault("max_result_context_bytes", LEGACY_DEFAULT)
        return super().validate_tool_set(data)


class RemovedFieldsIgnoredEngine(Engine):
    """Drops `max_result_tokens` / `max_result_bytes` silently instead of refusing them."""

    def validate_tool_set(self, data: object) -> ToolSetCreate:
        for place in [data, *_tools(data)]:
            if isinstance(place, dict):
                for name in REMOVED_FIELDS:
                    place.pop(name, None)
        return super().validate_tool_set(data)


class OptionalDescriptionEngine(Engine):
    def validate_tool_set(self, data: object) -> ToolSetCreate:
        for tool in _tools(data):
            tool.setdefault("description", "")
        return super().validate_tool_set(data)


class UncheckedBindingEngine(Engine):
    def check_binding(self, principal: Principal, binding_id: str, path: str) -> None:
        return None


class MutableEngine(Engine):
    """Keeps replacements of published tool sets beside the immutable store, and prefers them."""

    def __init__(self) -> None:
        super().__init__()
        self.replaced: dict[tuple[str, str], ToolSet] = {}

    def get_tool_set(
        self, principal: Principal, tool_set_id: str, *, path: str = "tool_set_id"
    ) -> ToolSet:
        found = self.replaced.get((principal.tenant, tool_set_id))
        if found is not None:
            return found
        return super().get_tool_set(principal, tool_set_id, path=path)

    def replace_tool_set(self, principal: Principal, tool_set_id: str, data: object) -> ToolSet:
        self.get_tool_set(principal, tool_set_id)
        if isinstance(data, dict):  # a PUT takes what it knows and ignores the rest
            data = {k: v for k, v in data.items() if k in ("name", "tools")}
        request = self.validate_tool_set(data)
        tools = [PublishedTool.model_validate(tool.model_dump()) for tool in request.tools]
        replaced = ToolSet(tool_set_id=tool_set_id, name=request.name, tools=tools)
        self.replaced[(principal.tenant, tool_set_id)] = replaced
        return replaced


def budget_1023() -> FastAPI:
    return serve(LowBudgetEngine())


def budget_32769() -> FastAPI:
    return serve(HighBudgetEngine())


def lax_int() -> FastAPI:
    return serve(LaxIntEngine())


def default_8192() -> FastAPI:
    return serve(LegacyDefaultEngine())


def removed_fields_accepted() -> FastAPI:
    return serve(RemovedFieldsIgnoredEngine())


def description_optional() -> FastAPI:
    return serve(OptionalDescriptionEngine())


def unknown_binding_accepted() -> FastAPI:
    return serve(UncheckedBindingEngine())


def mutable_tool_set() -> FastAPI:
    """A PUT route placed before the reference's 405 route, replacing the published tool set."""
    engine = MutableEngine()
    app = serve(engine)

    async def put(request: Request) -> JSONResponse:
        principal = engine.authenticate(request.headers.get("authorization"))
        engine.authorize(principal, engine.permissions["publish_tool_set"], None)
        body = engine.parse_body(await request.body())
        tool_set_id = request.path_params["tool_set_id"]
        return JSONResponse(engine.replace_tool_set(principal, tool_set_id, body).model_dump())

    app.router.routes.insert(0, Route("/v1/tool-sets/{tool_set_id}", put, methods=["PUT"]))
    return app
