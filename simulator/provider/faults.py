"""The error answers of a step's faults, and respx-style side effects resolved to an outcome."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from arck.simulator.provider.script import (
    ContextLengthExceeded,
    RateLimited,
    ScriptError,
    ServerError,
)
from arck.simulator.provider.wire import ChatRequest, WireError

__all__ = ["error_for", "resolve_side_effect"]

_SERVER_ERRORS = {
    500: "The server had an error while processing your request. Sorry about that!",
    502: "Bad gateway.",
    503: "The engine is currently overloaded, please try again later.",
}


def error_for(
    faults: Mapping[str, Any], request: ChatRequest, true_prompt: int, window: int | None
) -> WireError | None:
    """The error a step's fault, or the model's context `window`, answers with, if any."""
    limited = faults.get("rate_limit")
    if isinstance(limited, RateLimited):
        wait = limited.retry_after
        return WireError(
            429,
            f"Rate limit reached for {request.model}: please try again later.",
            kind="requests", code="rate_limit_exceeded",
            headers={} if wait is None else {"retry-after": f"{wait:g}"},
        )
    failed = faults.get("server_error")
    if isinstance(failed, ServerError):
        return WireError(failed.status, _SERVER_ERRORS[failed.status], kind="server_error")
    overflows = window is not None and true_prompt + (request.max_tokens or 0) > window
    if isinstance(faults.get("context_length"), ContextLengthExceeded) or overflows:
        limit = window if window is not None else true_prompt - 1
        return WireError(
            400,
            f"This model's maximum context length is {limit} tokens. However, your messages "
            f"resulted in {true_prompt} tokens. Please reduce the length of the messages.",
            param="messages", code="context_length_exceeded",
        )
    return None


def resolve_side_effect(
    effect: Any, raw: bytes, headers: Sequence[tuple[str, str]]
) -> httpx.Response | BaseException | None:
    """respx's vocabulary: an exception (class or instance) or an httpx.Response stands as
    is; a callable(httpx.Request) returns either, or None (answer the step as usual)."""
    request = httpx.Request(
        "POST", "http://provider/v1/chat/completions", headers=list(headers), content=raw
    )
    if isinstance(effect, type):
        # As respx does: an httpx request error class gets a message and the request.
        is_request_error = issubclass(effect, httpx.RequestError)
        effect = effect("Mock Error", request=request) if is_request_error else effect()
    elif callable(effect):
        try:
            effect = effect(request)
        except Exception as exc:
            effect = exc
    if effect is None or isinstance(effect, httpx.Response | BaseException):
        return effect
    return ScriptError(f"a side_effect returned {effect!r}: expected a response, an "
                       "exception or None")
