"""HTTP routes of the executor protocol (docs/executors.md), in the style of routes.py.

Registration and reading executors, and the business cancel request, take service
credentials; the rest is the executor API, for executor credentials only (the `deps` of
`engine.executor_permissions`). Handlers are `async` and read bodies on the event loop, as
routes.py explains.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from arck.reference.auth import Principal
from arck.reference.runtime.executor_wire import (
    CandidateList,
    Claim,
    ClaimRequest,
    Detach,
    DetachAnswer,
    Executor,
    ExecutorCall,
    ExecutorCreate,
    ExecutorRegistered,
    Heartbeat,
    HeartbeatAnswer,
    Receipt,
    ReceiptAnswer,
    ToolCallCancel,
    ToolCallCancelled,
)
from arck.reference.runtime.routes import ok
from arck.reference.runtime.service import Runtime

__all__ = ["REQUEST_MODELS", "install"]

REQUEST_MODELS: tuple[type[BaseModel], ...] = (
    ExecutorCreate, Heartbeat, ClaimRequest, Receipt, Detach, ToolCallCancel,
)


def install(
    app: FastAPI,
    runtime: Runtime,
    deps: dict[str, Any],
    body_dep: Any,
    errors: Callable[..., dict[int | str, dict[str, Any]]],
    body: Callable[[type[BaseModel]], dict[str, Any]],
) -> None:
    tags: list[str | Enum] = ["executors"]

    @app.post("/v1/executors", status_code=201, response_model=ExecutorRegistered, tags=tags,
              responses=errors(400, 401, 403, 404, 413, 422), openapi_extra=body(ExecutorCreate))
    async def register_executor(
        principal: Principal = deps["register_executor"], data: Any = body_dep
    ) -> JSONResponse:
        return ok(runtime.register_executor(principal, data), 201)

    @app.get("/v1/executors/{executor_id}", response_model=Executor, tags=tags,
             responses=errors(401, 403, 404))
    async def get_executor(
        executor_id: str, principal: Principal = deps["get_executor"]
    ) -> JSONResponse:
        return ok(runtime.get_executor(principal, executor_id))

    @app.post("/v1/executor/heartbeat", response_model=HeartbeatAnswer, tags=tags,
              responses=errors(400, 401, 403, 413, 422), openapi_extra=body(Heartbeat))
    async def heartbeat(
        principal: Principal = deps["heartbeat"], data: Any = body_dep
    ) -> JSONResponse:
        return ok(runtime.heartbeat(principal, data))

    @app.get("/v1/executor/candidates", response_model=CandidateList, tags=tags,
             responses=errors(401, 403))
    async def candidates(principal: Principal = deps["candidates"]) -> JSONResponse:
        return ok(runtime.candidate_list(principal))

    @app.get("/v1/executor/calls/{call_id}", response_model=ExecutorCall, tags=tags,
             responses=errors(401, 403, 404))
    async def executor_call(
        call_id: str, principal: Principal = deps["executor_call"]
    ) -> JSONResponse:
        return ok(runtime.executor_call(principal, call_id))

    call_errors = errors(400, 401, 403, 404, 409, 413, 422)

    @app.post("/v1/tool-calls/{call_id}/claims", status_code=201, response_model=Claim,
              tags=tags, responses=call_errors, openapi_extra=body(ClaimRequest))
    async def claim(
        call_id: str, principal: Principal = deps["claim"], data: Any = body_dep
    ) -> JSONResponse:
        return ok(runtime.claim(principal, call_id, data), 201)

    @app.post("/v1/tool-calls/{call_id}/receipts", response_model=ReceiptAnswer, tags=tags,
              responses=call_errors, openapi_extra=body(Receipt))
    async def submit_receipt(
        call_id: str, principal: Principal = deps["submit_receipt"], data: Any = body_dep
    ) -> JSONResponse:
        answer = await runtime.submit_receipt(principal, call_id, data)
        runtime.workers.start()
        return ok(answer)

    @app.post("/v1/tool-calls/{call_id}/detach", response_model=DetachAnswer, tags=tags,
              responses=call_errors, openapi_extra=body(Detach))
    async def detach(
        call_id: str, principal: Principal = deps["detach"], data: Any = body_dep
    ) -> JSONResponse:
        answer = runtime.detach(principal, call_id, data)
        runtime.workers.start()
        return ok(answer)

    @app.post("/v1/tool-calls/{call_id}/cancel", response_model=ToolCallCancelled, tags=tags,
              responses=call_errors, openapi_extra=body(ToolCallCancel))
    async def cancel_tool_call(
        call_id: str, principal: Principal = deps["cancel_tool_call"], data: Any = body_dep
    ) -> JSONResponse:
        return ok(runtime.cancel_tool_call(principal, call_id, data))
