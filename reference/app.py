"""The reference engine over HTTP: the wire profile of docs/profile.md (PRO-01..03, AUTH-01).

FastAPI is used for routing, dependency order and the OpenAPI document, but not to read bodies:
its JSON reader is the lenient `json.loads`, and it validates bodies before any dependency runs,
which would answer 400/422 before 401/403. So each operation declares its body in the OpenAPI
document only, and two dependencies run in order: the caller (401, then 403), then the body
(413, then the engine's strict parser, 400). The engine validates what it receives (422).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import httpx
from fastapi import Depends, FastAPI, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from arck import PROTOCOL_REVISION
from arck.reference import migrations, testclock
from arck.reference.auth import Principal
from arck.reference.capability import ExecutionPolicy
from arck.reference.clock import Clock, WallClock
from arck.reference.engine import Engine
from arck.reference.errors import (
    ApiError,
    BodyTooLarge,
    InternalError,
    MethodNotAllowed,
    ValidationFailed,
)
from arck.reference.localpolicy import LocalPolicy
from arck.reference.models import (
    AgentVersion,
    AgentVersionCreate,
    Binding,
    BindingCreate,
    DryRunRequest,
    DryRunResponse,
    ErrorBody,
    Health,
    ToolSet,
    ToolSetCreate,
    pointer,
)
from arck.reference.openapi_wire import OpenApiImport, OpenApiImportCreate
from arck.reference.runtime import executor_routes
from arck.reference.runtime import routes as run_routes
from arck.reference.runtime.executors import DEV_EXECUTOR_SECRET
from arck.reference.runtime.modelcall import ModelClient
from arck.reference.runtime.runstore import RunStore
from arck.reference.runtime.service import Runtime
from arck.reference.runtime.stream import EventStream, of_run
from arck.reference.runtime.worker import Workers
from arck.reference.storagefaults import is_storage_fault, unavailable
from arck.reference.store import Store

__all__ = ["ReferenceApp", "create_app"]

_log = logging.getLogger("arck.reference")

_REQUEST_MODELS: tuple[type[BaseModel], ...] = (
    BindingCreate,
    ToolSetCreate,
    AgentVersionCreate,
    DryRunRequest,
    LocalPolicy,
    OpenApiImportCreate,
    *run_routes.REQUEST_MODELS,
    *executor_routes.REQUEST_MODELS,
)
_ERROR_TEXT = {
    400: "The body is not strict JSON (invalid_json).",
    401: "Missing, malformed or unknown bearer token (unauthorized).",
    403: "The credential lacks the permission or the agent scope, or is of the wrong kind "
         "(executor or service) for the endpoint (forbidden).",
    404: "Unknown resource, or another tenant's (not_found).",
    409: "In conflict with the resource's state (conflict, executor_offline).",
    413: "The body is over 8 MiB (body_too_large).",
    422: "Well-formed but invalid (validation_failed, removed_field, unknown_binding).",
    503: "The engine's storage is unavailable (a full disk, a read-only file, another "
         "process's lock): nothing was stored; send it again after Retry-After "
         "(storage_unavailable).",
}
_HTTP_CODES = {
    400: "invalid_json",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "body_too_large",
}


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Error answers as references to `ErrorBody` (put in the document by `openapi`): given as
    a `model`, FastAPI would build a pydantic field per status per route, most of the time
    `create_app` takes, and a restart (RUN-02) builds the app again."""
    return {s: {"description": _ERROR_TEXT[s], "content": {"application/json": {"schema": {
        "$ref": "#/components/schemas/ErrorBody"}}}} for s in statuses}


def _body(model: type[BaseModel]) -> dict[str, Any]:
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def _respond(model: BaseModel, status: int = 200) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="python"), status_code=status)


def _respond_sparse(version: AgentVersion | Binding, status: int = 200) -> JSONResponse:
    """Optional members left out: a version without a channel answers exactly as before runs
    existed, a binding without a declaration as before the capability contract."""
    return JSONResponse(version.model_dump(mode="python", exclude_none=True), status_code=status)


