"""Mutants that each break one decision or fixed choice of the wire profile (docs/profile.md).

The OpenAPI document (public, every endpoint), answers (201, sequential ids), tool-definition
rules, body limits (520 levels, 8 MiB, empty body), the order of checks, error codes and paths,
permissions per endpoint, health, and what a refusal reveals. Each is a reading of the profile
an independent implementation could plausibly take; docs/profile.md names the check that
catches it.
"""

from __future__ import annotations

import copy
import json
import sqlite3
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence, Set
from http import HTTPStatus
from typing import Any, ClassVar, TypeVar, cast

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, field_validator, model_validator
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arck.reference.auth import CONFIG_READ, CONFIG_WRITE, Principal
from arck.reference.engine import Engine
from arck.reference.errors import (
    ApiError,
    Forbidden,
    InvalidJSON,
    MethodNotAllowed,
    NotFound,
    ValidationFailed,
)
from arck.reference.models import (
    AgentVersion,
    DryRunResponse,
    ToolDefinition,
    ToolSet,
    ToolSetCreate,
)
from arck.reference.mutants.base import serve
from arck.reference.mutants.wire import LenientEngine, _no_duplicates, _refuse_constant
from arck.reference.store import Store

_B = TypeVar("_B", bound=BaseModel)
_BOM = b"\xef\xbb\xbf"
DECIMAL_8_MB = 8_000_000  # 8 MB read as decimal megabytes, not 8 MiB
UNLIMITED = 2**62
LOOSE_BODY_DEPTH = 600  # past the profile's 520; json.loads still parses it


def _render(exc: ApiError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers or None)


Gate = Callable[[Request], ApiError | None]


