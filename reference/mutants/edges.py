"""Mutants of runs at their edges (RUN-06, RUN-11, RUN-16, BIL-01, BIL-02, AUTH-01): each keeps
every ordinary run right and gets one boundary wrong, as the sampled runtime mutants did."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from typing import Any

from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.canonical import canonical_text
from arck.reference.mutants.base import serve
from arck.reference.runtime import chathistory
from arck.reference.runtime.claims import CallRow
from arck.reference.runtime.executor_wire import FINAL_KINDS, Receipt, ReceiptAnswer
from arck.reference.runtime.executors import DEV_EXECUTOR_SECRET, TOKEN_PREFIX, Executors
from arck.reference.runtime.modelcall import ModelClient, Outcome
from arck.reference.runtime.reconcile import (
    LOOKUP_TIMEOUT_S,
    POLL_S,
    RECONCILE_AFTER_S,
    Reconciler,
    Verdict,
    judge,
)
from arck.reference.runtime.runstore import RunStore, SessionRow, append, event
from arck.reference.runtime.service import Runtime
from arck.reference.runtime.wire import Channel, Run
from arck.reference.runtime.worker import _RESERVED, Workers


class EagerBatchRuntime(Runtime):
    """Queues the run again on the first final of its batch, the other calls still open."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        answer = super().take_receipt(db, executor_id, call, receipt, body, at)
        if receipt.kind in FINAL_KINDS and db.execute(
            "UPDATE runs SET state = 'queued' WHERE id = ? AND state = 'waiting_tools'",
            (call.run_id,),
        ).rowcount == 1:
            event(db, call.run_id, "run.queued", at)
        return answer


class _TimeoutAsLost:
    """Reports a call past its timeout as a lost answer: the run ends for the wrong cause."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, body: bytes, idempotency_key: str, timeout_ms: int) -> Outcome:
        outcome = await self.inner.complete(body, idempotency_key, timeout_ms)
        return dataclasses.replace(outcome, kind="lost") if outcome.kind == "timeout" else outcome


class TimeoutAsLostWorkers(Workers):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model = _TimeoutAsLost(self.model)  # type: ignore[assignment]


class OneHighRuntime(Runtime):
    """Admits a run only when the wallet covers one micro-unit more than the reservation."""

    def admission_reservation(self, channel: Channel) -> int:
        return super().admission_reservation(channel) + 1


def batch_queued_early() -> FastAPI:
    return serve(runtime_class=EagerBatchRuntime)


def timeout_as_lost() -> FastAPI:
    return serve(workers_class=TimeoutAsLostWorkers)


def admission_one_high() -> FastAPI:
    return serve(runtime_class=OneHighRuntime)


class _LooseTokenExecutors(Executors):
    """An executor token is taken for the executor it names whatever its signature says."""

    def principal(self, token: str) -> Principal | None:
        executor_id, _, _ = token.removeprefix(TOKEN_PREFIX).rpartition("-")
        if not token.startswith(TOKEN_PREFIX) or not executor_id:
            return None
        return super().principal(self.token(executor_id))


class LooseTokenRuntime(Runtime):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.executors = _LooseTokenExecutors(
            self.store, self.clock, kwargs.get("executor_secret", DEV_EXECUTOR_SECRET)
        )


def executor_token_unverified() -> FastAPI:
    return serve(runtime_class=LooseTokenRuntime)


class CrashOnceWorkers(Workers):
    """The first step of every run raises (a bug); the worker swallows it, the lease lapses
    and a takeover finishes the run: every figure right, a lease late."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._crashed: set[str] = set()

    async def step(self, run_id: str, worker: str) -> None:
        if run_id not in self._crashed:
            self._crashed.add(run_id)
            raise RuntimeError("arck mutant: a bug in the worker's step")
        await super().step(run_id, worker)


def worker_crash_hidden() -> FastAPI:
    return serve(workers_class=CrashOnceWorkers)


def _reconciling(reconciler: type[Reconciler]) -> type[Workers]:
    """Workers whose reconciler (takeovers, cost-pending lookups) is `reconciler`."""

    class ReconcilingWorkers(Workers):
        def start(self) -> None:
            if self.reconciler is None:
                self.reconciler = reconciler(self)
            super().start()

    return ReconcilingWorkers


class _SummaryTakeoverLoops(Reconciler):
    """A summary call found `sent` at a takeover is left as it is: the run stays running, its
    lease lapses, and the next takeover finds the same call, for ever."""

    def _end_pending(self, run_id: str, worker: str, call_id: str, detail: str) -> None:
        return None


