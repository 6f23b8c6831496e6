"""Mutants of the executor protocol (EXE, AUTH-02; docs/executors.md): one defect each.

Each replaces one seam of the reference with a subclass that does one thing wrong the way a
real engine might: `Runtime` (the claim, `candidate_list`, `take_receipt`, detach, the run
cancel), `Engine` (which credential may use the executor API) or `Workers` (what holds a
worker). The protocol's rules live in module functions (claims.py, receipts.py); these
mutants never patch them: they call them with other inputs, or do the step their own way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from collections.abc import Mapping
from typing import Any, ClassVar

from fastapi import FastAPI

from arck.reference.auth import (
    EXECUTOR_CONNECT,
    TOOLS_EXECUTE,
    Principal,
)
from arck.reference.canonical import canonical_text
from arck.reference.engine import Engine
from arck.reference.errors import Conflict, Forbidden
from arck.reference.mutants.base import serve
from arck.reference.runtime import claims
from arck.reference.runtime.claims import OPEN_STATES, CallRow
from arck.reference.runtime.executor_wire import (
    FINAL_KINDS,
    Candidate,
    CandidateList,
    Claim,
    ClaimRequest,
    Detach,
    DetachAnswer,
    ExecutorRegistered,
    HeartbeatAnswer,
    Receipt,
    ReceiptAnswer,
)
from arck.reference.runtime.executors import DEV_EXECUTOR_SECRET, Executors
from arck.reference.runtime.receipts import CALL_STATE
from arck.reference.runtime.runstore import append
from arck.reference.runtime.service import Runtime, _validate
from arck.reference.runtime.worker import Workers

# -- claims (EXE-01..05) -------------------------------------------------------------------------


class ClaimAnyOpenCallRuntime(Runtime):
    """Judges a claim by the run alone: while the run waits, any open call is claimable, so a
    claim on a call claimed (or accepted) by another executor wins again (EXE-01)."""

    def claim(self, principal: Principal, call_id: str, data: object) -> Claim:
        with self.store.transaction() as db:
            call = claims.scoped_call(db, principal, call_id)
            _validate(ClaimRequest, data)
            if call.state in OPEN_STATES and not call.run_ended:
                db.execute("UPDATE tool_calls SET state = 'dispatchable' WHERE id = ?",
                           (call_id,))
            return claims.claim(db, principal, call, self.clock.now())


class LeakingRefusalRuntime(Runtime):
    """A claim outside the executor's scope is refused naming the call it was refused, its
    arguments included (EXE-03: the refusal names no argument)."""

    def claim(self, principal: Principal, call_id: str, data: object) -> Claim:
        try:
            return super().claim(principal, call_id, data)
        except Forbidden:
            with self.store.transaction() as db:
                call = claims.find_call(db, principal.tenant, call_id)
            raise Forbidden(f"the binding of {call.name}({call.arguments}) is outside this "
                            "executor's scope", "call_id") from None


class UnscopedClaimRuntime(Runtime):
    """Finds the call in the tenant but never checks its binding against the executor's
    scope: any executor of the tenant claims any call (EXE-03)."""

    def claim(self, principal: Principal, call_id: str, data: object) -> Claim:
        with self.store.transaction() as db:
            call = claims.find_call(db, principal.tenant, call_id)
            _validate(ClaimRequest, data)
            return claims.claim(db, principal, call, self.clock.now())


class RegisteredIsOnlineRuntime(Runtime):
    """Counts registering as a heartbeat: an executor that never sent one is online and
    claims (EXE-02)."""

    def register_executor(self, principal: Principal, data: object) -> ExecutorRegistered:
        registered = super().register_executor(principal, data)
        self.executors.heartbeat(registered.executor_id)
        return registered


FOREVER = 1e18  # seconds of the injected clock: never reached


class EverOnlineExecutors(Executors):
    """One heartbeat keeps an executor online for good."""

    def heartbeat(self, executor_id: str) -> HeartbeatAnswer:
        answer = super().heartbeat(executor_id)
        with self.store.transaction() as db:
            db.execute("UPDATE executors SET online_until = ? WHERE id = ?",
                       (FOREVER, executor_id))
        return answer


class EverOnlineRuntime(Runtime):
    """An executor heard from once stays online however long it is silent (EXE-02: claiming
    needs an executor online now)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.executors = EverOnlineExecutors(self.store, self.clock,
                                             kwargs.get("executor_secret",
                                                        DEV_EXECUTOR_SECRET))