def _gated(app: FastAPI, gate: Gate) -> FastAPI:
    """`app` behind an HTTP middleware that may answer an error before routing and auth."""

    async def middleware(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        refused = gate(request)
        if refused is not None:
            return _render(refused)
        return await call_next(request)

    app.middleware("http")(middleware)
    return app


def _engine(app: FastAPI) -> Engine:
    engine: Engine = app.state.engine
    return engine


# -- the OpenAPI document and answers -----------------------------------------------------------


def openapi_private() -> FastAPI:
    """`/openapi.json` needs a credential like the API endpoints (the profile makes it public)."""
    app = serve()
    engine = _engine(app)

    def gate(request: Request) -> ApiError | None:
        if request.url.path != "/openapi.json":
            return None
        try:
            engine.authenticate(request.headers.get("authorization"))
        except ApiError as exc:
            return exc
        return None

    return _gated(app, gate)


def openapi_omits_dry_run() -> FastAPI:
    """The served document leaves out `POST /v1/tools/dry-run`; the endpoint still works."""
    app = serve()
    complete = app.openapi

    def partial() -> dict[str, Any]:
        doc = copy.deepcopy(complete())
        del doc["paths"]["/v1/tools/dry-run"]
        return doc

    app.openapi = partial  # type: ignore[method-assign]
    return app


def created_200() -> FastAPI:
    """Creations answer 200, a framework's default, instead of the profile's 201."""
    app = serve()

    async def middleware(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        if response.status_code == 201:
            response.status_code = 200
        return response

    app.middleware("http")(middleware)
    return app


class RandomIdStore(Store):
    """Ids are random (`bnd-<uuid>`), not sequential per store: a scenario cannot replay.

    Both insert paths are replaced: `insert` (inside a transaction) and `_insert`.
    """

    @staticmethod
    def insert(
        db: sqlite3.Connection,
        table: str,
        prefix: str,
        columns: Sequence[str],
        values: Sequence[Any],
    ) -> str:
        new_id = f"{prefix}-{uuid.uuid4().hex}"
        names = ", ".join(("id", *columns))
        marks = ", ".join("?" * (len(columns) + 1))
        db.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", (new_id, *values))
        return new_id

    def _insert(
        self, table: str, prefix: str, columns: Sequence[str], values: Sequence[Any]
    ) -> str:
        with self._lock:
            return self.insert(self._db, table, prefix, columns, values)


def random_ids() -> FastAPI:
    return serve(Engine(store=RandomIdStore()))


# -- tool definitions ---------------------------------------------------------------------------


class _AnyNameTool(ToolDefinition):
    name: str  # no pattern


class _AnyNameToolSet(ToolSetCreate):
    tools: list[_AnyNameTool]  # type: ignore[assignment]


class _DuplicateNamesToolSet(ToolSetCreate):
    @model_validator(mode="after")
    def _unique_names(self) -> _DuplicateNamesToolSet:
        return self


class _IgnoringTool(ToolDefinition):
    model_config = ConfigDict(strict=True, extra="ignore")


class _IgnoringToolSet(ToolSetCreate):
    tools: list[_IgnoringTool]  # type: ignore[assignment]


class _UncheckedSchemaTool(ToolDefinition):
    @field_validator("input_schema", "output_schema")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        return value


class _UncheckedSchemaToolSet(ToolSetCreate):
    tools: list[_UncheckedSchemaTool]  # type: ignore[assignment]


class ToolSetModelEngine(Engine):
    """Validates tool sets with `tool_set_model` instead of the profile's strict model."""

    tool_set_model: ClassVar[type[ToolSetCreate]] = ToolSetCreate

    def _validate(self, model: type[_B], data: object, **context: Any) -> _B:
        if model is ToolSetCreate:
            model = cast(type[_B], self.tool_set_model)
        return super()._validate(model, data, **context)


class AnyNameEngine(ToolSetModelEngine):
    tool_set_model: ClassVar[type[ToolSetCreate]] = _AnyNameToolSet


class DuplicateNamesEngine(ToolSetModelEngine):
    tool_set_model: ClassVar[type[ToolSetCreate]] = _DuplicateNamesToolSet


class UnknownMembersEngine(ToolSetModelEngine):
    tool_set_model: ClassVar[type[ToolSetCreate]] = _IgnoringToolSet


class UncheckedSchemasEngine(ToolSetModelEngine):
    tool_set_model: ClassVar[type[ToolSetCreate]] = _UncheckedSchemaToolSet


def tool_names_unchecked() -> FastAPI:
    return serve(AnyNameEngine())


def duplicate_tool_names() -> FastAPI:
    return serve(DuplicateNamesEngine())


def unknown_members_ignored() -> FastAPI:
    return serve(UnknownMembersEngine())


def schemas_unchecked() -> FastAPI:
    return serve(UncheckedSchemasEngine())


# -- bodies -------------------------------------------------------------------------------------


class ByteOrderMarkEngine(LenientEngine):
    """Skips a UTF-8 byte order mark, as `utf-8-sig` does, instead of refusing the body."""

    def lenient(self, body: bytes) -> Any:
        if not body.startswith(_BOM):
            raise ValueError("no byte order mark")
        return json.loads(
            body[len(_BOM) :], parse_constant=_refuse_constant, object_pairs_hook=_no_duplicates
        )


class EmptyBodyEngine(Engine):
    """Reads an empty body as `{}`, as many frameworks do, instead of refusing it with 400."""

    def parse_body(self, body: bytes) -> Any:
        if not body.strip():
            return {}
        return super().parse_body(body)


class PathlessInvalidJSONEngine(Engine):
    """400 `invalid_json` never names the path, even where the parser knows it."""

    def parse_body(self, body: bytes) -> Any:
        try:
            return super().parse_body(body)
        except InvalidJSON as exc:
            raise InvalidJSON(exc.message, "") from None


class LongInteger422Engine(Engine):
    """An integer of more than 4,300 digits is 422 `validation_failed`, not 400 `invalid_json`."""

    def parse_body(self, body: bytes) -> Any:
        try:
            return super().parse_body(body)
        except InvalidJSON as exc:
            if "digits" in exc.message:
                raise ValidationFailed(exc.message, exc.path) from None
            raise


class Body512Engine(Engine):
    body_depth: ClassVar[int] = 512


class Body600Engine(Engine):
    body_depth: ClassVar[int] = LOOSE_BODY_DEPTH


class Decimal8MBEngine(Engine):
    body_limit: ClassVar[int] = DECIMAL_8_MB


class UnlimitedBodyEngine(Engine):
    body_limit: ClassVar[int] = UNLIMITED


def bom_accepted() -> FastAPI:
    return serve(ByteOrderMarkEngine())


def empty_body_as_object() -> FastAPI:
    return serve(EmptyBodyEngine())


def invalid_json_no_path() -> FastAPI:
    return serve(PathlessInvalidJSONEngine())


def long_integer_422() -> FastAPI:
    return serve(LongInteger422Engine())


def body_depth_512() -> FastAPI:
    """Bodies limited to 512 levels, like results: a result at its own limit cannot be sent."""
    return serve(Body512Engine())


def body_depth_600() -> FastAPI:
    return serve(Body600Engine())


def body_limit_8mb() -> FastAPI:
    return serve(Decimal8MBEngine())


def no_body_limit() -> FastAPI:
    return serve(UnlimitedBodyEngine())


# -- the order of checks ------------------------------------------------------------------------


class ParseFirst:
    """ASGI middleware: every POST body is parsed strictly (400) before routing, credentials,
    permissions and the size limit: a global JSON middleware ahead of authentication."""

    def __init__(self, app: ASGIApp, engine: Engine) -> None:
        self.app = app
        self.engine = engine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        try:
            self.engine.parse_body(body)
        except ApiError as exc:
            await _render(exc)(scope, receive, send)
            return
        pending = [body]

        async def replay() -> Message:
            if not pending:
                return await receive()
            return {"type": "http.request", "body": pending.pop(), "more_body": False}

        await self.app(scope, replay, send)


def parse_before_auth() -> FastAPI:
    app = serve()
    middleware: Any = ParseFirst  # starlette types the factory loosely
    app.add_middleware(middleware, engine=_engine(app))
    return app


class HideUnknownFromScopedEngine(Engine):
    """A caller with a limited agent scope gets 403 for an unknown version too, hiding whether
    it exists (the profile answers 404: ids are sequential, existence is no secret)."""

    def get_version(
        self, principal: Principal, version_id: str, *, path: str = "agent_version"
    ) -> AgentVersion:
        if principal.agents != "*" and self.store.version(principal.tenant, version_id) is None:
            raise Forbidden("the credential's agent scope does not cover this agent", path)
        return super().get_version(principal, version_id, path=path)


class ToolLookupAfterValidationEngine(Engine):
    """Looks up a dry-run's version before validating the body, but its tool only after."""

    def dry_run_body(self, principal: Principal, data: object) -> DryRunResponse:
        if isinstance(data, dict) and isinstance(data.get("agent_version"), str):
            self.get_version(principal, data["agent_version"], path="/agent_version")
        return self.dry_run(principal, self.validate_dry_run(data))


class UnknownToolSet422Engine(Engine):
    """A new version naming no tool set of the tenant is 422, not 404 at `/tool_set_id`."""

    def publish_version(self, principal: Principal, agent_id: str, data: object) -> AgentVersion:
        request = self.validate_version(data)
        if self.store.tool_set(principal.tenant, request.tool_set_id) is None:
            raise ValidationFailed("/tool_set_id: no such tool set", "/tool_set_id")
        return super().publish_version(principal, agent_id, data)


class UnknownBinding404Engine(Engine):
    """An unknown `binding_id` is 404 `not_found`, not 422 `unknown_binding`."""

    def check_binding(self, principal: Principal, binding_id: str, path: str) -> None:
        if self.store.binding(principal.tenant, binding_id) is None:
            raise NotFound(f"{path}: no binding {binding_id[:64]!r}", path)


class OtherTenant403Engine(Engine):
    """Another tenant's version or tool set is 403 `forbidden`: its existence shows."""

    def _elsewhere(self, principal: Principal, find: Callable[[str], object | None]) -> None:
        if find(principal.tenant) is None:
            tenants = {p.tenant for p in self.credentials.values()} - {principal.tenant}
            if any(find(t) is not None for t in sorted(tenants)):
                raise Forbidden("this resource belongs to another tenant", "Authorization")

    def get_version(
        self, principal: Principal, version_id: str, *, path: str = "agent_version"
    ) -> AgentVersion:
        self._elsewhere(principal, lambda t: self.store.version(t, version_id))
        return super().get_version(principal, version_id, path=path)

    def get_tool_set(
        self, principal: Principal, tool_set_id: str, *, path: str = "tool_set_id"
    ) -> ToolSet:
        self._elsewhere(principal, lambda t: self.store.tool_set(t, tool_set_id))
        return super().get_tool_set(principal, tool_set_id, path=path)


class ScopeErrorLeaksEngine(Engine):
    """The 403 for a version outside the caller's scope names its agent and tool set."""

    def get_version(
        self, principal: Principal, version_id: str, *, path: str = "agent_version"
    ) -> AgentVersion:
        version = self.store.version(principal.tenant, version_id)
        if version is not None and not principal.covers(version.agent_id):
            raise Forbidden(
                f"agent {version.agent_id} (tool set {version.tool_set_id}) is outside the "
                "credential's agent scope",
                path,
            )
        return super().get_version(principal, version_id, path=path)


def hide_unknown_from_scoped() -> FastAPI:
    return serve(HideUnknownFromScopedEngine())


def tool_lookup_after_validation() -> FastAPI:
    return serve(ToolLookupAfterValidationEngine())


def unknown_tool_set_422() -> FastAPI:
    return serve(UnknownToolSet422Engine())


def unknown_binding_404() -> FastAPI:
    return serve(UnknownBinding404Engine())


def other_tenant_403() -> FastAPI:
    return serve(OtherTenant403Engine())


def scope_error_leaks() -> FastAPI:
    return serve(ScopeErrorLeaksEngine())


def method_before_credentials() -> FastAPI:
    """PUT, PATCH and DELETE on a published tool set or version answer 405 before 401."""
    app = serve()

    def gate(request: Request) -> ApiError | None:
        published = request.url.path.startswith(("/v1/tool-sets/", "/v1/agent-versions/"))
        if published and request.method in ("PUT", "PATCH", "DELETE"):
            return MethodNotAllowed("published resources are immutable", "",
                                    headers={"Allow": "GET"})
        return None

    return _gated(app, gate)


# -- permissions --------------------------------------------------------------------------------


class ReadPermissionWritesEngine(Engine):
    """Publishing takes `configuration:read` as well as `configuration:write`."""

    permissions: ClassVar[Mapping[str, frozenset[str]]] = {
        **Engine.permissions,
        **{
            op: frozenset({CONFIG_READ, CONFIG_WRITE})
            for op in ("publish_binding", "publish_tool_set", "publish_version")
        },
    }


class VersionScopeUncheckedEngine(Engine):
    """The agent scope is checked on dry-run only: not on reading or publishing a version."""

    def authorize(
        self,
        principal: Principal,
        permissions: Set[str],
        agent_id: str | None,
        *,
        path: str = "agent_id",
    ) -> None:
        if path in ("agent_id", "agent_version"):
            agent_id = None
        super().authorize(principal, permissions, agent_id, path=path)


def read_permission_writes() -> FastAPI:
    return serve(ReadPermissionWritesEngine())


def version_scope_unchecked() -> FastAPI:
    return serve(VersionScopeUncheckedEngine())


def health_needs_permission() -> FastAPI:
    """`GET /v1/health` needs `configuration:read`, not just any valid credential."""
    app = serve()
    engine = _engine(app)

    def gate(request: Request) -> ApiError | None:
        if request.url.path != "/v1/health":
            return None
        try:
            principal = engine.authenticate(request.headers.get("authorization"))
            engine.authorize(principal, frozenset({CONFIG_READ}), None)
        except ApiError as exc:
            return exc
        return None

    return _gated(app, gate)


# -- error codes and paths ----------------------------------------------------------------------


def _rewritten(app: FastAPI, rewrite: Callable[[ApiError], tuple[str, str]]) -> FastAPI:
    """Error bodies whose `(code, path)` come from `rewrite`; status and message unchanged."""

    async def handler(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        code, path = rewrite(exc)
        body = {"error": {"code": code, "message": exc.message, "path": path}}
        return JSONResponse(body, status_code=exc.status, headers=exc.headers or None)

    app.add_exception_handler(ApiError, handler)
    return app


def status_named_codes() -> FastAPI:
    """Codes are the HTTP reason phrases (`bad_request`, `unprocessable_entity`)."""

    def rewrite(exc: ApiError) -> tuple[str, str]:
        phrase = HTTPStatus(exc.status).phrase.lower()
        return phrase.replace(" ", "_").replace("-", "_"), exc.path

    return _rewritten(serve(), rewrite)


def generic_422_code() -> FastAPI:
    """Every 422 is `validation_failed`: no `removed_field`, no `unknown_binding`."""
    return _rewritten(
        serve(),
        lambda exc: ("validation_failed" if exc.status == 422 else exc.code, exc.path),
    )


def _dotted(path: str) -> str:
    if not path.startswith("/"):
        return path
    parts = path[1:].split("/")
    return ".".join(p.replace("~1", "/").replace("~0", "~") for p in parts)


def dotted_error_paths() -> FastAPI:
    """Body paths written as dotted paths (`tools.0.binding_id`), not JSON Pointers."""
    return _rewritten(serve(), lambda exc: (exc.code, _dotted(exc.path)))
