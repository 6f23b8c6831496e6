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
        self._app = app
        self._stack = ExitStack()
        self._portal: BlockingPortal | None = None

    def _portal_started(self) -> BlockingPortal:
        if self._portal is None:
            self._portal = self._stack.enter_context(start_blocking_portal())
        return self._portal

    async def _send(
        self, scope: dict[str, Any], body: bytes
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """One exchange with the app, driven directly (as httpx's `ASGITransport` does, less
        its request and response objects: this is every in-process request's path)."""
        answered = asyncio.Event()
        status: int | None = None
        headers: list[tuple[bytes, bytes]] = []
        parts: list[bytes] = []
        asked = False

        async def receive() -> dict[str, Any]:
            nonlocal asked
            if asked:
                await answered.wait()
                return {"type": "http.disconnect"}
            asked = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal status, headers
            if message["type"] == "http.response.start":
                status, headers = message["status"], list(message.get("headers", []))
            elif message["type"] == "http.response.body":
                if scope["method"] != "HEAD":
                    parts.append(message.get("body", b""))
                if not message.get("more_body", False):
                    answered.set()

        try:
            await self._app(scope, receive, send)
        except Exception:
            if self._raise:
                raise
            answered.set()
            if status is None:
                status, headers = 500, []  # what a server answers for an app that crashed
        await self._idle()
        return status if status is not None else 500, headers, b"".join(parts)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        status, headers, content = self._portal_started().call(
            self._send, _scope(request), request.read())
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
        self._app = app

    def hang_up(
        self, request: httpx.Request, enough: Enough, during: Callable[[], object] | None = None
    ) -> httpx.Response:
        """Send `request`, read its answer until `enough`, then drop the connection (RUN-03).

        `handle_request` buffers whole answers, so an answer that streams while a run is
        active (SSE) would never be returned: this drives the app itself instead. Once
        `enough` holds, `receive()` answers `http.disconnect`, which is how an ASGI server
        tells the app its client went away (starlette's StreamingResponse listens for it
        under ASGI spec < 2.4 and cancels the stream); what the app sends later is dropped,
        as uvicorn drops writes to a closed socket. With `during`, once the app is idle (what
        it will send without more requests has been sent) `during()` runs on this thread,
        its requests answered by the same loop while the answer stays open; then reading goes
        on until the app is idle again. The response holds what was read.
        """
        portal = self._portal_started()
        listener = _Listener(self._app, request, request.read(), enough)
        portal.call(listener.start)
        try:
            if during is not None:
                during()
        finally:
            response = portal.call(self._stop, listener)
        return response

    async def _stop(self, listener: _Listener) -> httpx.Response:
        try:
            return await listener.stop(self._raise)
        finally:
            await self._idle()

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


def _scope(request: httpx.Request) -> dict[str, Any]:
    """The ASGI scope of `request`, as a server on a socket would give it."""
    url = request.url
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
        "method": request.method,
        "headers": [(k.lower(), v) for k, v in request.headers.raw],
        "scheme": url.scheme, "path": url.path, "raw_path": url.raw_path.split(b"?")[0],
        "query_string": url.query, "server": (url.host, url.port),
        "client": ("127.0.0.1", 123), "root_path": "",
    }


class _Listener:
    """One request driven on the app by hand, as a client that reads its answer as it comes
    and hangs up once `enough` holds (or when told to stop)."""

    def __init__(self, app: Any, request: httpx.Request, body: bytes, enough: Enough) -> None:
        self.app, self.request, self.body, self.enough = app, request, body, enough
        self.scope = _scope(request)
        self.asked = False
        self.status: int | None = None
        self.headers: list[tuple[bytes, bytes]] = []
        self.seen = bytearray()
        self.gone = asyncio.Event()  # bound to the app's loop at its first use there
        self.task: asyncio.Future[None] | None = None

    async def receive(self) -> dict[str, Any]:
        if not self.asked:
            self.asked = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if self.gone.is_set():
            return
        if message["type"] == "http.response.start":
            self.status, self.headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            self.seen.extend(message.get("body", b""))
            if not message.get("more_body", False) or self.enough(self.headers,
                                                                  bytes(self.seen)):
                self.gone.set()

    async def start(self) -> None:
        """Send the request; return once the app is idle (time standing still, what it will
        send without another request has been sent)."""
        self.task = asyncio.ensure_future(self.app(self.scope, self.receive, self.send))
        await until_idle()

    async def stop(self, raise_errors: bool) -> httpx.Response:
        """Hang up once the app is idle at the latest, so a stream that says nothing never
        hangs; the response holds what was read."""
        if self.task is None:
            raise RuntimeError("a listener stopped before it started")
        await until_idle()
        self.gone.set()
        await until_idle()
        if not self.task.done():
            self.task.cancel()  # an app deaf to the disconnect: the harness's loop keeps no orphan
        await asyncio.wait([self.task])
        failed = None if self.task.cancelled() else self.task.exception()
        if failed is not None and raise_errors:
            raise failed
        if self.status is None and failed is None:
            # What a client over a socket would see: no answer, then its read timeout.
            raise httpx.ReadTimeout("the app began no answer before it went idle",
                                    request=self.request)
        return httpx.Response(self.status or 500, headers=self.headers,
                              content=bytes(self.seen), request=self.request)
