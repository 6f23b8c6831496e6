"""One model request over the provider's HTTP shape (OpenAI chat completions), sent once.

There is no resend here, ever (RUN-12): a request whose answer is lost or late has an unknown
outcome, which only a reconciliation against the original request may settle. An error answer
(`refused`) was never processed; the worker may send its request again as a new model call
(docs/runs.md, "Model calls"), never this module. The timeout is a race against the injected
clock, so virtual time decides it in tests.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Literal

import httpx

from arck.reference.clock import Clock, instant

__all__ = ["PROVIDER_BASE_URL", "ModelClient", "Outcome", "error_text"]

PROVIDER_BASE_URL = "http://provider/v1"


@dataclass(frozen=True)
class Outcome:
    """`answered`: a JSON body with this status; `timeout` and `lost`: unknown outcome;
    `refused`: the provider answered an error, so the request was never processed;
    `retry_after`: the seconds its `retry-after` header asked for, if any."""

    kind: Literal["answered", "refused", "timeout", "lost"]
    status: int | None = None
    body: dict[str, Any] | None = None
    detail: str = ""
    retry_after: float | None = None


class ModelClient:
    """The provider on `transport` (in-process), or over the network at `base_url`.

    With neither, every call is refused ("no model provider is configured").
    """

    def __init__(
        self,
        transport: httpx.AsyncBaseTransport | None,
        clock: Clock,
        base_url: str | None = None,
    ) -> None:
        self.clock = clock
        self._http = (
            httpx.AsyncClient(transport=transport, base_url=base_url or PROVIDER_BASE_URL,
                              timeout=None)
            if transport is not None or base_url is not None
            else None
        )

    async def lookup(self, idempotency_key: str, timeout_s: float) -> list[dict[str, Any]] | None:
        """What the provider recorded for this Idempotency-Key (docs/provider.md, RUN-12):
        every request that carried it, in order; None when the lookup is unavailable (no
        provider, an error answer, a broken connection, no answer within `timeout_s`)."""
        if self._http is None:
            return None
        call = asyncio.ensure_future(self._http.get(
            "/arck/requests", params={"idempotency_key": idempotency_key}))
        timer = asyncio.ensure_future(self.clock.sleep(timeout_s))
        try:
            with instant(self.clock):  # a lookup takes no test-clock time (docs/runs.md)
                await asyncio.wait({call, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pending in (call, timer):
                if not pending.done():
                    pending.cancel()
            await asyncio.gather(call, timer, return_exceptions=True)
        if call.cancelled() or call.exception() is not None:
            return None
        response = call.result()
        if response.status_code != 200:
            return None
        try:
            data = json.loads(response.content).get("data")
        except (ValueError, AttributeError):
            return None
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            return None
        return data

    async def complete(self, body: bytes, idempotency_key: str, timeout_ms: int) -> Outcome:
        if self._http is None:
            return Outcome("refused", detail="no model provider is configured")
        headers = {"content-type": "application/json", "idempotency-key": idempotency_key}
        call = asyncio.ensure_future(self._http.post("/chat/completions", content=body,
                                                     headers=headers))
        timer = asyncio.ensure_future(self.clock.sleep(timeout_ms / 1000))
        try:
            await asyncio.wait({call, timer}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            # The worker stops (shutdown): the request goes with it, as in a dying process.
            call.cancel()
            timer.cancel()
            await asyncio.gather(call, timer, return_exceptions=True)
            raise
        if not call.done():
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            return Outcome("timeout", detail=f"no answer within {timeout_ms} ms")
        timer.cancel()
        await asyncio.gather(timer, return_exceptions=True)
        try:
            response = call.result()
        except httpx.HTTPError as exc:
            return Outcome("lost", detail=f"{type(exc).__name__}: {exc}"[:300])
        try:
            parsed = json.loads(response.content)
        except ValueError:
            parsed = None
        if response.status_code != 200:
            # An error status is a refusal whatever its body (a gateway's HTML page included).
            error = parsed if isinstance(parsed, dict) else {}
            return Outcome("refused", response.status_code, error, detail=error_text(error),
                           retry_after=self._retry_after(response.headers.get("retry-after")))
        if not isinstance(parsed, dict):
            return Outcome("lost", response.status_code, detail="the answer is not a JSON object")
        return Outcome("answered", response.status_code, parsed)

    def _retry_after(self, value: str | None) -> float | None:
        """`retry-after` as seconds (a number, or an HTTP date counted on the injected clock);
        None when absent or unreadable."""
        if value is None:
            return None
        try:
            seconds = float(value.strip())
        except ValueError:
            try:
                seconds = parsedate_to_datetime(value).timestamp() - self.clock.now()
            except (TypeError, ValueError, IndexError):
                return None
        return max(seconds, 0.0) if math.isfinite(seconds) else None

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()


def error_text(body: dict[str, Any]) -> str:
    """An OpenAI-shaped error's code and message, for the run's events."""
    error = body.get("error")
    if not isinstance(error, dict):
        return ""
    parts = [str(error[k]) for k in ("code", "message") if error.get(k)]
    return ": ".join(parts)[:300]
