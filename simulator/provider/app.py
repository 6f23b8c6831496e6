"""The provider over HTTP: chat completions, and the harness's lookups under /v1/arck/.

A reply that must not arrive is broken at the outermost ASGI layer, after the status line
and headers went out and before the body: uvicorn then closes the socket (the client reads
EOF mid-response), and httpx's ASGITransport re-raises the error to the client in-process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arck.simulator.provider import wire

if TYPE_CHECKING:
    from arck.simulator.provider.provider import SimulatedProvider

__all__ = ["build_app"]

_DROP = "arck.provider.drop"  # scope key: the exception that breaks this connection


def _json(value: Any, status: int = 200) -> Response:
    return Response(wire.dumps(value), status, media_type="application/json")


def _not_found(message: str) -> Response:
    body = wire.error_body(message, "invalid_request_error", None, "not_found")
    return Response(body, 404, media_type="application/json")


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def build_app(provider: SimulatedProvider) -> ASGIApp:
    async def completions(request: Request) -> Response:
        raw = await request.body()
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        reply = await provider.complete(raw, headers, lambda: _until_disconnect(request.receive))
        if reply.drop is not None:
            request.scope[_DROP].append(reply.drop)
        return Response(reply.body, reply.status, reply.headers, media_type="application/json")

    async def requests(request: Request) -> Response:
        key = request.query_params.get("idempotency_key")
        found = provider.records() if key is None else provider.served_lookup(key)
        return _json({"object": "list", "data": [record.to_json() for record in found]})

    async def one_request(request: Request) -> Response:
        record = provider.lookup(request.path_params["request_id"])
        if record is None:
            return _not_found(f"No request with id {request.path_params['request_id']!r}.")
        return _json(record.to_json())

    async def request_body(request: Request) -> Response:
        recorded = provider.recorded_request(request.path_params["request_id"])
        if recorded is None:
            return _not_found(f"No request with id {request.path_params['request_id']!r}.")
        return Response(recorded.body, media_type="application/octet-stream")

    async def faults(request: Request) -> Response:
        return _json(provider.fault_counts())

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        message = f"Unknown request URL: {request.method} {request.url.path}."
        body = wire.error_body(message, "invalid_request_error", None, "unknown_url")
        return Response(body, status, media_type="application/json")

    inner = Starlette(
        routes=[
            Route("/v1/chat/completions", completions, methods=["POST"]),
            Route("/v1/arck/requests", requests, methods=["GET"]),
            Route("/v1/arck/requests/{request_id}", one_request, methods=["GET"]),
            Route("/v1/arck/requests/{request_id}/body", request_body, methods=["GET"]),
            Route("/v1/arck/faults", faults, methods=["GET"]),
        ],
        exception_handlers={404: http_error, 405: http_error},
    )
    return _BreakConnections(inner)


class _BreakConnections:
    """Sends a dropped reply's status line and headers, withholds its body, then raises."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        dropped: list[BaseException] = []

        async def send_or_withhold(message: Message) -> None:
            if not (dropped and message["type"] == "http.response.body"):
                await send(message)

        await self._app({**scope, _DROP: dropped}, receive, send_or_withhold)
        if dropped:
            raise dropped[0]
