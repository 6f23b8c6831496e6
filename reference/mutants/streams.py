"""Mutants of the event stream (RUN-03): one defect each.

Each replaces the events route's stream (`create_app(event_stream=...)`) with one that does one
thing wrong the way a real engine might: tie the run's life to the connection watching it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import suppress

from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.errors import ApiError
from arck.reference.mutants.base import serve
from arck.reference.runtime import stream
from arck.reference.runtime.service import Runtime


async def _cancelling(
    runtime: Runtime, principal: Principal, run_id: str, after: int
) -> AsyncIterator[bytes]:
    """The reference's stream, but a client that goes before the run ended cancels it, as
    an engine does that runs the agent inside the request that watches it (RUN-03)."""
    finished = False
    try:
        async for chunk in stream.of_run(runtime, principal, run_id, after):
            yield chunk
        finished = True
    finally:
        # Cancelled (a disconnect under ASGI < 2.4) or closed unfinished (a failed write).
        if not finished:
            with suppress(ApiError):  # the run is gone or already ended: nothing to cancel
                runtime.cancel_run(principal, run_id, {})


def disconnect_cancels_run() -> FastAPI:
    return serve(event_stream=_cancelling)
