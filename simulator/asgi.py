"""A synchronous httpx transport onto an ASGI app, in-process.

httpx's own `ASGITransport` is async-only, and the checks are synchronous (hypothesis drives
them); this runs it on an event loop in a blocking portal, so an in-process target is just an
`httpx.Client` like a URL target.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import ExitStack, suppress
from typing import Any, TypeVar

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal

from arck.simulator.clock import until_idle

_T = TypeVar("_T")
# `enough(headers, body so far)`: the caller has read what it wanted and hangs up.
Enough = Callable[[list[tuple[bytes, bytes]], bytes], bool]


class SyncASGITransport(httpx.BaseTransport):
    def __init__(
        self,
        app: Any,
        *,
        raise_app_exceptions: bool = False,
        after: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        # By default an app that crashes answers 500, as a server would, instead of raising
        # here; with `raise_app_exceptions` its exception reaches the caller. `after` runs in
        # the app's loop once each answer is read (until_idle: the work a request started is
        # done before the caller sees the answer, so a sequence of requests replays exactly).
        self._after = after
        self._after_lock: asyncio.Lock | None = None
        self._raise = raise_app_exceptions
        self._asgi = httpx.ASGITransport(app=app, raise_app_exceptions=raise_app_exceptions)
        self._stack = ExitStack()
        self._portal: BlockingPortal | None = None

    def _portal_started(self) -> BlockingPortal:
        if self._portal is None:
            self._portal = self._stack.enter_context(start_blocking_portal())
        return self._portal

    async def _send(self, request: httpx.Request) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        response = await self._asgi.handle_async_request(request)
        body = await response.aread()
        await response.aclose()
        await self._idle()
        return response.status_code, response.headers.raw, body

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        forwarded = httpx.Request(
            request.method, request.url, headers=request.headers, content=body
        )
        status, headers, content = self._portal_started().call(self._send, forwarded)
        return httpx.Response(status, headers=headers, content=content, request=request)

    async def _idle(self) -> None:
        """Run `after` for one request at a time: two requests in flight at once (concurrent
        claims) would each see the other's `sleep(0)` in `until_idle` as work still to do,
        and neither would ever find the loop idle."""
        if self._after is None:
            return
        if self._after_lock is None:
            self._after_lock = asyncio.Lock()  # made in the portal's loop, where it is used
        async with self._after_lock:
            await self._after()

    def replace_app(self, app: Any) -> None:
        """Answer from `app` from now on, in the same loop: a restarted service (RUN-02)."""
        self._asgi = httpx.ASGITransport(app=app, raise_app_exceptions=self._raise)

    def hang_up(self, request: httpx.Request, enough: Enough) -> httpx.Response:
        """Send `request`, read its answer until `enough`, then drop the connection (RUN-03).

        `handle_request` buffers whole answers, so an answer that streams while a run is
        active (SSE) would never be returned: this drives the app itself instead. Once
        `enough` holds, `receive()` answers `http.disconnect`, which is how an ASGI server
        tells the app its client went away (starlette's StreamingResponse listens for it
        under ASGI spec < 2.4 and cancels the stream); what the app sends later is dropped,
        as uvicorn drops writes to a closed socket. The response holds what was read.
        """
        body = request.read()
        return self._portal_started().call(self._hang_up, request, body, enough)

    async def _hang_up(
        self, request: httpx.Request, body: bytes, enough: Enough
    ) -> httpx.Response:
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": request.method,
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "scheme": request.url.scheme, "path": request.url.path,
            "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query,
            "server": (request.url.host, request.url.port), "client": ("127.0.0.1", 123),
            "root_path": "",
        }
        gone = asyncio.Event()
        asked = False
        status: int | None = None
        headers: list[tuple[bytes, bytes]] = []
        seen = bytearray()

        async def receive() -> dict[str, Any]:
            nonlocal asked
            if not asked:
                asked = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal status, headers
            if gone.is_set():
                return
            if message["type"] == "http.response.start":
                status, headers = message["status"], list(message.get("headers", []))
            elif message["type"] == "http.response.body":
                seen.extend(message.get("body", b""))
                if not message.get("more_body", False) or enough(headers, bytes(seen)):
                    gone.set()

        app = self._asgi.app
        task = asyncio.ensure_future(app(scope, receive, send))
        # With time standing still, what the app will send without it has been sent once the
        # loop is idle: hang up then at the latest, so a stream that says nothing never hangs.
        await until_idle()
        gone.set()
        await until_idle()
        if not task.done():
            task.cancel()  # an app deaf to the disconnect: the harness's loop keeps no orphan
        await asyncio.wait([task])
        failed = None if task.cancelled() else task.exception()
        if failed is not None and self._asgi.raise_app_exceptions:
            raise failed
        await self._idle()
        if status is None and failed is None:
            # What a client over a socket would see: no answer, then its read timeout.
            raise httpx.ReadTimeout("the app began no answer before it went idle",
                                    request=request)
        return httpx.Response(status or 500, headers=headers, content=bytes(seen),
                              request=request)

    def call(self, function: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """Run `function(*args)` in the app's event loop and wait for its result."""
        return self._portal_started().call(function, *args)

    def close(self) -> None:
        if self._portal is not None:
            # Cancel what is still running (a request the watchdog gave up on), or the
            # portal's thread would wait for it forever.
            with suppress(RuntimeError):
                self._portal.call(self._portal.stop, True)
        self._stack.close()
        self._portal = None
