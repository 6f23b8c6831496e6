"""Mutants of run events and their stream (RUN-16, PRO-02): one defect each.

The event mutants replace the store of runs the workers and the API read (`workers_class`)
with one whose events are recorded wrong the way a real engine might get them wrong: a type
never written, a member left out or miscounted (ids stay 1, 2, ..., as an engine that never
wrote the event would number them). The stream mutants replace the events route's stream
(`create_app(event_stream=...)`) or read `Last-Event-ID` the careless way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from arck.reference.auth import Principal
from arck.reference.mutants.base import serve
from arck.reference.runtime import stream
from arck.reference.runtime.changes import CHANGES, Changes
from arck.reference.runtime.modelcall import ModelClient
from arck.reference.runtime.runstore import RunStore, SessionRow
from arck.reference.runtime.service import Runtime
from arck.reference.runtime.worker import Workers
from arck.reference.store import Store

Event = dict[str, Any]
Rewrite = Callable[[Event], Event | None]  # None: the event was never recorded


class _RewrittenRuns(RunStore):
    """The events as an engine with the defect would have recorded them, renumbered."""

    def __init__(self, store: Store, rewrite: Rewrite) -> None:
        super().__init__(store)
        self.rewrite = rewrite

    def events(self, run_id: str) -> list[dict[str, Any]]:
        kept = [e for e in (self.rewrite(item) for item in super().events(run_id))
                if e is not None]
        return [{**e, "id": n} for n, e in enumerate(kept, start=1)]

    def events_after(self, run_id: str, after: int) -> list[dict[str, Any]]:
        return [e for e in self.events(run_id) if e["id"] > after]


def _recording(rewrite: Rewrite) -> FastAPI:
    class RewritingWorkers(Workers):
        def __init__(self, store: Store, runs: RunStore, model: ModelClient, *args: Any,
                     **kwargs: Any) -> None:
            super().__init__(store, _RewrittenRuns(store, rewrite), model, *args, **kwargs)

    return serve(workers_class=RewritingWorkers)


def _without(kind: str) -> Rewrite:
    return lambda e: None if e["type"] == kind else e


def _data(kind: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Rewrite:
    return lambda e: {**e, "data": change(dict(e["data"]))} if e["type"] == kind else e


def run_ended_not_recorded() -> FastAPI:
    """A run ends (state and end reason in the snapshot) without its `run.ended` event."""
    return _recording(_without("run.ended"))


def run_queued_not_recorded() -> FastAPI:
    """Queueing a run records no `run.queued`."""
    return _recording(_without("run.queued"))


def reconciled_not_recorded() -> FastAPI:
    """What the provider's lookup said is acted on, never recorded (`model_call.reconciled`)."""
    return _recording(_without("model_call.reconciled"))


def recovered_without_previous_worker() -> FastAPI:
    """`run.recovered` names the new worker only: whose lease lapsed is lost."""
    return _recording(_data("run.recovered",
                            lambda d: {k: v for k, v in d.items() if k != "previous_worker"}))


def recovered_names_itself() -> FastAPI:
    """`run.recovered` names the new worker as the previous one too: whose lease lapsed is
    misreported."""
    return _recording(_data("run.recovered", lambda d: {**d, "previous_worker": d["worker"]}
                            if "worker" in d else d))


def given_up_miscounted() -> FastAPI:
    """`model_call.given_up` counts the retries (3), not the calls made (4)."""
    return _recording(_data("model_call.given_up",
                            lambda d: {**d, "calls": d["calls"] - 1}
                            if isinstance(d.get("calls"), int) else d))


class UnprotectedRuntime(Runtime):
    """`receipt.stored` of a submission or unknown outcome without `protected: true`."""

    def _context_text(self, receipt: Any, budget: int) -> tuple[str, dict[str, Any]]:
        content, figures = super()._context_text(receipt, budget)
        return content, {k: v for k, v in figures.items() if k != "protected"}


def receipt_stored_unprotected() -> FastAPI:
    return serve(runtime_class=UnprotectedRuntime)


# -- the stream ----------------------------------------------------------------------------


def _skipping(runtime: Runtime, principal: Principal, run_id: str, after: int
              ) -> AsyncIterator[bytes]:
    """Resumes one event late: the event right after `Last-Event-ID` is never sent."""
    return stream.of_run(runtime, principal, run_id, after + 1 if after else 0)


