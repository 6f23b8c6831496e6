"""A synchronous httpx transport onto an ASGI app, in-process.

httpx's own `ASGITransport` is async-only, and the checks are synchronous (hypothesis drives
them); this runs it on an event loop in a blocking portal, so an in-process target is just an
`httpx.Client` like a URL target.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import ExitStack, suppress
from typing import Any, TypeVar

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal

_T = TypeVar("_T")


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
        if self._after is not None:
            await self._after()
        return response.status_code, response.headers.raw, body

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        forwarded = httpx.Request(
            request.method, request.url, headers=request.headers, content=body
        )
        status, headers, content = self._portal_started().call(self._send, forwarded)
        return httpx.Response(status, headers=headers, content=content, request=request)

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