class ConnectExecutesEngine(Engine):
    """`executor:connect` is enough to claim, send receipts and detach (EXE-04)."""

    executor_permissions: ClassVar[Mapping[str, frozenset[str]]] = {
        **Engine.executor_permissions,
        **{op: frozenset({EXECUTOR_CONNECT, TOOLS_EXECUTE})
           for op in ("claim", "submit_receipt", "detach")},
    }


class NoDigestRuntime(Runtime):
    """The grant leaves the arguments' digest empty: the product cannot check that the
    arguments it is given are those planned (EXE-05, AUTH-02)."""

    def claim(self, principal: Principal, call_id: str, data: object) -> Claim:
        won = super().claim(principal, call_id, data)
        return won.model_copy(update={
            "grant": won.grant.model_copy(update={"arguments_digest": ""})})


class _CandidateWithArguments(Candidate):
    arguments: Any


class _CandidatesWithArguments(CandidateList):
    candidates: list[_CandidateWithArguments]  # type: ignore[assignment]


class ArgumentsInCandidatesRuntime(Runtime):
    """Lists each candidate with its arguments, so an executor may pick what it can do before
    claiming (EXE-03: no arguments before a claim)."""

    def candidate_list(self, principal: Principal) -> CandidateList:
        listed = self.candidates(principal)
        with self.store.transaction() as db:
            rows = [claims.find_call(db, principal.tenant, c.call_id) for c in listed]
        return _CandidatesWithArguments(candidates=[
            _CandidateWithArguments(**c.model_dump(),
                                    arguments=claims.parse_arguments(row.arguments))
            for c, row in zip(listed, rows, strict=True)])


class ClaimsNeverLapseRuntime(Runtime):
    """A claim never lapses: a call claimed and never accepted is never claimed again but
    after a detach (EXE-17: the lease is 30 s)."""

    def claim(self, principal: Principal, call_id: str, data: object) -> Claim:
        with self.store.transaction() as db:
            call = claims.scoped_call(db, principal, call_id)
        if call.state == "claimed":
            raise Conflict("the call is claimed", "call_id")
        return super().claim(principal, call_id, data)


# -- receipts (EXE-08, 09, 13, 14, 17) -----------------------------------------------------------


class DuplicateAppliedRuntime(Runtime):
    """Knows a receipt_id again but still applies a repeated final to the histories, and
    answers it as new (EXE-08: a duplicate is a replay that changes nothing)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        answer = super().take_receipt(db, executor_id, call, receipt, body, at)
        if not answer.replayed:
            return answer
        if receipt.kind in FINAL_KINDS and not call.run_ended:
            row = db.execute("SELECT projection FROM receipts WHERE call_id = ? AND "
                             "receipt_id = ?", (call.call_id, receipt.receipt_id)).fetchone()
            item = {k: v for k, v in body.items() if k != "claim_id"}
            append(db, call.session_id, "formal",
                   {"type": "receipt", "call_id": call.call_id, **item})
            append(db, call.session_id, "execution",
                   {"role": "tool", "tool_call_id": call.tool_call_id, "content": row[0]})
        return answer.model_copy(update={"replayed": False})


class ReceiptIdOnlyRuntime(Runtime):
    """Deduplicates receipts by receipt_id alone: another body under a known id is answered
    as a replay of the first, not refused (EXE-09)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        seen = db.execute("SELECT body FROM receipts WHERE call_id = ? AND receipt_id = ?",
                          (call.call_id, receipt.receipt_id)).fetchone()
        if seen is not None and seen[0] != canonical_text(body):
            body = json.loads(seen[0])
            receipt = _validate(Receipt, body)
        return super().take_receipt(db, executor_id, call, receipt, body, at)