def _error_response(exc: ApiError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers or None)


class ReferenceApp(FastAPI):
    """FastAPI whose OpenAPI document also holds the request bodies the engine reads itself."""

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema:
            return self.openapi_schema
        doc = get_openapi(
            title=self.title,
            version=self.version,
            description=self.description,
            routes=self.routes,
        )
        schemas: dict[str, Any] = doc.setdefault("components", {}).setdefault("schemas", {})
        _, defs = models_json_schema(
            [(model, "validation") for model in _REQUEST_MODELS]
            + [(ErrorBody, "serialization")],
            ref_template="#/components/schemas/{model}",
        )
        for name, schema in defs.get("$defs", {}).items():
            if schemas.setdefault(name, schema) != schema:
                raise RuntimeError(f"two different schemas named {name!r} in the document")
        # FastAPI documents its own 422 body for path parameters; ours never produces it.
        for item in doc.get("paths", {}).values():
            for operation in item.values():
                default = operation.get("responses", {}).get("422", {})
                if "HTTPValidationError" in str(default):
                    del operation["responses"]["422"]
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        # Any operation may meet a storage fault (storagefaults.py): 503, Retry-After.
        unavailable = {"description": _ERROR_TEXT[503], "headers": {"Retry-After": {
            "description": "seconds to wait before sending the request again",
            "schema": {"type": "integer"}}}, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
        for item in doc.get("paths", {}).values():
            for operation in item.values():
                operation.setdefault("responses", {}).setdefault("503", unavailable)
        self.openapi_schema = doc
        return doc


def create_app(
    engine: Engine | None = None,
    *,
    database: str = ":memory:",
    clock: Clock | None = None,
    provider_transport: httpx.AsyncBaseTransport | None = None,
    workers_class: type[Workers] = Workers,
    runtime_class: type[Runtime] = Runtime,
    event_stream: EventStream = of_run,
    inline_parse: Callable[[bytes], Any] | None = None,
    provider_url: str | None = None,
    test_clock: bool = False,
    lease_seconds: float | None = None,
    executor_secret: str = DEV_EXECUTOR_SECRET,
    migrate: Callable[[Store], object] = migrations.migrate,
) -> FastAPI:
    """The reference engine's ASGI app; `engine` may be a mutant (a subclass of `Engine`),
    and so may the runtime's seams, `workers_class`, `runtime_class`, `event_stream` (what
    `GET /v1/runs/{id}/events` streams as SSE) and `inline_parse` (how the bodies of the
    runs and executor routes are parsed; default the engine's strict `parse_body`).

    Runs reach the model provider only on `provider_transport` (base URL http://provider/v1);
    without one, a run's model call is refused and ends it `model_timeout`. `clock` is the
    only time runs read (a virtual clock in tests).

    `provider_url` is an OpenAI-compatible base URL (`http://127.0.0.1:8900/v1`) reached over the
    network, or the base URL used with `provider_transport`. `test_clock` runs the engine on a
    `ManualClock` (or on `clock`, which must then have `advance`) and adds `POST
    /v1/test-control/clock` (capability `test-clock`); its own clock's time is kept in the
    store, so a restart on the same database resumes it (reference/testclock.py).
    `lease_seconds` is how long a worker's claim on a run lasts unless renewed (RUN-02;
    docs/runs.md "Leases and recovery").
    `executor_secret` derives executor tokens (docs/executors.md); the default is a fixed
    development secret, like the development credentials: not for production.
    `migrate` brings the store to the current revision once, before anything is served
    (DEF-07, reference/migrations.py): a seam for the mutant catalogue.
    """
    engine = engine if engine is not None else Engine(database=database)
    own_clock = test_clock and clock is None
    if own_clock:
        clock = testclock.resumed(engine.store)
    if test_clock and not callable(getattr(clock, "advance", None)):
        raise ValueError("test_clock needs a clock with advance(seconds)")
    clock = clock if clock is not None else WallClock()
    app = ReferenceApp(
        title="arck reference engine",
        version=PROTOCOL_REVISION,
        description="The reference profile of the agent runtime protocol (docs/profile.md).",
        # No interactive pages (/docs, /redoc): every route but /openapi.json needs a
        # credential (docs/profile.md), and those pages load their scripts from a CDN anyway.
        docs_url=None,
        redoc_url=None,
        # The reference reports to no OpenTelemetry collector; left on, FastAPI's native
        # telemetry looks the global providers up in the environment on every request.
        # (Older FastAPI keeps an unknown keyword in `extra` and ignores it.)
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.engine = engine
    bearer: Any = Security(
        HTTPBearer(auto_error=False, description="A credential: `Bearer <token>`.")
    )
    _install_handlers(app)

    def caller(
        operation: str, agent_param: str | None = None
    ) -> Callable[..., Awaitable[Principal]]:
        """Dependency: authenticate (401), then the permission and path agent scope (403)."""

        async def dependency(
            request: Request,
            _: HTTPAuthorizationCredentials | None = bearer,
        ) -> Principal:
            principal = engine.authenticate(request.headers.get("authorization"))
            if operation == "health" and request.url.path == "/v1/health":
                return principal  # any valid credential, an executor's too (docs/profile.md)
            agent_id = request.path_params.get(agent_param) if agent_param else None
            engine.authorize(principal, engine.permissions[operation], agent_id)
            return principal

        return dependency

    def executor_caller(operation: str) -> Callable[..., Awaitable[Principal]]:
        """Dependency of the executor API: authenticate (401), then an executor credential
        holding the operation's permission (403; docs/executors.md)."""

        async def dependency(
            request: Request,
            _: HTTPAuthorizationCredentials | None = bearer,
        ) -> Principal:
            principal = engine.authenticate(request.headers.get("authorization"))
            engine.authorize_executor(principal, engine.executor_permissions[operation])
            return principal

        return dependency

    async def limited_body(request: Request) -> bytes:
        """The body, refused with 413 once it is over `engine.body_limit` bytes."""
        declared = request.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > engine.body_limit:
            raise BodyTooLarge(f"the body is over {engine.body_limit} bytes", "Content-Length")
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > engine.body_limit:
                raise BodyTooLarge(f"the body is over {engine.body_limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def json_body(request: Request) -> Any:
        """Dependency: the body, at most `engine.body_limit` bytes, parsed strictly."""
        return await run_in_threadpool(engine.parse_body, await limited_body(request))

    # Dependencies are defaults, not `Annotated` metadata: with postponed annotations FastAPI
    # resolves annotation strings in module globals, where these closures do not exist.
    body_dep: Any = Depends(json_body)
    deps: dict[str, Any] = {op: Depends(caller(op)) for op in engine.permissions}
    deps["publish_version"] = Depends(caller("publish_version", "agent_id"))
    deps["revoke_tool"] = Depends(caller("revoke_tool", "agent_id"))
    deps.update({op: Depends(executor_caller(op)) for op in engine.executor_permissions})

    @app.get("/v1/health", response_model=Health, responses=_errors(401), tags=["health"])
    def health(principal: Principal = deps["health"]) -> JSONResponse:
        """Reachability check for the harness; needs a credential like everything else."""
        return _respond(Health())

    @app.post(
        "/v1/bindings",
        status_code=201,
        response_model=Binding,
        responses=_errors(400, 401, 403, 413, 422),
        openapi_extra=_body(BindingCreate),
        tags=["configuration"],
    )
    def create_binding(
        principal: Principal = deps["publish_binding"], body: Any = body_dep
    ) -> JSONResponse:
        # without a declaration a binding answers exactly as before the capability contract
        return _respond_sparse(engine.publish_binding(principal, body), 201)

    @app.get(
        "/v1/bindings/{binding_id}",
        response_model=Binding,
        responses=_errors(401, 403, 404),
        tags=["configuration"],
    )
    def get_binding(binding_id: str, principal: Principal = deps["get_binding"]) -> JSONResponse:
        return _respond_sparse(engine.get_binding(principal, binding_id))

    @app.get(
        "/v1/bindings/{binding_id}/policy",
        response_model=ExecutionPolicy,
        responses=_errors(401, 403, 404),
        tags=["configuration"],
    )
    def get_binding_policy(
        binding_id: str, principal: Principal = deps["get_binding_policy"]
    ) -> JSONResponse:
        """The execution policy enforced for the binding's operation (CAP-04)."""
        return _respond(engine.binding_policy(principal, binding_id))

    @app.put(
        "/v1/bindings/{binding_id}/local-policy",
        response_model=ExecutionPolicy,
        responses=_errors(400, 401, 403, 404, 413, 422),
        openapi_extra=_body(LocalPolicy),
        tags=["configuration"],
    )
    def set_local_policy(
        binding_id: str, principal: Principal = deps["set_local_policy"], body: Any = body_dep
    ) -> JSONResponse:
        """The deployment's local policy for the operation: it may only tighten (CAP-09)."""
        return _respond(engine.set_local_policy(principal, binding_id, body))

    @app.post(
        "/v1/tool-sets",
        status_code=201,
        response_model=ToolSet,
        responses=_errors(400, 401, 403, 413, 422),
        openapi_extra=_body(ToolSetCreate),
        tags=["configuration"],
    )
    def create_tool_set(
        principal: Principal = deps["publish_tool_set"], body: Any = body_dep
    ) -> JSONResponse:
        return _respond(engine.publish_tool_set(principal, body), 201)

    @app.post(
        "/v1/openapi-imports",
        status_code=201,
        response_model=OpenApiImport,
        responses=_errors(400, 401, 403, 413, 422),
        openapi_extra=_body(OpenApiImportCreate),
        tags=["configuration"],
    )
    def import_openapi(
        principal: Principal = deps["import_openapi"], body: Any = body_dep
    ) -> JSONResponse:
        """CAP-15: an OpenAPI document's declared operations as bindings and one tool set."""
        return _respond(engine.import_openapi(principal, body), 201)

    @app.get(
        "/v1/tool-sets/{tool_set_id}",
        response_model=ToolSet,
        responses=_errors(401, 403, 404),
        tags=["configuration"],
    )
    def get_tool_set(tool_set_id: str, principal: Principal = deps["get_tool_set"]) -> JSONResponse:
        return _respond(engine.get_tool_set(principal, tool_set_id))

    @app.post(
        "/v1/agents/{agent_id}/versions",
        status_code=201,
        response_model=AgentVersion,
        responses=_errors(400, 401, 403, 404, 413, 422),
        openapi_extra=_body(AgentVersionCreate),
        tags=["configuration"],
    )
    def create_version(
        agent_id: str,
        principal: Principal = deps["publish_version"],
        body: Any = body_dep,
    ) -> JSONResponse:
        return _respond_sparse(engine.publish_version(principal, agent_id, body), 201)

    @app.get(
        "/v1/agent-versions/{agent_version}",
        response_model=AgentVersion,
        responses=_errors(401, 403, 404),
        tags=["configuration"],
    )
    def get_version(agent_version: str, principal: Principal = deps["get_version"]) -> JSONResponse:
        return _respond_sparse(engine.get_version(principal, agent_version))

    @app.post(
        "/v1/tools/dry-run",
        response_model=DryRunResponse,
        responses=_errors(400, 401, 403, 404, 413, 422),
        openapi_extra=_body(DryRunRequest),
        tags=["tools"],
    )
    def dry_run(principal: Principal = deps["dry_run"], body: Any = body_dep) -> JSONResponse:
        return _respond(engine.dry_run_body(principal, body))

    parse_inline = inline_parse or engine.parse_body  # a seam for the mutant catalogue

    async def inline_body(request: Request) -> Any:
        """Dependency: as `json_body`, parsed on the event loop (see runtime/routes.py)."""
        return parse_inline(await limited_body(request))

    workers = workers_class(
        engine.store, RunStore(engine.store),
        ModelClient(provider_transport, clock, base_url=provider_url), clock,
    )
    if lease_seconds is not None:
        workers.lease_seconds = lease_seconds
    runtime = runtime_class(engine, workers, clock, executor_secret=executor_secret)
    app.state.runtime = runtime
    # Every table is installed by now; an older store is migrated before the first request.
    migrate(engine.store)
    # Executor tokens are found in this store, derived under this app's secret.
    engine.find_executor = runtime.executors.principal

    async def start_workers() -> None:
        """At startup the workers pick up runs whose lease lapsed (RUN-02)."""
        runtime.workers.start()

    app.router.on_startup.append(start_workers)
    app.router.on_shutdown.append(runtime.aclose)
    run_routes.install(app, runtime, deps, Depends(inline_body), _errors, _body, event_stream)
    executor_routes.install(app, runtime, deps, Depends(inline_body), _errors, _body)
    if test_clock:
        store = engine.store
        run_routes.install_test_clock(
            app, clock, deps["health"], Depends(inline_body),
            (lambda now: testclock.keep(store, now)) if own_clock else None)

    _immutable(app, "/v1/tool-sets/{tool_set_id}", "published tool sets are immutable", deps)
    _immutable(app, "/v1/agent-versions/{agent_version}", "agent versions are immutable", deps)
    return app


def _immutable(app: FastAPI, path: str, why: str, deps: dict[str, Any]) -> None:
    """DEF-04: PUT, PATCH and DELETE answer 405 (after 401) and change nothing."""

    def refuse(principal: Principal = deps["health"]) -> JSONResponse:
        raise MethodNotAllowed(
            f"{why} (DEF-04); publish a new one instead", "", headers={"Allow": "GET"}
        )

    app.add_api_route(path, refuse, methods=["PUT", "PATCH", "DELETE"], include_in_schema=False)


def _location(loc: Sequence[Any]) -> str:
    """A FastAPI error location as a body JSON Pointer, or the parameter's name."""
    if loc and loc[0] == "body":
        return pointer(list(loc[1:]))
    if len(loc) >= 2 and loc[0] in {"path", "query", "header", "cookie"}:
        return str(loc[1])
    return pointer(list(loc))


def _install_handlers(app: FastAPI) -> None:
    """Every answer other than success is a PRO-03 error body; nothing escapes as a bare 500."""

    async def api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return _error_response(exc)

    async def invalid_request(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = exc.errors()
        first = errors[0] if errors else {}
        path = _location(first.get("loc", ()))
        message = f"{path or 'the body'}: {first.get('msg', 'invalid request')}"
        return _error_response(ValidationFailed(message, path))

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        if exc.status_code in (404, 405):
            # No route, or not this method: still 401 first without a valid credential, as on
            # every endpoint (profile: 401 → 403 → 404 → 422).
            try:
                request.app.state.engine.authenticate(request.headers.get("authorization"))
            except ApiError as refused:
                return _error_response(refused)
        code = _HTTP_CODES.get(exc.status_code, "validation_failed")
        body = {"error": {"code": code, "message": str(exc.detail), "path": ""}}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        _log.error("a bug answering %s %s", request.method, request.url.path, exc_info=exc)
        answer = _error_response(InternalError("internal error; this is a bug in arck"))
        # The server drops the connection after an unhandled error: say so, so a client
        # knows its next request needs a new one (and that this one was answered).
        answer.headers["Connection"] = "close"
        return answer

    async def storage(request: Request, exc: Exception) -> JSONResponse:
        """A storage fault is the operator's condition: 503 with Retry-After, the real cause
        logged, the connection kept (storagefaults.py); other SQLite errors are bugs."""
        if not is_storage_fault(exc):
            return await unexpected(request, exc)
        _log.warning("storage fault answering %s %s: %s: %s", request.method,
                     request.url.path, getattr(exc, "sqlite_errorname", "?"), exc)
        return _error_response(unavailable(exc))

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(sqlite3.Error, storage)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)
