"""Mutants of runs, billing and context (RUN, BIL, CTX, BUD-15, DEF-05): one defect each.

Each replaces the runtime's `Workers` or `Runtime` seam with a subclass that does one thing
wrong the way a real engine might: a resend, a rewritten prefix, a sample that is not a real
count, a reservation that is never given back.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from fractions import Fraction
from typing import Any

from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.mutants.base import serve
from arck.reference.runtime import billing, compaction
from arck.reference.runtime.claims import CallRow
from arck.reference.runtime.compactor import Compactor, Target
from arck.reference.runtime.executor_wire import Receipt, ReceiptAnswer
from arck.reference.runtime.modelcall import ModelClient, Outcome
from arck.reference.runtime.runstore import RunStore, SessionRow
from arck.reference.runtime.service import Runtime
from arck.reference.runtime.wire import Channel, Run
from arck.reference.runtime.worker import Workers, _overflow


class _ResendingClient:
    """Sends a request again when its answer was lost or late (RUN-12 forbids it)."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, body: bytes, idempotency_key: str, timeout_ms: int) -> Outcome:
        outcome = await self.inner.complete(body, idempotency_key, timeout_ms)
        if outcome.kind in ("lost", "timeout"):
            outcome = await self.inner.complete(body, idempotency_key + "-again", timeout_ms)
        return outcome


class ResendAfterLostWorkers(Workers):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model = _ResendingClient(self.model)  # type: ignore[assignment]


class _OverflowResender:
    """Sends a request the provider refused as too long (400 context_length_exceeded) again,
    unchanged, a second after: `limit` times at most (None: for as long as it is refused)."""

    def __init__(self, inner: ModelClient, clock: Any, limit: int | None) -> None:
        self.inner = inner
        self.clock = clock
        self.limit = limit

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, body: bytes, idempotency_key: str, timeout_ms: int) -> Outcome:
        outcome = await self.inner.complete(body, idempotency_key, timeout_ms)
        sent = 0
        while _overflow(outcome) and (self.limit is None or sent < self.limit):
            sent += 1
            await self.clock.sleep(1.0)
            outcome = await self.inner.complete(body, f"{idempotency_key}-again-{sent}",
                                                timeout_ms)
        return outcome


class OverflowLoopWorkers(Workers):
    """Resends a request refused as too long, unchanged, for ever (RUN-11: it loops)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model = _OverflowResender(self.model, self.clock, None)  # type: ignore[assignment]


class OverflowUnrepairedWorkers(Workers):
    """Resends a request refused as too long once, unchanged, before any repair (CTX-05,
    profile: the overflow is repaired by compaction before the request goes again)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model = _OverflowResender(self.model, self.clock, 1)  # type: ignore[assignment]


class _Rebody(Workers):
    """A worker that changes the request body it sends (`rebody`)."""

    def _body(self, session: SessionRow, model: str, max_tokens: int) -> bytes:
        body = json.loads(super()._body(session, model, max_tokens))
        return json.dumps(self.rebody(session, body), ensure_ascii=False).encode()

    def rebody(self, session: SessionRow, body: dict[str, Any]) -> dict[str, Any]:
        return body


class FixedOutputWorkers(_Rebody):
    """Asks for a fixed 4,096 output tokens, whatever the channel verified (RUN-05)."""

    def rebody(self, session: SessionRow, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "max_completion_tokens": 4096}