class FirstDeliveryReplayedRuntime(Runtime):
    """Answers every receipt `replayed: true`, the first delivery too: an executor that
    trusts it never starts the work it was just confirmed for (EXE-08, EXE-10)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        answer = super().take_receipt(db, executor_id, call, receipt, body, at)
        return answer.model_copy(update={"replayed": True})


class UnacceptedReportsRuntime(Runtime):
    """Takes progress and finals under a claim not accepted yet, as if it were (EXE-17:
    nothing but `accepted` before acceptance; EXE-06: no work before it is confirmed)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        if receipt.kind != "accepted" and call.state == "claimed":
            call = dataclasses.replace(call, state="accepted")
        return super().take_receipt(db, executor_id, call, receipt, body, at)


class LateFinalAppliedRuntime(Runtime):
    """Never looks at the run when a final arrives: a final after the run ended enters its
    histories like any other (EXE-13)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        if receipt.kind in FINAL_KINDS:
            call = dataclasses.replace(call, run_ended=False)
        return super().take_receipt(db, executor_id, call, receipt, body, at)


class ReconciliationRetriedRuntime(Runtime):
    """Treats `reconciliation_required` as a failure to retry: the call goes back to be
    claimed, so work whose business result may exist runs again (EXE-11)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        answer = super().take_receipt(db, executor_id, call, receipt, body, at)
        if receipt.kind == "reconciliation_required" and not call.run_ended:
            db.execute("UPDATE tool_calls SET state = 'dispatchable', claim_id = NULL, "
                       "claim_until = NULL WHERE id = ?", (call.call_id,))
        return answer


class LastProgressWinsRuntime(Runtime):
    """Progress numbering refuses only a repeat of the last sequence: a lower one is taken
    and becomes the last (EXE-17: sequences only increase)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        if receipt.kind == "progress" and receipt.sequence is not None and \
                receipt.sequence < call.last_sequence:
            db.execute("UPDATE tool_calls SET last_sequence = ? WHERE id = ?",
                       (receipt.sequence - 1, call.call_id))
            call = dataclasses.replace(call, last_sequence=receipt.sequence - 1)
        return super().take_receipt(db, executor_id, call, receipt, body, at)


class SequenceBeforeReplayRuntime(Runtime):
    """Judges a progress receipt's sequence before its receipt_id: a repeated progress that
    a later one overtook is refused as out of order, not answered as a replay (EXE-08)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        if receipt.kind == "progress" and receipt.sequence is not None and \
                receipt.sequence <= call.last_sequence:
            raise Conflict(f"/sequence: must be above the call's last, {call.last_sequence}",
                           "/sequence")
        return super().take_receipt(db, executor_id, call, receipt, body, at)


class BearerClaimRuntime(Runtime):
    """Treats a claim_id as a bearer token: any executor that names the call's current claim
    may send its receipts, not only the executor that won it (EXE-17)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        row = db.execute("SELECT executor_id FROM claims WHERE id = ?",
                         (receipt.claim_id,)).fetchone()
        holder = str(row[0]) if row is not None else executor_id
        return super().take_receipt(db, holder, call, receipt, body, at)


class StaleClaimAcceptedRuntime(Runtime):
    """Takes `accepted` under any claim the sender ever held on the call: a lapsed claim,
    since taken over by another executor, becomes current again and its work may start
    (EXE-17: acceptance under the old claim is refused, and nothing ran)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        mine = db.execute("SELECT 1 FROM claims WHERE id = ? AND call_id = ? AND "
                          "executor_id = ?", (receipt.claim_id, call.call_id,
                                              executor_id)).fetchone()
        if receipt.kind == "accepted" and mine is not None and call.state == "claimed" and \
                call.claim_id != receipt.claim_id:
            until = at + claims.LEASE_SECONDS
            db.execute("UPDATE tool_calls SET claim_id = ?, claim_until = ? WHERE id = ?",
                       (receipt.claim_id, until, call.call_id))
            call = dataclasses.replace(call, claim_id=receipt.claim_id, claim_until=until)
        return super().take_receipt(db, executor_id, call, receipt, body, at)


