"""An answer as the app sends it, or the exception that breaks the connection instead."""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

__all__ = ["Reply", "ResponseLost"]


class ResponseLost(httpx.RemoteProtocolError):
    """The connection broke before the body: in-process, httpx raises this very error;
    on a socket, httpx raises its own RemoteProtocolError (headers came, then EOF)."""


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    # Raised after the status line and headers went out, so the body never arrives.
    drop: BaseException | None = None
