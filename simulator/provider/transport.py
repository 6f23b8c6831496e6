"""A synchronous httpx transport onto the provider's app, in-process.

Unlike `arck.simulator.asgi.SyncASGITransport`, which turns an app's exception into a 500
as a server would, this lets a broken connection reach the caller as the transport error
it is, so a lost response looks the same to `httpx.Client` as to `httpx.AsyncClient`.
"""

from __future__ import annotations

from contextlib import ExitStack, suppress
from typing import Any

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal

__all__ = ["SyncProviderTransport"]


class SyncProviderTransport(httpx.BaseTransport):
    def __init__(self, app: Any) -> None:
        self._asgi = httpx.ASGITransport(app=app)
        self._stack = ExitStack()
        self._portal: BlockingPortal | None = None

    async def _send(self, request: httpx.Request) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        response = await self._asgi.handle_async_request(request)
        body = await response.aread()
        return response.status_code, response.headers.raw, body

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self._portal is None:
            self._portal = self._stack.enter_context(start_blocking_portal())
        content = request.read()
        forwarded = httpx.Request(request.method, request.url, headers=request.headers,
                                  content=content)
        status, headers, body = self._portal.call(self._send, forwarded)
        return httpx.Response(status, headers=headers, content=body, request=request)

    def close(self) -> None:
        if self._portal is not None:
            # Cancel what still runs (a call the caller gave up on), or closing would wait.
            with suppress(RuntimeError):
                self._portal.call(self._portal.stop, True)
        self._stack.close()
        self._portal = None