class AcceptedAfterEndRuntime(Runtime):
    """Confirms an acceptance without looking at the run: a call of an ended run is accepted
    and its work may start (EXE-17: acceptance is refused once the run has ended)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        if receipt.kind == "accepted":
            call = dataclasses.replace(call, run_ended=False)
        return super().take_receipt(db, executor_id, call, receipt, body, at)


class LastFinalWinsRuntime(Runtime):
    """Skips the one-final rule: a final for a call that has one already is taken like the
    first, replacing its state and result while the run goes on, kept for audit (200,
    `applied: false`) once the run has ended (EXE-14: one final per call)."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        known = db.execute("SELECT 1 FROM receipts WHERE call_id = ? AND receipt_id = ?",
                           (call.call_id, receipt.receipt_id)).fetchone()
        if (known is not None or receipt.kind not in FINAL_KINDS
                or call.state in OPEN_STATES
                or claims.current_claim(db, call, executor_id, at) != receipt.claim_id):
            return super().take_receipt(db, executor_id, call, receipt, body, at)
        content, _ = self._context_text(receipt, call.budget)
        state = call.state if call.run_ended else CALL_STATE[receipt.kind]
        if not call.run_ended:
            db.execute("UPDATE tool_calls SET state = ? WHERE id = ?", (state, call.call_id))
            item = {k: v for k, v in body.items() if k != "claim_id"}
            append(db, call.session_id, "formal",
                   {"type": "receipt", "call_id": call.call_id, **item})
            append(db, call.session_id, "execution",
                   {"role": "tool", "tool_call_id": call.tool_call_id, "content": content})
        answer = ReceiptAnswer(call_id=call.call_id, receipt_id=receipt.receipt_id,
                               replayed=False, state=state,  # type: ignore[arg-type]
                               run_ended=call.run_ended, applied=not call.run_ended)
        db.execute("INSERT INTO receipts (call_id, receipt_id, body, projection, kind, "
                   "claim_id, applied, answer) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (call.call_id, receipt.receipt_id, canonical_text(body), content,
                    receipt.kind, receipt.claim_id, int(answer.applied),
                    canonical_text(answer.model_dump())))
        return answer


# -- distinct operations (EXE-15) and workers (EXE-16) -------------------------------------------


class RunCancelAsksBusinessRuntime(Runtime):
    """A run cancel also asks a business cancel of every open call of the run (EXE-15: a run
    cancel cancels no business task)."""

    def cancel_run(self, principal: Principal, run_id: str, data: object) -> Any:
        ended = super().cancel_run(principal, run_id, data)
        with self.store.transaction() as db:
            marks = ", ".join("?" * len(OPEN_STATES))
            db.execute(f"UPDATE tool_calls SET cancel_requested = 1 WHERE run_id = ? AND "
                       f"state IN ({marks})", (run_id, *OPEN_STATES))
        return ended


class DetachReopensRuntime(Runtime):
    """A detach puts the call back to be claimed whether or not it was accepted, so work
    that may have run is dispatched again (EXE-15)."""

    def detach(self, principal: Principal, call_id: str, data: object) -> DetachAnswer:
        assert principal.executor_id is not None
        at = self.clock.now()
        with self.store.transaction() as db:
            call = claims.scoped_call(db, principal, call_id)
            claim_id = _validate(Detach, data).claim_id
            if call.state != "accepted" or call.run_ended or \
                    claims.current_claim(db, call, principal.executor_id, at) != claim_id:
                accepted = False
            else:
                accepted = True
                db.execute("UPDATE tool_calls SET state = 'dispatchable', claim_id = NULL, "
                           "claim_until = NULL WHERE id = ?", (call_id,))
                db.execute("UPDATE claims SET state = 'detached' WHERE id = ?", (claim_id,))
        if not accepted:
            return super().detach(principal, call_id, data)
        self.workers.notify()
        return DetachAnswer(call_id=call_id, state="dispatchable")