def summary_takeover_loops() -> FastAPI:
    return serve(workers_class=_reconciling(_SummaryTakeoverLoops))


class RawUsageWorkers(Workers):
    """Charges whatever integers the provider reports, negative counts included."""

    def usage_figures(self, usage: dict[str, Any]) -> tuple[int, int, int]:
        def raw(value: Any) -> int:
            return value if isinstance(value, int) else 0

        details = usage.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens") if isinstance(details, dict) else 0
        return raw(usage.get("prompt_tokens")), raw(usage.get("completion_tokens")), raw(cached)


class UntrustedSamplesWorkers(Workers):
    """Takes a prompt_tokens that is no count (negative, a string...) as 0, and as a sample."""

    def trusted_prompt(self, usage: dict[str, Any]) -> int | None:
        return self.usage_figures(usage)[0]


def negative_usage_credits() -> FastAPI:
    return serve(workers_class=RawUsageWorkers)


def untrusted_samples() -> FastAPI:
    return serve(workers_class=UntrustedSamplesWorkers)


class RequestEndsDespiteInputWorkers(Workers):
    """A request for input or approval ends the run even when input arrived while the call
    was in flight: the input stays pending, never sent, the run `input_required`."""

    def _apply(self, db: Any, run_id: str, worker: str, session: SessionRow, call_id: str,
               body: dict[str, Any], at: float) -> None:
        message = ((body.get("choices") or [{}])[0].get("message")) or {}
        calls = message.get("tool_calls") or []
        reserved = [c for c in calls if c.get("function", {}).get("name") in _RESERVED]
        if not reserved:
            super()._apply(db, run_id, worker, session, call_id, body, at)
            return
        content = message.get("content")
        append(db, session.session_id, "execution",
               {"role": "assistant", "content": content, "tool_calls": calls})
        name = reserved[0]["function"]["name"]
        append(db, session.session_id, "formal", {
            "type": name.removeprefix("arck_"),
            "arguments": reserved[0]["function"].get("arguments", "")})
        db.execute("UPDATE sessions SET pending_reserved = ? WHERE id = ?",
                   (reserved[0]["id"], session.session_id))
        RunStore.end(db, run_id, _RESERVED[name], at, worker=worker)


def request_ends_despite_input() -> FastAPI:
    return serve(workers_class=RequestEndsDespiteInputWorkers)


def _history_trusting(db: sqlite3.Connection, session_id: str, arguments: str) -> dict[str, Any]:
    """The chat-history tool taking its arguments on trust: `limit` used as sent."""
    found: Any = json.loads(arguments) if arguments.strip() else {}
    limit = found.get("limit", chathistory.DEFAULT_LIMIT)
    answer = chathistory.answer(db, session_id, "{}")
    return {"messages": answer["messages"][-limit:]}


def _history_echoing(db: sqlite3.Connection, session_id: str, arguments: str) -> dict[str, Any]:
    """Refuses bad arguments as the profile says, but repeats them in its message."""
    answer = chathistory.answer(db, session_id, arguments)
    if "error" in answer:
        answer["message"] = f"{answer['message']}; you sent {arguments}"
    return answer


class HistoryTrustingWorkers(Workers):
    chat_history = staticmethod(_history_trusting)


class HistoryEchoingWorkers(Workers):
    chat_history = staticmethod(_history_echoing)


def history_arguments_trusted() -> FastAPI:
    return serve(workers_class=HistoryTrustingWorkers)


def history_error_echoes() -> FastAPI:
    return serve(workers_class=HistoryEchoingWorkers)


class _LateTimeout:
    """Waits 10 s past the channel's timeout before it gives a call up."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, body: bytes, idempotency_key: str, timeout_ms: int) -> Outcome:
        return await self.inner.complete(body, idempotency_key, timeout_ms + 10_000)


class LateTimeoutWorkers(Workers):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model = _LateTimeout(self.model)  # type: ignore[assignment]


def model_timeout_late() -> FastAPI:
    return serve(workers_class=LateTimeoutWorkers)


class _NeverReconciles(Reconciler):
    """Looks a cost-pending call up but never settles it: its reservation is held for good."""

    def _settle(self, call_id: str, verdict: Any) -> None:
        return None


def cost_pending_never_settled() -> FastAPI:
    return serve(workers_class=_reconciling(_NeverReconciles))


def _errors_unseen(records: list[dict[str, Any]] | None) -> Verdict:
    """A lookup that ignores error answers: a call the provider refused is `not_processed`."""
    kept = None if records is None else [
        r for r in records if r.get("outcome") != "answered" or r.get("status_code") == 200]
    return judge(kept)


class _RefusalsUnseen(Reconciler):
    judge = staticmethod(_errors_unseen)


def lookup_refusals_unseen() -> FastAPI:
    return serve(workers_class=_reconciling(_RefusalsUnseen))


class _ReleaseChargedOne(Reconciler):
    """A released call's `model_call.reconciled` says `charge` 1 (nothing was collected)."""

    def _settle(self, call_id: str, verdict: Any) -> None:
        super()._settle(call_id, verdict)
        with self.store.transaction() as db:
            db.execute("UPDATE run_events SET data = json_set(data, '$.charge', 1) WHERE "
                       "type = 'model_call.reconciled' AND json_extract(data, '$.call_id') = ? "
                       "AND json_extract(data, '$.verdict') != 'processed'", (call_id,))


