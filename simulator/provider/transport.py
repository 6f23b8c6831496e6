"""A synchronous httpx transport onto the provider's app, in-process.

`arck.simulator.asgi.SyncASGITransport` turns an app's exception into a 500, as a server
would; this one lets a broken connection reach the caller as the transport error it is, so a
lost response looks the same to `httpx.Client` as to `httpx.AsyncClient`.
"""

from __future__ import annotations

from typing import Any

from arck.simulator.asgi import SyncASGITransport

__all__ = ["SyncProviderTransport"]


class SyncProviderTransport(SyncASGITransport):
    def __init__(self, app: Any) -> None:
        super().__init__(app, raise_app_exceptions=True)
