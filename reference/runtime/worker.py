"""Workers: asyncio tasks that claim queued runs from the store and make one model call each.

A claim is a conditional update, so several workers (and several processes) never share a run.
A worker holds a run only for one model call: a run waiting for tool receipts holds none. A
claim is a lease on the injected clock, renewed while the worker works; a run whose lease
lapsed is taken over and checked first (reconcile.py, RUN-02, RUN-12).
The order of one call: estimate (CTX), reserve (BIL-01/02), record the call and its RUN-15
event, send once, then settle and apply the answer in one transaction.
An error answer was never processed: a retryable one (429, 500, 502, 503, 504) is sent again
as a new model call after a backoff on the injected clock, at most `MAX_RETRIES` times a step;
the schedule is an event stored with the refusal, so a takeover resumes it. Any other refusal,
or the last retry refused, ends the run `model_timeout` with nothing charged.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from arck.reference.canonical import canonical_text
from arck.reference.capability import ExecutionPolicy, effective
from arck.reference.clock import Clock, woken_or_timeout
from arck.reference.localpolicy import declaration_of, tightened
from arck.reference.models import DEFAULT_BUDGET, PublishedTool
from arck.reference.runtime import (
    billing,
    chathistory,
    compaction,
    estimate,
    inputs,
    pacing,
    revocations,
    subjects,
)
from arck.reference.runtime.compactor import (
    REQUEST_TAIL,
    Compactor,
    Target,
    figures,
    raw_of,
    request_head,
)
from arck.reference.runtime.modelcall import ModelClient, Outcome, error_text
from arck.reference.runtime.prepared import PreparedMessages
from arck.reference.runtime.reconcile import Reconciler
from arck.reference.runtime.runstore import Claim, RunStore, SessionRow, append, event, held
from arck.reference.runtime.wallets import Wallets
from arck.reference.storagefaults import is_storage_fault
from arck.reference.store import Store

__all__ = ["LEASE_SECONDS", "MAX_RETRIES", "REQUEST_APPROVAL", "REQUEST_INPUT",
           "RETRYABLE", "Workers"]

REQUEST_INPUT = "arck_request_input"
REQUEST_APPROVAL = "arck_request_approval"
_RESERVED = {REQUEST_INPUT: "input_required", REQUEST_APPROVAL: "approval_required"}
LEASE_SECONDS = 15.0
# Refusals worth sending again (never processed, so a new call is no resend, RUN-12).
RETRYABLE = frozenset({429, 500, 502, 503, 504})
MAX_RETRIES = 3  # per step: at most 4 calls for one request
RETRY_AFTER_CAP_S = 60.0  # a provider's retry-after is honoured up to this
FAULT_BACKOFF_S = 0.5  # a worker's first wait after a storage fault (then doubled)
FAULT_BACKOFF_CAP_S = 15.0
_DECLARED_KEPT = 4096  # bindings whose declared policy the workers keep (then start over)
_log = logging.getLogger("arck.reference")


@dataclass(frozen=True)
class Retry:
    """A retry scheduled after the refused call `of` (event `model_call.retry_scheduled`)."""

    of: str
    attempt: int  # 1..MAX_RETRIES
    due_at: float
    status: int | None


class Workers:
    lease_seconds: float = LEASE_SECONDS  # RUN-02: a claim's lease, renewed every third of it
    compactor_class: type[Compactor] = Compactor
    reconciler: Reconciler | None = None
    instance: str = ""

    def __init__(
        self, store: Store, runs: RunStore, model: ModelClient, clock: Clock, count: int = 2
    ) -> None:
        self.store = store
        self.runs = runs
        self.model = model
        self.clock = clock
        self.count = count
        self._tasks: list[asyncio.Task[None]] = []
        self._wake: asyncio.Event | None = None
        self.compactor = self.compactor_class(self, frozenset(_RESERVED))
        self._declared: dict[str, ExecutionPolicy] = {}  # binding id → its declared policy
        # The requests' serialized messages per session: a cache checked against the store
        # on every use, empty after a restart (prepared.py).
        self.prepared = PreparedMessages(store)
        store.install(inputs.SCHEMA)  # appended input (RUN-06)
        store.install(revocations.SCHEMA)  # tool permissions revoked (RUN-14)

    def start(self) -> None:
        """Start the tasks in the running loop, once (the app's startup or first runtime
        request). The first claims take over runs whose lease expired (RUN-02)."""
        loop = asyncio.get_running_loop()
        if self._tasks and self._tasks[0].get_loop() is loop and not self._tasks[0].done():
            return
        if self.reconciler is None:
            self.reconciler = Reconciler(self)
        # Names never repeat across restarts: a new app never mistakes a dead one's claims.
        self.instance = self.runs.register_instance(self.clock.now())
        self._wake = asyncio.Event()
        self._tasks = [loop.create_task(self._loop(f"{self.instance}.worker-{i + 1}"))
                       for i in range(self.count)]

    def notify(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def _loop(self, name: str) -> None:
        """Claim, work, reconcile, idle; for ever. An error (a storage fault: a full disk,
        another process's lock) never ends the loop: it waits, doubling from
        `FAULT_BACKOFF_S` up to `FAULT_BACKOFF_CAP_S` on the injected clock, and goes on by
        itself once the storage answers again (no request needed)."""
        assert self._wake is not None
        assert self.reconciler is not None
        backoff = FAULT_BACKOFF_S
        while True:
            try:
                self._wake.clear()
                claim = self.runs.claim(name, self.clock.now(), self.lease_seconds)
                if claim is not None:
                    await self._hold(claim, name)
                elif not await self.reconciler.reconcile_due():
                    await self._idle()
                backoff = FAULT_BACKOFF_S
            except Exception as exc:
                if is_storage_fault(exc):
                    _log.warning("worker %s: storage fault (%s), again in %g s", name, exc,
                                 backoff)
                else:
                    _log.exception("worker %s failed, again in %g s", name, backoff)
                await self.clock.sleep(backoff)
                backoff = min(backoff * 2, FAULT_BACKOFF_CAP_S)

    async def _hold(self, claim: Claim, name: str) -> None:
        """Work on a claimed run while renewing its lease; a takeover checks first (RUN-12)."""
        assert self.reconciler is not None
        renewal = asyncio.ensure_future(self._renew(claim.run_id, name))
        try:
            if claim.takeover:
                await self.reconciler.take_over(claim.run_id, name)
                if self.scheduled_retry(claim.run_id, name) is not None:
                    # The checked call was a retryable refusal: its retry is still due.
                    await self.step(claim.run_id, name)
            else:
                await self.step(claim.run_id, name)
        except Exception:
            # A bug must not stop the worker; the lease lapses and the run is checked again.
            _log.exception("worker %s failed on run %s", name, claim.run_id)
        finally:
            renewal.cancel()
            await asyncio.gather(renewal, return_exceptions=True)

    async def _renew(self, run_id: str, name: str) -> None:
        while True:
            await self.clock.sleep(self.lease_seconds / 3)
            if not self.runs.renew(run_id, name, self.clock.now() + self.lease_seconds):
                return

    async def _idle(self) -> None:
        """Until woken, or until a lease may have lapsed (a worker here or in another process
        died) or a cost-pending call is due for reconciliation (both on the injected clock)."""
        assert self._wake is not None
        assert self.reconciler is not None
        deadlines = [d for d in (self.runs.next_lease_expiry(),
                                 self.reconciler.schedule()) if d is not None]
        if not deadlines:
            await self._wake.wait()
            return
        await woken_or_timeout(self._wake, self.clock,
                               max(min(deadlines) - self.clock.now(), 0.001))

    async def step(self, run_id: str, worker: str) -> None:
        """One main model call of a claimed run, after the compaction it needs (CTX-03..07);
        a call the provider refuses with context_length_exceeded is repaired and sent once
        more, never twice (CTX-05, CTX-15). A retryable refusal is sent again, unchanged, as a
        new call once its backoff is over; a step resumed by a takeover finds the retry it
        had scheduled (never compacting again in between, so the bytes stay the same)."""
        session = self.runs.run_session(run_id)
        channel = self.store.channel(session.tenant, session.channel_id)
        version = self.store.version(session.tenant, session.agent_version)
        assert channel is not None
        assert version is not None
        assert version.max_context_tokens is not None
        main = self.target_of(channel)
        budget = self.budget_of(
            version.max_context_tokens, channel.input_capacity, channel.total_capacity,
            channel.output_capacity,
        )
        repair = False
        retry = self.scheduled_retry(run_id, worker)
        while True:
            if not self._gate(run_id, worker, take_inputs=retry is None):
                return
            extra: dict[str, Any] = {}
            if retry is None:
                ready = await self.compactor.prepare(run_id, worker, version, main, budget,
                                                     repair)
                if ready is None:
                    return
                session, decision = ready.session, ready.compaction
            else:
                if not await self._back_off(run_id, worker, retry.due_at):
                    return
                session = self.runs.run_session(run_id)
                decision = None
                extra = {"retry": {"attempt": retry.attempt, "of": retry.of}}
            raw = self.raw_of(session)
            samples = self.runs.samples(session.tenant, main.set_key, estimate.CALIBRATION_WINDOW)
            found = figures(raw, samples, session.last, budget, main.reservation)
            if decision is None:
                assert retry is not None
                # The refused request unchanged: no compaction is decided again for it.
                before = found["calibrated_estimate"]
                decision = {"decision": "none", "reason": f"retry {retry.attempt} of "
                            f"{retry.of} (refused {retry.status}): the same request",
                            "estimate_before": before, "ratio_before": _ratio(before, budget)}
            call_id = self._begin(run_id, worker, session, main.reservation, raw, main.set_key, {
                "purpose": "main", "channel_id": channel.channel_id, **found,
                "compaction": decision, **extra,
            })
            if call_id is None:
                return
            body = self._body(session, channel.model, channel.output_capacity)
            outcome = await self.model.complete(body, call_id, channel.timeout_ms)
            overflow = not repair and _overflow(outcome)
            self._finish(run_id, worker, session, call_id, main.reservation, raw, main.set_key,
                         main.prices, outcome, repairable=overflow)
            if overflow:
                repair, retry = True, None
                continue
            retry = self.scheduled_retry(run_id, worker)
            if retry is None or retry.of != call_id:
                return

    def _gate(self, run_id: str, worker: str, take_inputs: bool) -> bool:
        """Before a main call is composed: a run told of a revoked permission ends
        `permission_changed` (RUN-14); pending appended input enters the histories (RUN-06),
        never before a retry, which sends the refused request unchanged. False: stop."""
        at = self.clock.now()
        with self.store.transaction() as db:
            if not held(db, run_id, worker):
                return False
            if revocations.end_if_revoked(db, run_id, worker, at):
                return False
            if take_inputs:
                session_id = db.execute("SELECT session_id FROM runs WHERE id = ?",
                                        (run_id,)).fetchone()[0]
                inputs.take(db, run_id, str(session_id), at)
        return True

    def scheduled_retry(self, run_id: str, worker: str) -> Retry | None:
        """The retry due for the run's last model call, if it is a main call refused with a
        retry scheduled and the run is still held by `worker` (derived from the store alone,
        so a takeover finds it too)."""
        rows = self.store.read(
            "SELECT model_calls.id FROM model_calls JOIN runs ON runs.id = model_calls.run_id "
            "WHERE model_calls.run_id = ? AND runs.state = 'running' AND runs.worker = ? "
            "ORDER BY model_calls.seq DESC LIMIT 1",
            (run_id, worker),
        )
        if not rows:
            return None
        last = rows[0][0]
        rows = self.store.read(
            "SELECT model_calls.state, model_calls.purpose FROM model_calls WHERE id = ?",
            (last,),
        )
        if rows[0] != ("refused", "main"):
            return None
        for item in reversed(self.runs.events(run_id)):
            data = item["data"]
            if item["type"] == "model_call.retry_scheduled" and data.get("call_id") == last:
                return Retry(last, int(data["attempt"]), float(data["due_at"]),
                             data.get("status"))
        return None

    async def _back_off(self, run_id: str, worker: str, due_at: float) -> bool:
        """Wait on the injected clock until `due_at` (the lease is renewed meanwhile by
        `_hold`); False as soon as the run is no longer this worker's (cancelled, taken)."""
        while (left := due_at - self.clock.now()) > 0:
            await self.clock.sleep(min(left, self.lease_seconds / 3))
            with self.store.transaction() as db:
                if not held(db, run_id, worker):
                    return False
        return True

    # Seams: where a call goes and what it reserves (BIL-01), and its budget (CTX-01).
    target_of = staticmethod(Target.of)
    budget_of = staticmethod(estimate.effective_budget)
    raw_of = staticmethod(raw_of)  # CTX-13: the lightweight estimate of the whole request
    # Seams of turns: what the chat-history tool returns (RUN-10), why a plan is refused (RUN-14).
    chat_history = staticmethod(chathistory.answer)
    refused_tools = staticmethod(revocations.refused)
    price = staticmethod(billing.charge)  # BIL-04/05: a call's charge, rounded up
    refuse_plan = staticmethod(revocations.refuse_plan)  # RUN-14: a plan never dispatchable
    pace = staticmethod(pacing.admit)  # CAP-08: a dispatch within its operation's rate limit

    def _begin(
        self, run_id: str, worker: str, session: SessionRow, reservation: int, raw: int,
        set_key: str, figures: dict[str, Any],
    ) -> str | None:
        """Reserve and record the call, or end the run before sending (BIL-02)."""
        at = self.clock.now()
        with self.store.transaction() as db:
            if not held(db, run_id, worker):
                return None
            if not Wallets.reserve(db, session.wallet_id, reservation):
                event(db, run_id, "reservation.refused", at, reservation=reservation,
                      available=Wallets.available(db, session.wallet_id))
                RunStore.end(db, run_id, "insufficient_balance", at, worker=worker)
                return None
            call_id = Store.insert(
                db, "model_calls", "mc",
                ("run_id", "state", "reservation", "raw", "set_key", "purpose"),
                (run_id, "sent", reservation, raw, set_key, figures.get("purpose", "main")),
            )
            event(db, run_id, "model_call.started", at, call_id=call_id, **figures)
        return call_id

    def _body(self, session: SessionRow, model: str, max_tokens: int) -> bytes:
        """Stored messages joined as they are: each request extends the last byte for byte.
        The joined texts are kept per session and extended by the rows appended since the
        last call (prepared.py), so a call costs what was appended, not the whole history."""
        return self.prepared.joined(session.session_id,
                                    request_head(model, max_tokens, session.tools),
                                    REQUEST_TAIL)

    def _finish(
        self, run_id: str, worker: str, session: SessionRow, call_id: str, reservation: int,
        raw: int, set_key: str, prices: billing.Prices, outcome: Outcome,
        purpose: str = "main", repairable: bool = False,
    ) -> str | None:
        """Settle the call; apply a main call's turn. A summary call's answer is returned (its
        text, "" when it has none) and is never a calibration sample (CTX-11). A `repairable`
        refusal (context_length_exceeded, first time) leaves the run to be compacted."""
        at = self.clock.now()
        body = outcome.body or {}
        usage = body.get("usage") if outcome.kind == "answered" else None
        with self.store.transaction() as db:
            if not _may_finish(db, run_id, worker, call_id):
                return None
            if outcome.kind == "refused":
                Wallets.release(db, session.wallet_id, reservation)
                db.execute("UPDATE model_calls SET state = 'refused', response = ? WHERE id = ?",
                           (canonical_text(body), call_id))
                event(db, run_id, "model_call.finished", at, call_id=call_id, outcome="refused",
                      status=outcome.status, detail=outcome.detail, charge=0,
                      released=reservation)
                if purpose == "main" and not repairable and held(db, run_id, worker):
                    _after_refusal(db, run_id, worker, call_id, outcome, at)
                return None
            if not isinstance(usage, dict):
                # BIL-03, RUN-12: outcome or cost unknown; the reservation stays held.
                db.execute(
                    "UPDATE model_calls SET state = 'cost_pending', response = ? WHERE id = ?",
                    (canonical_text(body) if body else None, call_id),
                )
                event(db, run_id, "model_call.finished", at, call_id=call_id,
                      outcome=outcome.kind, detail=outcome.detail, usage=None,
                      cost_pending=reservation)
                reason = "model_timeout" if outcome.kind == "timeout" else \
                    "cost_pending_reconciliation"
                RunStore.end(db, run_id, reason, at, worker=worker)
                return None
            prompt, completion, cached = self.usage_figures(usage)
            charge = self.price(prices, prompt, cached, completion)
            collected = Wallets.settle(db, session.wallet_id, reservation, charge)
            db.execute(
                "UPDATE model_calls SET state = 'settled', charge = ?, usage = ?, response = ? "
                "WHERE id = ?",
                (collected, canonical_text(usage), canonical_text(body), call_id),
            )
            if purpose == "summary":
                # CTX-05: spacing counts from the last summary call, accepted or refused.
                db.execute("UPDATE sessions SET calls_since_summary = 0 WHERE id = ?",
                           (session.session_id,))
                event(db, run_id, "model_call.finished", at, call_id=call_id,
                      outcome="answered", usage=usage, charge=charge, collected=collected,
                      released=reservation - collected)
                return _text(body)
            # CTX-08/09: the raw estimate of the request sent, paired with the real count,
            # when the provider reported one (a count that is not one is no sample).
            if self.trusted_prompt(usage) is not None:
                Store.insert(db, "calibration_samples", "cs",
                             ("tenant", "set_key", "raw", "real", "model_call_id"),
                             (session.tenant, set_key, raw, prompt, call_id))
                db.execute("UPDATE sessions SET last_raw = ?, last_real = ? WHERE id = ?",
                           (raw, prompt, session.session_id))
            db.execute("UPDATE sessions SET calls_since_summary = calls_since_summary + 1 "
                       "WHERE id = ?", (session.session_id,))
            event(db, run_id, "model_call.finished", at, call_id=call_id, outcome="answered",
                  usage=usage, charge=charge, collected=collected,
                  released=reservation - collected)
            if held(db, run_id, worker):
                self._apply(db, run_id, worker, session, call_id, body, at)
        return None

    def usage_figures(self, usage: dict[str, Any]) -> tuple[int, int, int]:
        """(prompt, completion, cached) to charge for a reported usage (BIL-04): a seam for
        the mutant catalogue (reference/mutants/edges.py)."""
        return billing.usage_figures(usage)

    def trusted_prompt(self, usage: dict[str, Any]) -> int | None:
        """The reported prompt_tokens if it is a count (CTX-08: only a trusted one is a
        calibration sample); a seam for the mutant catalogue."""
        return billing.count(usage.get("prompt_tokens"))

    def _apply(
        self, db: Any, run_id: str, worker: str, session: SessionRow, call_id: str,
        body: dict[str, Any], at: float,
    ) -> None:
        """The model's turn (RUN-06): text, a reserved request, or a tool plan. A plan is
        refused when a permission it needs was revoked (RUN-14), discarded when input arrived
        while the call was in flight (RUN-06, inputs.py); the chat-history tool is answered
        here (RUN-10). Input pending after a text or a request keeps the run going."""
        choices = body.get("choices") or [{}]
        message = choices[0].get("message") or {}
        content = message.get("content")
        calls = message.get("tool_calls") or []
        reserved = [c for c in calls if c.get("function", {}).get("name") in _RESERVED]
        waiting = inputs.pending(db, run_id)
        if calls and not reserved:
            names = [str(c.get("function", {}).get("name", "")) for c in calls]
            why = self.refused_tools(db, run_id, session.tenant, session.agent_id, names)
            if why:
                self.refuse_plan(db, run_id, worker, call_id, calls, why, at,
                                 self._bindings(session))
                return
            if waiting:
                inputs.discard_plan(db, run_id, call_id, calls, at)
                inputs.take(db, run_id, session.session_id, at)
                inputs.requeue(db, run_id, worker, at, "input appended during the call")
                return
        assistant: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            assistant["tool_calls"] = calls
        append(db, session.session_id, "execution", assistant)
        if isinstance(content, str) and content:
            append(db, session.session_id, "formal", {"type": "assistant", "text": content})
        if reserved:
            name = reserved[0]["function"]["name"]
            append(db, session.session_id, "formal", {
                "type": name.removeprefix("arck_"), "arguments": reserved[0]["function"].get(
                    "arguments", "")})
            if waiting:
                # The input appended meanwhile answers the request; the run goes on.
                inputs.take(db, run_id, session.session_id, at, answer=reserved[0]["id"])
                inputs.requeue(db, run_id, worker, at, "input appended during the call")
                return
            db.execute("UPDATE sessions SET pending_reserved = ? WHERE id = ?",
                       (reserved[0]["id"], session.session_id))
            RunStore.end(db, run_id, _RESERVED[name], at, worker=worker)
            return
        if not calls:
            if waiting:
                inputs.take(db, run_id, session.session_id, at)
                inputs.requeue(db, run_id, worker, at, "input appended during the call")
                return
            RunStore.end(db, run_id, "completed", at, worker=worker)
            return
        budgets = self._budgets(session)
        bindings = self._bindings(session)
        ids, answered = [], []
        for call in calls:
            function = call.get("function", {})
            name = str(function.get("name", ""))
            arguments = str(function.get("arguments", ""))
            tool_call_id = str(call.get("id", ""))
            here = (db, session.session_id, run_id, at, tool_call_id)
            if name == chathistory.NAME:
                # RUN-10: answered by the engine itself, no executor, no receipt.
                result = self.chat_history(db, session.session_id, arguments)
                answered.append(_answered_here(*here, result, "chat_history.answered",
                                               messages=len(result.get("messages", [])),
                                               error=result.get("error")))
                continue
            if name not in bindings:
                # Outside the version's tool set: nothing may run it, so it is never stored as
                # dispatchable; the model is told, and the run goes on (docs/runs.md).
                answered.append(_answered_here(*here, unknown_tool(name), "tool_call.unknown",
                                               name=name))
                continue
            binding_id = bindings.get(name)
            policy = self._policy(session, binding_id)
            if policy is not None and self.refuses_subject(policy, session):
                # CAP-10: an operation that acts for a subject, in a session naming none the
                # platform can vouch for: never dispatched, nor counted (docs/capabilities.md).
                answered.append(_answered_here(
                    *here, subjects.subject_required(name), "tool_call.refused", name=name,
                    binding_id=binding_id, code="subject_required"))
                continue
            waited = self._paced(db, session, policy, at, tool_call_id)
            if waited is not None:
                # CAP-08: over its operation's rate limit, never dispatched; the model is
                # told when the operation has room again, and the run goes on (docs/runs.md).
                answered.append(_answered_here(
                    *here, pacing.rate_limited(name, waited), "tool_call.paced", name=name,
                    binding_id=binding_id, retry_after_ms=waited))
                continue
            call_ref = Store.insert(
                db, "tool_calls", "tc",
                ("run_id", "model_call_id", "tool_call_id", "name", "arguments", "budget",
                 "state", "binding_id"),
                (run_id, call_id, tool_call_id, name, arguments,
                 budgets.get(name, DEFAULT_BUDGET), "dispatchable", bindings.get(name)),
            )
            ids.append(call_ref)
            append(db, session.session_id, "formal", {
                "type": "tool_call", "call_id": call_ref, "name": name, "arguments": arguments})
        if not ids:
            # Only calls the engine answered itself: nothing to dispatch, the model is called
            # again.
            inputs.requeue(db, run_id, worker, at, "tool answered by the engine")
            return
        # RUN-16: the plan is formally accepted once the batch is stored as dispatchable.
        db.execute("UPDATE runs SET state = 'waiting_tools', worker = NULL WHERE id = ?",
                   (run_id,))
        event(db, run_id, "tool_plan.accepted", at, call_ids=ids, **(
            {"answered": answered} if answered else {}))

    def refuses_subject(self, policy: ExecutionPolicy, session: SessionRow) -> bool:
        """CAP-10, CAP-12 (a mutant's seam)."""
        return subjects.refused(policy, session)

    def _policy(self, session: SessionRow, binding_id: str | None) -> ExecutionPolicy | None:
        """The policy enforced for a binding's operation: its declaration's (read once: a
        binding never changes), tightened by the local policy in force."""
        if not binding_id:
            return None
        declared = self._declared.get(binding_id)
        if declared is None:
            binding = self.store.binding(session.tenant, binding_id)
            if binding is None:
                return None
            if len(self._declared) >= _DECLARED_KEPT:
                self._declared.clear()
            declared = self._declared[binding_id] = effective(binding_id, declaration_of(binding))
        return tightened(declared, self.store.local_policy(binding_id))

    def _paced(self, db: Any, session: SessionRow, policy: ExecutionPolicy | None, at: float,
               tool_call_id: str) -> int | None:
        """CAP-08: None when the call may be dispatched now (the dispatch is counted), else
        the milliseconds until its operation's window has room."""
        if policy is None:
            return None
        return self.pace(db, session.tenant, policy, at, f"{session.session_id}/{tool_call_id}")

    def _budgets(self, session: SessionRow) -> dict[str, int]:
        """Each tool's max_result_context_bytes, from the session's pinned version (DEF-05)."""
        return {t.name: t.max_result_context_bytes for t in self._tools(session)}

    def _bindings(self, session: SessionRow) -> dict[str, str]:
        """Each tool's binding: which executors may claim its calls (docs/executors.md)."""
        return {t.name: t.binding_id for t in self._tools(session)}

    def _tools(self, session: SessionRow) -> list[PublishedTool]:
        version = self.store.version(session.tenant, session.agent_version)
        assert version is not None
        tool_set = self.store.tool_set(session.tenant, version.tool_set_id)
        assert tool_set is not None
        return list(tool_set.tools)


def _answered_here(db: Any, session_id: str, run_id: str, at: float, tool_call_id: str,
                   content: dict[str, Any], kind: str, **data: Any) -> str:
    """A call the engine answers itself, never stored as a tool call: the model reads
    `content` as its result, and event `kind` says so. The call's id."""
    append(db, session_id, "execution", {
        "role": "tool", "tool_call_id": tool_call_id, "content": canonical_text(content)})
    event(db, run_id, kind, at, tool_call_id=tool_call_id, **data)
    return tool_call_id


def unknown_tool(name: str) -> dict[str, Any]:
    """The engine's answer to a call of a tool the agent's version does not have."""
    return {"error": {"code": "unknown_tool",
                      "message": f"no tool named {name!r} in this agent's tool set; nothing "
                                 "was run"}}


def _may_finish(db: Any, run_id: str, worker: str, call_id: str) -> bool:
    """RUN-02, RUN-12: only a call still `sent` is settled, once; and not by a worker whose run
    another worker took over (the new holder reconciles the call and applies its answer). A run
    that ended meanwhile (cancelled) still settles its call's money here."""
    if db.execute("SELECT 1 FROM model_calls WHERE id = ? AND state = 'sent'",
                  (call_id,)).fetchone() is None:
        return False
    taken = db.execute("SELECT 1 FROM runs WHERE id = ? AND state != 'ended' AND "
                       "worker IS NOT ?", (run_id, worker)).fetchone()
    return taken is None


def _after_refusal(
    db: Any, run_id: str, worker: str, call_id: str, outcome: Outcome, at: float
) -> None:
    """A main call refused (never processed, its reservation released): schedule its retry,
    or end the run. A second context_length_exceeded is context_uncompactable; a refusal not
    worth retrying, or the last retry refused, is `model_timeout`: the model gave no usable
    answer in time (RUN-11, RUN-16)."""
    if _overflow(outcome):
        RunStore.end(db, run_id, "context_uncompactable", at, worker=worker)
        return
    attempt = _attempt(db, run_id, call_id)
    retryable = outcome.status in RETRYABLE
    if retryable and attempt < MAX_RETRIES:
        delay = (min(outcome.retry_after, RETRY_AFTER_CAP_S) if outcome.retry_after is not None
                 else float(2 ** attempt))
        event(db, run_id, "model_call.retry_scheduled", at, call_id=call_id,
              attempt=attempt + 1, status=outcome.status, retry_after=outcome.retry_after,
              delay=delay, due_at=at + delay)
        return
    event(db, run_id, "model_call.given_up", at, call_id=call_id, status=outcome.status,
          detail=outcome.detail or error_text(outcome.body or {}), calls=attempt + 1,
          why="retries exhausted" if retryable else "not retryable")
    RunStore.end(db, run_id, "model_timeout", at, worker=worker)


def _attempt(db: Any, run_id: str, call_id: str) -> int:
    """Which retry the call was (0: the step's first call), from its model_call.started."""
    for (data,) in db.execute(
        "SELECT data FROM run_events WHERE run_id = ? AND type = 'model_call.started' "
        "ORDER BY n DESC", (run_id,),
    ):
        found = json.loads(data)
        if found.get("call_id") == call_id:
            retry = found.get("retry")
            return int(retry["attempt"]) if isinstance(retry, dict) else 0
    return 0


def _ratio(value: int, budget: int) -> str | None:
    return compaction.fraction_text(Fraction(value, budget)) if budget > 0 else None



def _overflow(outcome: Outcome) -> bool:
    """A 400 context_length_exceeded: never processed, never billed, safe to repair and send."""
    error = (outcome.body or {}).get("error")
    return outcome.kind == "refused" and outcome.status == 400 and isinstance(error, dict) \
        and error.get("code") == "context_length_exceeded"


def _text(body: dict[str, Any]) -> str:
    choices = body.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else {}
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else ""