def released_call_charged() -> FastAPI:
    return serve(workers_class=_reconciling(_ReleaseChargedOne))


class CollectedUnreportedWorkers(Workers):
    """The wallet pays a call's charge, but `model_call.finished` says nothing was collected
    and the whole reservation released: the events agree with themselves, not the wallet."""

    def _finish(
        self, run_id: str, worker: str, session: SessionRow, call_id: str, reservation: int,
        raw: int, set_key: str, prices: Any, outcome: Outcome,
        purpose: str = "main", repairable: bool = False,
    ) -> str | None:
        text = super()._finish(run_id, worker, session, call_id, reservation, raw, set_key,
                               prices, outcome, purpose, repairable)
        with self.store.transaction() as db:
            db.execute("UPDATE run_events SET data = json_set(data, '$.collected', 0, "
                       "'$.released', json_extract(data, '$.collected') + "
                       "json_extract(data, '$.released')) WHERE type = 'model_call.finished' "
                       "AND json_extract(data, '$.call_id') = ? AND "
                       "json_extract(data, '$.collected') IS NOT NULL", (call_id,))
        return text


def collected_unreported() -> FastAPI:
    return serve(workers_class=CollectedUnreportedWorkers)


class DetachSaysAcceptedRuntime(Runtime):
    """Every `tool_call.detached` says `accepted: true`, a detach before acceptance too."""

    def detach(self, principal: Principal, call_id: str, data: object) -> Any:
        answer = super().detach(principal, call_id, data)
        with self.store.transaction() as db:
            db.execute("UPDATE run_events SET data = json_set(data, '$.accepted', json('true')) "
                       "WHERE type = 'tool_call.detached' AND "
                       "json_extract(data, '$.call_id') = ?", (call_id,))
        return answer


def detach_says_accepted() -> FastAPI:
    return serve(runtime_class=DetachSaysAcceptedRuntime)


class _SettledLookedUpAgain(Reconciler):
    """A settled call stays scheduled: the money moves once (a second settlement finds the call
    no longer pending), but the provider is asked about it again at every step of the
    back-off, for an hour."""

    def _settle(self, call_id: str, verdict: Any) -> None:
        rows = self.store.read(
            "SELECT next_at, attempts FROM reconciliations WHERE call_id = ?", (call_id,))
        super()._settle(call_id, verdict)
        if rows:
            with self.store.transaction() as db:
                db.execute("INSERT OR IGNORE INTO reconciliations (call_id, next_at, attempts) "
                           "VALUES (?, ?, ?)", (call_id, *rows[0]))

    async def reconcile_due(self) -> bool:
        at = self.clock.now()
        rows = self.store.read(
            "SELECT reconciliations.call_id FROM reconciliations JOIN model_calls ON "
            "model_calls.id = reconciliations.call_id WHERE next_at <= ? AND "
            "model_calls.state NOT IN ('cost_pending', 'sent')", (at,))
        if not rows:
            return await super().reconcile_due()
        with self.store.transaction() as db:
            db.execute("UPDATE reconciliations SET next_at = ?, attempts = attempts + 1 "
                       "WHERE call_id = ?", (at + 2 * RECONCILE_AFTER_S, rows[0][0]))
        await self.workers.model.lookup(rows[0][0], LOOKUP_TIMEOUT_S)  # answer unused
        return True


def settled_call_looked_up_again() -> FastAPI:
    return serve(workers_class=_reconciling(_SettledLookedUpAgain))


class _GrantMisnamed(Runtime):
    """The grant names the call's arguments where its tool's name belongs."""

    def claim(self, principal: Principal, call_id: str, data: object) -> Any:
        claimed = super().claim(principal, call_id, data)
        grant = claimed.grant
        return claimed.model_copy(update={"grant": grant.model_copy(
            update={"tool_name": canonical_text(grant.arguments)})})