def stream_skips_after_resume() -> FastAPI:
    return serve(event_stream=_skipping)


async def _held(runtime: Runtime, principal: Principal, run_id: str, after: int
                ) -> AsyncIterator[bytes]:
    """Sends nothing but keep-alives until the run has ended, then everything at once: a
    client watching an active run sees none of its events."""
    with CHANGES.watch(run_id) as changed:
        while True:
            changed.clear()
            if stream._ended(runtime.runs, run_id):
                break
            if not await stream._wait(changed, runtime.clock):
                yield b": keep-alive\n\n"
    async for chunk in stream.of_run(runtime, principal, run_id, after):
        yield chunk


def _polling(runtime: Runtime, principal: Principal, run_id: str, after: int
             ) -> AsyncIterator[bytes]:
    """Never woken when an event is stored (a notifier nobody calls): the store is read again
    only at each keep-alive tick, 15 s of the injected clock, so every event arrives late."""
    return stream.sse(runtime.runs, run_id, after, runtime.clock, Changes())


def stream_polls_only() -> FastAPI:
    return serve(event_stream=_polling)


def stream_waits_for_end() -> FastAPI:
    return serve(event_stream=_held)


class _IntLastEventId:
    """Reads `Last-Event-ID` with `int()` and nothing else: what `int()` refuses ('abc',
    '1.5', '') and what SQLite cannot hold (2**63 and above) is an unhandled error, 500;
    what it takes ('-1', '+1', ' 7') is used as read."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = scope.get("headers", []) if scope["type"] == "http" else []
        raw = next((v for k, v in headers if k.lower() == b"last-event-id"), None)
        if raw is None or not str(scope.get("path", "")).endswith("/events"):
            await self.app(scope, receive, send)
            return
        try:
            after = int(raw.decode("latin-1"))
            if after >= 2**63:
                raise OverflowError("Python int too large to convert to SQLite INTEGER")
        except (ValueError, OverflowError) as exc:
            error = {"code": "internal_error", "message": f"{type(exc).__name__}: {exc}",
                     "path": ""}
            await JSONResponse({"error": error}, status_code=500)(scope, receive, send)
            return
        kept = [(k, v) for k, v in headers if k.lower() != b"last-event-id"]
        scope = {**scope, "headers": [*kept, (b"last-event-id", str(max(after, 0)).encode())]}
        await self.app(scope, receive, send)


class SummarySettledSilentlyWorkers(Workers):
    """A summary call is settled (charged, its reservation released) with no
    `model_call.finished`: its usage and money appear in no event (RUN-15)."""

    def _finish(self, run_id: str, worker: str, session: SessionRow, call_id: str,
                *args: Any, **kwargs: Any) -> str | None:
        text = super()._finish(run_id, worker, session, call_id, *args, **kwargs)
        if kwargs.get("purpose") != "summary":
            return text
        with self.store.transaction() as db:
            row = db.execute("SELECT n FROM run_events WHERE run_id = ? AND type = "
                             "'model_call.finished' AND json_extract(data, '$.call_id') = ?",
                             (run_id, call_id)).fetchone()
            if row is not None:
                db.execute("DELETE FROM run_events WHERE run_id = ? AND n = ?", (run_id, row[0]))
                db.execute("UPDATE run_events SET n = n - 1 WHERE run_id = ? AND n > ?",
                           (run_id, row[0]))
        return text


def summary_settled_silently() -> FastAPI:
    return serve(workers_class=SummarySettledSilentlyWorkers)


class _SeventeenDigits:
    """Takes at most 17 digits: an id of 18, at the documented bound, is refused 422."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = scope.get("headers", []) if scope["type"] == "http" else []
        raw = next((v for k, v in headers if k.lower() == b"last-event-id"), b"")
        if len(raw.strip()) == 18 and str(scope.get("path", "")).endswith("/events"):
            error = {"code": "validation_failed", "path": "Last-Event-ID",
                     "message": "Last-Event-ID: at most 17 digits"}
            await JSONResponse({"error": error}, status_code=422)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def last_event_id_17_digits() -> FastAPI:
    app = serve()
    app.add_middleware(_SeventeenDigits)
    return app


def last_event_id_500() -> FastAPI:
    app = serve()
    app.add_middleware(_IntLastEventId)
    return app
