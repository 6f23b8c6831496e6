"""HTTP routes of runs (docs/runs.md), in the style of reference/app.py.

Handlers are `async` and read bodies on the event loop, never in a thread: the virtual clock
jumps when the loop is idle, and a thread would leave it idle while a model call's timeout is
pending, firing the timeout early.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from arck.reference.auth import Principal
from arck.reference.runtime import stream
from arck.reference.runtime.service import Runtime, _validate
from arck.reference.runtime.wire import (
    CancelRequest,
    Channel,
    ChannelCreate,
    Deposit,
    EventList,
    HistoryItems,
    InputAccepted,
    InputAppend,
    Run,
    RunCreate,
    Session,
    SessionCreate,
    ToolCallList,
    ToolRevocation,
    ToolRevocationCreate,
    Wallet,
    WalletCreate,
)

__all__ = ["REQUEST_MODELS", "ClockAdvance", "install", "install_test_clock"]

REQUEST_MODELS: tuple[type[BaseModel], ...] = (
    ChannelCreate, WalletCreate, Deposit, SessionCreate, RunCreate, CancelRequest,
    InputAppend, ToolRevocationCreate,
)


def ok(model: BaseModel, status: int = 200) -> JSONResponse:
    """A wire model as the answer (its own JSON, not re-validated by FastAPI)."""
    return JSONResponse(model.model_dump(mode="python"), status_code=status)


def install(
    app: FastAPI,
    runtime: Runtime,
    deps: dict[str, Any],
    body_dep: Any,
    errors: Callable[..., dict[int | str, dict[str, Any]]],
    body: Callable[[type[BaseModel]], dict[str, Any]],
    event_stream: stream.EventStream = stream.of_run,
) -> None:
    engine = runtime.engine

    post_errors = errors(400, 401, 403, 404, 413, 422)

    @app.post("/v1/channels", status_code=201, response_model=Channel, tags=["runs"],
              responses=errors(400, 401, 403, 413, 422), openapi_extra=body(ChannelCreate))
    async def create_channel(
        principal: Principal = deps["publish_channel"], data: Any = body_dep
    ) -> JSONResponse:
        return ok(engine.publish_channel(principal, data), 201)

    @app.get("/v1/channels/{channel_id}", response_model=Channel, tags=["runs"],
             responses=errors(401, 403, 404))
    async def get_channel(
        channel_id: str, principal: Principal = deps["get_channel"]
    ) -> JSONResponse:
        return ok(engine.get_channel(principal, channel_id))

    @app.post("/v1/wallets", status_code=201, response_model=Wallet, tags=["runs"],
              responses=errors(400, 401, 403, 413, 422), openapi_extra=body(WalletCreate))
    async def create_wallet(
        principal: Principal = deps["create_wallet"], data: Any = body_dep
    ) -> JSONResponse:
        return ok(runtime.create_wallet(principal, data), 201)

    @app.get("/v1/wallets/{wallet_id}", response_model=Wallet, tags=["runs"],
             responses=errors(401, 403, 404))
    async def get_wallet(wallet_id: str, principal: Principal = deps["get_wallet"]) -> JSONResponse:
        return ok(runtime.get_wallet(principal, wallet_id))

    @app.post("/v1/wallets/{wallet_id}/deposits", response_model=Wallet, tags=["runs"],
              responses=post_errors, openapi_extra=body(Deposit))
    async def deposit(
        wallet_id: str, principal: Principal = deps["deposit"], data: Any = body_dep
    ) -> JSONResponse:
        return ok(runtime.deposit(principal, wallet_id, data))

    @app.post("/v1/sessions", status_code=201, response_model=Session, tags=["runs"],
              responses=post_errors, openapi_extra=body(SessionCreate))
    async def create_session(
        principal: Principal = deps["create_session"], data: Any = body_dep
    ) -> JSONResponse:
        return ok(runtime.create_session(principal, data), 201)

    @app.get("/v1/sessions/{session_id}", response_model=Session, tags=["runs"],
             responses=errors(401, 403, 404))
    async def get_session(
        session_id: str, principal: Principal = deps["get_session"]
    ) -> JSONResponse:
        return ok(runtime.session_view(principal, session_id))

    for suffix, kind in (("history", "formal"), ("execution-history", "execution")):

        def history(
            session_id: str, principal: Principal = deps["get_session"], kind: str = kind
        ) -> JSONResponse:
            return ok(HistoryItems(items=runtime.history(principal, session_id, kind)))

        app.add_api_route(
            f"/v1/sessions/{{session_id}}/{suffix}", _async(history), methods=["GET"],
            response_model=HistoryItems, responses=errors(401, 403, 404), tags=["runs"],
            name=f"session_{kind}_history",
        )

    @app.post("/v1/sessions/{session_id}/runs", status_code=201, response_model=Run,
              tags=["runs"], responses=errors(400, 401, 403, 404, 409, 413, 422),
              openapi_extra=body(RunCreate))
    async def create_run(
        session_id: str, principal: Principal = deps["create_run"], data: Any = body_dep
    ) -> JSONResponse:
        run = runtime.create_run(principal, session_id, data)
        runtime.workers.start()
        return ok(run, 201)

    @app.get("/v1/runs/{run_id}", response_model=Run, tags=["runs"],
             responses=errors(401, 403, 404))
    async def get_run(run_id: str, principal: Principal = deps["get_run"]) -> JSONResponse:
        runtime.workers.start()  # a restarted app picks up lapsed leases (RUN-02)
        return ok(runtime.get_run(principal, run_id))

    @app.post("/v1/runs/{run_id}/cancel", response_model=Run, tags=["runs"],
              responses=post_errors, openapi_extra=body(CancelRequest))
    async def cancel_run(
        run_id: str, principal: Principal = deps["cancel_run"], data: Any = body_dep
    ) -> JSONResponse:
        return ok(runtime.cancel_run(principal, run_id, data))

    @app.post("/v1/runs/{run_id}/input", response_model=InputAccepted, tags=["runs"],
              responses=errors(400, 401, 403, 404, 409, 413, 422),
              openapi_extra=body(InputAppend))
    async def append_input(
        run_id: str, principal: Principal = deps["append_input"], data: Any = body_dep
    ) -> JSONResponse:
        answer = runtime.append_input(principal, run_id, data)
        runtime.workers.start()
        return ok(answer)

    @app.post("/v1/agents/{agent_id}/tool-revocations", status_code=201,
              response_model=ToolRevocation, tags=["runs"],
              responses=errors(400, 401, 403, 413, 422),
              openapi_extra=body(ToolRevocationCreate))
    async def revoke_tool(
        agent_id: str, principal: Principal = deps["revoke_tool"], data: Any = body_dep
    ) -> JSONResponse:
        return ok(runtime.revoke_tool(principal, agent_id, data), 201)

    @app.get("/v1/runs/{run_id}/events", response_model=EventList, tags=["runs"],
             responses={**errors(401, 403, 404, 422), 200: {"content": {
                 stream.MEDIA_TYPE: {"schema": {"type": "string"}}},
                 "description": "JSON, or with `Accept: text/event-stream` the events as SSE "
                                "from after `Last-Event-ID` (docs/runs.md)."}})
    async def run_events(
        run_id: str, request: Request, principal: Principal = deps["get_run"]
    ) -> Response:
        runtime.workers.start()
        if not stream.wants_stream(request.headers.get("accept")):
            return ok(EventList(events=runtime.events(principal, run_id)))
        runtime.events(principal, run_id)  # 404 / 403 before the stream starts
        after = stream.last_event_id(request.headers.get("last-event-id"))
        return StreamingResponse(event_stream(runtime, principal, run_id, after),
                                 media_type=stream.MEDIA_TYPE, headers=stream.HEADERS)

    @app.get("/v1/runs/{run_id}/tool-calls", response_model=ToolCallList, tags=["runs"],
             responses=errors(401, 403, 404))
    async def run_tool_calls(
        run_id: str, principal: Principal = deps["get_run"]
    ) -> JSONResponse:
        return ok(ToolCallList(tool_calls=runtime.tool_calls(principal, run_id)))


class ClockAdvance(BaseModel):
    """`POST /v1/test-control/clock`: move the engine's virtual clock forward."""

    model_config = ConfigDict(extra="forbid")
    advance_seconds: float = Field(ge=0, le=10**9, allow_inf_nan=False)


def install_test_clock(app: FastAPI, clock: Any, caller: Any, body_dep: Any,
                       kept: Callable[[float], None] | None = None) -> None:
    """Capability `test-clock` (`arck serve --test-clock`): 200 `{"now"}` once every sleeper
    due by the new time has run, and `kept(now)` has stored it. Absent otherwise (404 as any
    unknown route)."""

    @app.post("/v1/test-control/clock", include_in_schema=False)
    async def advance_clock(principal: Principal = caller, data: Any = body_dep) -> JSONResponse:
        request = _validate(ClockAdvance, data)
        now = await clock.advance(request.advance_seconds)
        if kept is not None:
            kept(now)
        return JSONResponse({"now": now})


def _async(handler: Callable[..., JSONResponse]) -> Callable[..., Any]:
    """Run a handler on the loop (FastAPI runs plain functions in a thread)."""
    import functools

    @functools.wraps(handler)
    async def wrapper(*args: Any, **kwargs: Any) -> JSONResponse:
        return handler(*args, **kwargs)

    return wrapper
