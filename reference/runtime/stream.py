"""A run's events as Server-Sent Events (RUN-03, RUN-16), resumable from `Last-Event-ID`.

Each event is one SSE message: `id: <n>` (the event's id, 1, 2, ... per run), `event: <type>`,
and `data: <the event as canonical JSON>` (the same object the JSON list holds). The stream
sends the events after `Last-Event-ID` (all without it), then waits for new ones while the run
is active; it ends once the run has ended and every event up to `run.ended` was sent. While
waiting it sends a `: keep-alive` comment every `KEEPALIVE_S` seconds of the injected clock,
and looks at the store again then (events written by another process wake nobody here).

Reading the stream changes nothing: a client that drops it cancels nothing (RUN-03); the run
goes on and the client may resume with the last id it saw.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from arck.reference.auth import Principal
from arck.reference.canonical import canonical_text
from arck.reference.clock import Clock, woken_or_timeout
from arck.reference.errors import ValidationFailed
from arck.reference.runtime.changes import CHANGES, Changes
from arck.reference.runtime.runstore import RunStore

if TYPE_CHECKING:
    from arck.reference.runtime.service import Runtime

__all__ = ["KEEPALIVE_S", "MEDIA_TYPE", "EventStream", "last_event_id", "of_run", "sse",
           "wants_stream"]

# What the events route streams for (runtime, principal, run_id, after): `of_run`, or a
# mutant's replacement handed to `create_app(event_stream=...)`.
EventStream = Callable[["Runtime", Principal, str, int], AsyncIterator[bytes]]

KEEPALIVE_S = 15.0
MEDIA_TYPE = "text/event-stream"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def wants_stream(accept: str | None) -> bool:
    """An `Accept` naming text/event-stream (any parameters); JSON otherwise."""
    if not accept:
        return False
    return any(part.split(";")[0].strip().lower() == MEDIA_TYPE for part in accept.split(","))


def last_event_id(header: str | None) -> int:
    """The id to resume after: 0 without the header; 422 unless it is a decimal integer of
    at most 18 digits (an empty header is not one: docs/runs.md, Event stream)."""
    if header is None:
        return 0
    text = header.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise ValidationFailed(
            "Last-Event-ID: an event id of this run (a decimal integer of at most 18 digits) "
            "is expected",
            "Last-Event-ID",
        )
    return int(text)


def message(item: dict[str, Any]) -> bytes:
    """One SSE message; canonical JSON holds no raw newline, so `data` is one line."""
    return (f"id: {item['id']}\nevent: {item['type']}\ndata: {canonical_text(item)}\n\n"
            ).encode()


def of_run(runtime: Runtime, principal: Principal, run_id: str, after: int
           ) -> AsyncIterator[bytes]:
    """The route's stream: `sse` on the runtime's store and clock. The principal (already
    allowed to read the run) is for replacements that act on its behalf."""
    return sse(runtime.runs, run_id, after, runtime.clock)


async def sse(runs: RunStore, run_id: str, after: int, clock: Clock,
              changes: Changes = CHANGES) -> AsyncIterator[bytes]:
    """The stream; `changes` wakes it when the run's events are stored (the process's own
    notifier: `runstore.event` calls it)."""
    with changes.watch(run_id) as changed:
        while True:
            changed.clear()
            ended = _ended(runs, run_id)  # read before the events: run.ended is among them
            for item in runs.events_after(run_id, after):
                after = item["id"]
                yield message(item)
            if ended:
                return
            woke = await _wait(changed, clock)
            if not woke:
                yield b": keep-alive\n\n"


def _ended(runs: RunStore, run_id: str) -> bool:
    rows = runs.store.read("SELECT state FROM runs WHERE id = ?", (run_id,))
    return not rows or rows[0][0] == "ended"


async def _wait(changed: asyncio.Event, clock: Clock) -> bool:
    """True when the run changed; False after KEEPALIVE_S on the injected clock."""
    return await woken_or_timeout(changed, clock, KEEPALIVE_S)