def grant_misnamed() -> FastAPI:
    return serve(runtime_class=_GrantMisnamed)


class _OnlineAtTheEdge(Runtime):
    """An executor is still online at the very instant of its `online_until` (the window
    is closed at its end, not open)."""

    def claim(self, principal: Principal, call_id: str, data: object) -> Any:
        if principal.executor_id is not None:
            with self.store.transaction() as db:
                db.execute("UPDATE executors SET online_until = online_until + 0.001 "
                           "WHERE id = ? AND online_until = ?",
                           (principal.executor_id, self.clock.now()))
        return super().claim(principal, call_id, data)


def online_at_the_edge() -> FastAPI:
    return serve(runtime_class=_OnlineAtTheEdge)


def openapi_misdocuments_403() -> FastAPI:
    """The served document lists 404 where the executor's candidate list answers 403."""
    app = serve()
    generate = app.openapi

    def misdocumented() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            responses = schema["paths"]["/v1/executor/candidates"]["get"]["responses"]
            if "403" in responses:
                responses["404"] = responses.pop("403")
        assert app.openapi_schema is not None
        return app.openapi_schema

    app.openapi = misdocumented  # type: ignore[method-assign]
    return app


class _WalletAnsweredApart(Runtime):
    """A new wallet is answered as built for the answer, not as stored: reserved -1."""

    def create_wallet(self, principal: Principal, data: object) -> Any:
        made = super().create_wallet(principal, data)
        return made.model_copy(update={"reserved": -1})


def wallet_answered_apart() -> FastAPI:
    return serve(runtime_class=_WalletAnsweredApart)


class ForgetfulTakeoverWorkers(Workers):
    """A takeover does not find the retry schedule the dead worker stored: the refused call's
    retries start again from the first."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._taking_over: set[str] = set()

    async def _hold(self, claim: Any, name: str) -> None:
        if claim.takeover:
            self._taking_over.add(claim.run_id)
        try:
            await super()._hold(claim, name)
        finally:
            self._taking_over.discard(claim.run_id)

    def scheduled_retry(self, run_id: str, worker: str) -> Any:
        return None if run_id in self._taking_over else super().scheduled_retry(run_id, worker)


def takeover_forgets_retries() -> FastAPI:
    return serve(workers_class=ForgetfulTakeoverWorkers)


class _QuietRequeueRuntime(Runtime):
    """The run is queued again when its batch is final, but no `run.queued` is recorded."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        answer = super().take_receipt(db, executor_id, call, receipt, body, at)
        db.execute("DELETE FROM run_events WHERE run_id = ? AND type = 'run.queued' AND n = "
                   "(SELECT MAX(n) FROM run_events WHERE run_id = ?)", (call.run_id, call.run_id))
        return answer


def batch_requeue_unrecorded() -> FastAPI:
    return serve(runtime_class=_QuietRequeueRuntime)


class _TakeoverStopsAPollShort(Reconciler):
    """A takeover looks the in-flight call up every second while a whole poll still fits
    before the channel's timeout, then gives up: the last lookup falls short of the deadline
    (never on it), so a call processed in the timeout's last moments is abandoned."""

    async def await_verdict(self, call_id: str, deadline: float) -> Verdict:
        while True:
            verdict = self.judge(await self.workers.model.lookup(call_id, LOOKUP_TIMEOUT_S))
            if verdict.kind != "in_progress" or self.clock.now() + POLL_S >= deadline:
                return verdict
            await self.clock.sleep(POLL_S)


def takeover_stops_short() -> FastAPI:
    return serve(workers_class=_reconciling(_TakeoverStopsAPollShort))


class AdmissionLeftQueuedRuntime(Runtime):
    """A run refused at admission is answered ended but stored still queued (its end never
    written): a worker then takes it, and it ends again at its first reservation."""

    def create_run(self, principal: Principal, session_id: str, data: object) -> Run:
        run = super().create_run(principal, session_id, data)
        if run.end_reason == "insufficient_balance":
            with self.store.transaction() as db:
                db.execute("UPDATE runs SET state = 'queued', end_reason = NULL WHERE id = ?",
                           (run.run_id,))
                db.execute("DELETE FROM run_events WHERE run_id = ? AND type = 'run.ended'",
                           (run.run_id,))
            self.workers.notify()
        return run


def admission_left_queued() -> FastAPI:
    return serve(runtime_class=AdmissionLeftQueuedRuntime)