class HeldWhileWaitingWorkers(Workers):
    """A pool of 8 workers, each staying with its run while the run waits on tool receipts:
    8 runs waiting on tools take every worker, and a ninth run is never answered (EXE-16,
    recommended). The wait polls the store in real time, so it sets no timer of the clock."""

    POLL_SECONDS = 0.05

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "count": 8})

    async def step(self, run_id: str, worker: str) -> None:
        await super().step(run_id, worker)
        while self.store.read("SELECT state FROM runs WHERE id = ?",
                              (run_id,))[0][0] == "waiting_tools":
            await asyncio.sleep(self.POLL_SECONDS)


# -- factories -----------------------------------------------------------------------------------


def two_claims_win() -> FastAPI:
    return serve(runtime_class=ClaimAnyOpenCallRuntime)


def refusal_leaks_arguments() -> FastAPI:
    return serve(runtime_class=LeakingRefusalRuntime)


def claim_outside_scope() -> FastAPI:
    return serve(runtime_class=UnscopedClaimRuntime)


def registered_is_online() -> FastAPI:
    return serve(runtime_class=RegisteredIsOnlineRuntime)


def connect_credential_executes() -> FastAPI:
    return serve(engine=ConnectExecutesEngine())


def grant_without_digest() -> FastAPI:
    return serve(runtime_class=NoDigestRuntime)


def arguments_in_candidates() -> FastAPI:
    return serve(runtime_class=ArgumentsInCandidatesRuntime)


def claims_never_lapse() -> FastAPI:
    return serve(runtime_class=ClaimsNeverLapseRuntime)


def duplicate_applied_twice() -> FastAPI:
    return serve(runtime_class=DuplicateAppliedRuntime)


def receipt_id_only() -> FastAPI:
    return serve(runtime_class=ReceiptIdOnlyRuntime)


def first_delivery_replayed() -> FastAPI:
    return serve(runtime_class=FirstDeliveryReplayedRuntime)


def unaccepted_reports_taken() -> FastAPI:
    return serve(runtime_class=UnacceptedReportsRuntime)


def late_receipt_applied() -> FastAPI:
    return serve(runtime_class=LateFinalAppliedRuntime)


def accepted_after_end() -> FastAPI:
    return serve(runtime_class=AcceptedAfterEndRuntime)


def second_final_accepted() -> FastAPI:
    return serve(runtime_class=LastFinalWinsRuntime)


def run_cancel_cancels_business() -> FastAPI:
    return serve(runtime_class=RunCancelAsksBusinessRuntime)


def reconciliation_retried() -> FastAPI:
    return serve(runtime_class=ReconciliationRetriedRuntime)


def last_progress_wins() -> FastAPI:
    return serve(runtime_class=LastProgressWinsRuntime)


def sequence_before_replay() -> FastAPI:
    return serve(runtime_class=SequenceBeforeReplayRuntime)


def bearer_claim() -> FastAPI:
    return serve(runtime_class=BearerClaimRuntime)


def ever_online() -> FastAPI:
    return serve(runtime_class=EverOnlineRuntime)


def stale_claim_accepted() -> FastAPI:
    return serve(runtime_class=StaleClaimAcceptedRuntime)


def loose_inline_bodies() -> FastAPI:
    """The runs and executor routes parse their bodies with plain `json.loads`, as a second
    router written apart from the first might: NaN and repeated keys are taken, and a body
    that is not JSON at all escapes as a server error (PRO-01)."""
    return serve(inline_parse=json.loads)


def detach_redispatches() -> FastAPI:
    return serve(runtime_class=DetachReopensRuntime)


def worker_held_waiting_tools() -> FastAPI:
    return serve(workers_class=HeldWhileWaitingWorkers)