class StampedPromptWorkers(_Rebody):
    """Writes the number of messages into the system prompt of every request, so each
    request rewrites its first message (RUN-08: the prefix changes without compaction)."""

    def rebody(self, session: SessionRow, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        first = dict(messages[0])
        first["content"] = f"{first.get('content')} (turn {len(messages)})"
        return {**body, "messages": [first, *messages[1:]]}


class NewestVersionWorkers(_Rebody):
    """Sends the system prompt of the agent's newest version, not the session's (DEF-04/05)."""

    def rebody(self, session: SessionRow, body: dict[str, Any]) -> dict[str, Any]:
        rows = self.store.read(
            "SELECT system_prompt FROM agent_versions WHERE tenant = ? AND agent_id = ? "
            "ORDER BY seq DESC LIMIT 1", (session.tenant, session.agent_id))
        messages = body["messages"]
        if rows and messages and messages[0].get("role") == "system":
            messages = [{**messages[0], "content": rows[0][0]}, *messages[1:]]
        return {**body, "messages": messages}


class RecutWorkers(_Rebody):
    """Cuts every stored tool result again, to half its length, on each later request
    (BUD-15: a projection is made once and reused as stored)."""

    def rebody(self, session: SessionRow, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        # Every tool result is cut again once the request no longer ends with it.
        recut = [
            {**m, "content": json.dumps({"recut": str(m.get("content"))[:64]})}
            if m.get("role") == "tool" and i < len(messages) - 1 else m
            for i, m in enumerate(messages)
        ]
        return {**body, "messages": recut}


class _AfterSettle(Workers):
    """A worker that adjusts the store after each settled call (`adjust`)."""

    def _finish(self, *args: Any, **kwargs: Any) -> str | None:
        result = super()._finish(*args, **kwargs)
        session: SessionRow = args[2]
        call_id: str = args[3]
        with self.store.transaction() as db:
            self.adjust(db, session, call_id)
        return result

    def adjust(self, db: Any, session: SessionRow, call_id: str) -> None:
        return None


class ModelErrorWorkers(_AfterSettle):
    """Ends a run whose model gave no usable answer with `model_error`, a reason RUN-16 does
    not have (the reference's own provisional name, once)."""

    def adjust(self, db: Any, session: SessionRow, call_id: str) -> None:
        db.execute("UPDATE runs SET end_reason = 'model_error' WHERE end_reason = "
                   "'model_timeout' AND id = (SELECT run_id FROM model_calls WHERE id = ?)",
                   (call_id,))


class KeptReservationWorkers(_AfterSettle):
    """Never gives back the part of a reservation the call did not use (BIL-01, BIL-04)."""

    def adjust(self, db: Any, session: SessionRow, call_id: str) -> None:
        row = db.execute("SELECT reservation, charge, state FROM model_calls WHERE id = ?",
                         (call_id,)).fetchone()
        if row is None or row[2] != "settled":
            return
        kept = row[0] - (row[1] or 0)
        db.execute("UPDATE wallets SET reserved = MIN(balance, reserved + ?) WHERE id = ?",
                   (kept, session.wallet_id))


class CacheAtInputPriceWorkers(_AfterSettle):
    """Bills cached prompt tokens at the full input price (BIL-04: usage × each price)."""

    def adjust(self, db: Any, session: SessionRow, call_id: str) -> None:
        row = db.execute("SELECT usage FROM model_calls WHERE id = ? AND state = 'settled'",
                         (call_id,)).fetchone()
        if row is None or row[0] is None:
            return
        usage = json.loads(row[0])
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        channel = self.store.channel(session.tenant, session.channel_id)
        if channel is None or not cached:
            return
        extra = -(-cached * (channel.prices.input - channel.prices.cached_input) // 1_000_000)
        db.execute("UPDATE wallets SET balance = balance - ?, charged = charged + ? "
                   "WHERE id = ? AND balance - reserved >= ?",
                   (extra, extra, session.wallet_id, extra))


class CalibratedSampleWorkers(_AfterSettle):
    """Stores the call's calibrated estimate as the sample's real count (CTX-09)."""

    def adjust(self, db: Any, session: SessionRow, call_id: str) -> None:
        for (data,) in db.execute("SELECT data FROM run_events WHERE type = "
                                  "'model_call.started'").fetchall():
            figures = json.loads(data)
            if figures.get("call_id") == call_id and "calibrated_estimate" in figures:
                db.execute("UPDATE calibration_samples SET real = ? WHERE model_call_id = ?",
                           (int(figures["calibrated_estimate"]), call_id))


class _SharedSamples(RunStore):
    """One sample set for every channel and model of a tenant (CTX-10)."""

    def samples(self, tenant: str, set_key: str, limit: int) -> list[tuple[int, int]]:
        rows = self.store.read(
            "SELECT raw, real FROM calibration_samples WHERE tenant = ? ORDER BY seq DESC "
            "LIMIT ?", (tenant, limit))
        return [(int(a), int(b)) for a, b in reversed(rows)]


class _SummarySamples(RunStore):
    """Counts summary calls' usage as samples too (CTX-11)."""

    def samples(self, tenant: str, set_key: str, limit: int) -> list[tuple[int, int]]:
        rows = self.store.read(
            "SELECT seq, raw, real FROM calibration_samples WHERE tenant = ? AND set_key = ?",
            (tenant, set_key))
        summaries = self.store.read(
            "SELECT model_calls.seq, model_calls.raw, model_calls.usage FROM model_calls "
            "JOIN runs ON runs.id = model_calls.run_id WHERE runs.tenant = ? AND "
            "model_calls.purpose = 'summary' AND model_calls.usage IS NOT NULL", (tenant,))
        found = [(int(s), int(r), int(real)) for s, r, real in rows] + [
            (int(s), int(r), int(json.loads(u).get("prompt_tokens", 0)))
            for s, r, u in summaries]
        return [(raw, real) for _, raw, real in sorted(found)[-limit:]]


class _TenantBlindRuns(RunStore):
    """Finds sessions and runs by id alone, in whichever tenant holds them (AUTH-03)."""

    def session(self, tenant: str, session_id: str) -> SessionRow | None:
        rows = self.store.read("SELECT tenant FROM sessions WHERE id = ?", (session_id,))
        return super().session(rows[0][0], session_id) if rows else None

    def run(self, tenant: str, run_id: str) -> tuple[str, str, str | None] | None:
        rows = self.store.read("SELECT tenant FROM runs WHERE id = ?", (run_id,))
        return super().run(rows[0][0], run_id) if rows else None


class HalfBudgetRuntime(Runtime):
    """Runs project tool results at half the tool's budget; dry-runs still use all of it
    (DRY-03: the preview is what a run stores)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        call = dataclasses.replace(call, budget=max(call.budget // 2, 1))
        return super().take_receipt(db, executor_id, call, receipt, body, at)


def _with_runs(store_class: type[RunStore]) -> type[Workers]:
    class SwappedStoreWorkers(Workers):
        def __init__(self, store: Any, runs: RunStore, *args: Any, **kwargs: Any) -> None:
            super().__init__(store, store_class(store), *args, **kwargs)

    return SwappedStoreWorkers


class CancelsToolsRuntime(Runtime):
    """Cancelling a run withdraws its tool calls not yet final too, accepted ones included
    (RUN-13: a run cancel cancels no business task)."""

    def cancel_run(self, principal: Principal, run_id: str, data: object) -> Run:
        answer = super().cancel_run(principal, run_id, data)
        with self.store.transaction() as db:
            db.execute("DELETE FROM tool_calls WHERE run_id = ? AND state IN "
                       "('dispatchable', 'claimed', 'accepted')", (run_id,))
        return answer


def resend_after_lost() -> FastAPI:
    return serve(workers_class=ResendAfterLostWorkers)


def fixed_output() -> FastAPI:
    return serve(workers_class=FixedOutputWorkers)


def stamped_prompt() -> FastAPI:
    return serve(workers_class=StampedPromptWorkers)


def newest_version() -> FastAPI:
    return serve(workers_class=NewestVersionWorkers)


def recut_results() -> FastAPI:
    return serve(workers_class=RecutWorkers)


def kept_reservation() -> FastAPI:
    return serve(workers_class=KeptReservationWorkers)


def cache_at_input_price() -> FastAPI:
    return serve(workers_class=CacheAtInputPriceWorkers)


def calibrated_sample() -> FastAPI:
    return serve(workers_class=CalibratedSampleWorkers)


def shared_samples() -> FastAPI:
    return serve(workers_class=_with_runs(_SharedSamples))


def summary_samples() -> FastAPI:
    return serve(workers_class=_with_runs(_SummarySamples))


def tenant_blind_runs() -> FastAPI:
    return serve(workers_class=_with_runs(_TenantBlindRuns))


def half_budget_in_runs() -> FastAPI:
    return serve(runtime_class=HalfBudgetRuntime)


def never_compacts() -> FastAPI:
    return serve(workers_class=_compacting(_NeverCompacts))


def model_error() -> FastAPI:
    return serve(workers_class=ModelErrorWorkers)


def overflow_loop() -> FastAPI:
    return serve(workers_class=OverflowLoopWorkers)


def overflow_unrepaired() -> FastAPI:
    return serve(workers_class=OverflowUnrepairedWorkers)


def cancels_tools() -> FastAPI:
    return serve(runtime_class=CancelsToolsRuntime)


class StepQuotaWorkers(Workers):
    """Cancels a run once it has made 16 model calls: a step quota (RUN-04 allows none)."""

    async def step(self, run_id: str, worker: str) -> None:
        calls = self.store.read("SELECT COUNT(*) FROM model_calls WHERE run_id = ?", (run_id,))
        if calls[0][0] >= 16:
            with self.store.transaction() as db:
                RunStore.end(db, run_id, "cancelled", self.clock.now(), worker=worker)
            return
        await super().step(run_id, worker)


class FreeAdmissionRuntime(Runtime):
    """Admits every run whatever the wallet holds; only the worker finds out (RUN-01)."""

    def admission_reservation(self, channel: Channel) -> int:
        return 0


class EstimateReservationWorkers(Workers):
    """Reserves for a 1,000-token prompt estimate, not the channel's capacity (BIL-01)."""

    @staticmethod
    def target_of(channel: Channel) -> Target:
        found = Target.of(channel)
        prices = found.prices
        guess = -(-(1_000 * prices.input + channel.output_capacity * prices.output)
                  // 1_000_000)
        return dataclasses.replace(found, reservation=guess)


class ToolsUncountedWorkers(Workers):
    """The raw estimate leaves the tool definitions out of the request (CTX-13)."""

    @staticmethod
    def raw_of(session: SessionRow) -> int:
        return -(-session.exec_bytes // 4) + 3 * session.exec_count


class NoMarginWorkers(Workers):
    """The effective budget without the 2,000-token safety margin (CTX-01)."""

    @staticmethod
    def budget_of(window: int, input_capacity: int, total: int, output: int) -> int:
        return min(window, input_capacity, total - output)


class _NeverCompacts(Compactor):
    """Never compacts and never gives up: a request over the budget is sent (CTX-15)."""

    threshold = Fraction(1_000)


class _Unspaced(Compactor):
    spacing = 0


class _SpacedByFive(Compactor):
    spacing = 5


class _NoBypass(Compactor):
    bypass = Fraction(1_000)


class _CharacterThreshold(Compactor):
    """Compacts when the history holds 12,000 characters, whatever the tokens (CTX-03)."""

    async def prepare(self, run_id: str, worker: str, *args: Any, **kwargs: Any) -> Any:
        session = self.workers.runs.run_session(run_id)
        chars = sum(len(t) for t in self.workers.runs.history(session.session_id, "execution"))
        self.threshold = Fraction(0) if chars >= 12_000 else Fraction(1_000)
        return await super().prepare(run_id, worker, *args, **kwargs)


class _Unvalidated(Compactor):
    """Takes every summary the summary model writes, whatever it claims (CTX-06)."""

    @staticmethod
    def validate(*args: Any) -> str | None:
        return None


def _compacting(compactor: type[Compactor]) -> type[Workers]:
    class CompactorWorkers(Workers):
        compactor_class = compactor

    return CompactorWorkers


def step_quota() -> FastAPI:
    return serve(workers_class=StepQuotaWorkers)


def free_admission() -> FastAPI:
    return serve(runtime_class=FreeAdmissionRuntime)


def estimate_reservation() -> FastAPI:
    return serve(workers_class=EstimateReservationWorkers)


def tools_uncounted() -> FastAPI:
    return serve(workers_class=ToolsUncountedWorkers)


def no_margin() -> FastAPI:
    return serve(workers_class=NoMarginWorkers)


def unspaced_summaries() -> FastAPI:
    return serve(workers_class=_compacting(_Unspaced))


def spaced_by_five() -> FastAPI:
    return serve(workers_class=_compacting(_SpacedByFive))


def no_bypass() -> FastAPI:
    return serve(workers_class=_compacting(_NoBypass))


def unvalidated_summaries() -> FastAPI:
    return serve(workers_class=_compacting(_Unvalidated))


class _IdsFromTheMessageBefore(Compactor):
    """Counts the ids a summary may name from one message before its stretch (an off-by-one):
    when the stretch is the later side of an input answering a reserved request, a summary
    naming that request's id is taken (the sampled compaction.py slice-1 survivor)."""

    @staticmethod
    def validate(summary: str, messages: Any, span: tuple[int, int], facts: Any) -> str | None:
        wider = compaction.refusal(summary, messages, (max(span[0] - 1, 0), span[1]), facts)
        if wider is not None:
            return wider
        why = compaction.refusal(summary, messages, span, facts)
        return None if why and "not in the summarized stretch" in why else why


def ids_from_the_message_before() -> FastAPI:
    return serve(workers_class=_compacting(_IdsFromTheMessageBefore))


def character_threshold() -> FastAPI:
    return serve(workers_class=_compacting(_CharacterThreshold))


def _rounded_down(prices: billing.Prices, prompt: int, cached: int, completion: int) -> int:
    cached = max(0, min(cached, prompt))
    return ((prompt - cached) * prices.input + cached * prices.cached_input
            + completion * prices.output) // billing.PER


class ChargeRoundedDownWorkers(Workers):
    """A call's cost rounded down to the micro-unit, not up (profile, BIL-05): every charge
    at whole micro-units per token is right, a fraction of one is lost on the others."""

    price = staticmethod(_rounded_down)


def charge_rounded_down() -> FastAPI:
    return serve(workers_class=ChargeRoundedDownWorkers)
