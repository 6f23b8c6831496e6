"""Runtime operations behind the HTTP app: wallets, sessions, runs, tool calls, and the
executor protocol's entry points (executors.py, claims.py and receipts.py hold its rules).

Checks run in the profile's order (401 and 403 for the permission before the body; then the
resource named, 404, then the agent scope over it, 403; then 422). Admission (RUN-01) decides
a run's fate before it is queued, in the same transaction that records it.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from arck.reference.auth import Principal
from arck.reference.canonical import canonical_text
from arck.reference.clock import Clock
from arck.reference.engine import Engine
from arck.reference.errors import Conflict, NotFound, ValidationFailed
from arck.reference.models import validation_failed
from arck.reference.runtime import billing, claims, inputs, receipts, revocations
from arck.reference.runtime.executor_wire import (
    Candidate,
    CandidateList,
    Claim,
    ClaimRequest,
    Detach,
    DetachAnswer,
    Executor,
    ExecutorCall,
    ExecutorRegistered,
    Heartbeat,
    HeartbeatAnswer,
    Receipt,
    ReceiptAnswer,
    ToolCallCancel,
    ToolCallCancelled,
)
from arck.reference.runtime.executors import DEV_EXECUTOR_SECRET, Executors
from arck.reference.runtime.runstore import RunStore, SessionRow, append, event
from arck.reference.runtime.wallets import Wallets
from arck.reference.runtime.wire import (
    CancelRequest,
    Channel,
    Deposit,
    InputAccepted,
    InputAppend,
    Run,
    RunCreate,
    RunEvent,
    Session,
    SessionCreate,
    ToolCallView,
    ToolRevocation,
    ToolRevocationCreate,
    Wallet,
    WalletCreate,
)
from arck.reference.runtime.worker import Workers
from arck.reference.store import Store

__all__ = ["Runtime"]

_M = TypeVar("_M", bound=BaseModel)


def _validate(model: type[_M], data: object) -> _M:
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        raise validation_failed(exc) from None


class Runtime:
    # Which members a receipt of each kind takes and needs (422 otherwise): a seam for the
    # mutant catalogue (reference/mutants/bounds.py).
    receipt_members = staticmethod(receipts.members)

    def __init__(self, engine: Engine, workers: Workers, clock: Clock, *,
                 executor_secret: str = DEV_EXECUTOR_SECRET) -> None:
        self.engine = engine
        self.store: Store = engine.store
        self.wallets = Wallets(self.store)
        self.runs = workers.runs
        self.workers = workers
        self.clock = clock
        self.executors = Executors(self.store, clock, executor_secret)
        self.store.install(claims.SCHEMA)

    async def aclose(self) -> None:
        """Stop the workers and close the provider client (the app's shutdown)."""
        await self.workers.stop()
        await self.workers.model.aclose()

    # -- wallets ---------------------------------------------------------------------------

    def create_wallet(self, principal: Principal, data: object) -> Wallet:
        return self.wallets.create(principal.tenant, _validate(WalletCreate, data).name)

    def get_wallet(self, principal: Principal, wallet_id: str, path: str = "wallet_id") -> Wallet:
        wallet = self.wallets.get(principal.tenant, wallet_id)
        if wallet is None:
            raise NotFound("no wallet with this id", path)
        return wallet

    def deposit(self, principal: Principal, wallet_id: str, data: object) -> Wallet:
        self.get_wallet(principal, wallet_id)
        amount = _validate(Deposit, data).amount
        if not self.wallets.deposit(principal.tenant, wallet_id, amount):
            raise ValidationFailed("/amount: the balance would exceed 2**62 micro-units", "/amount")
        return self.get_wallet(principal, wallet_id)

    # -- sessions --------------------------------------------------------------------------

    def create_session(self, principal: Principal, data: object) -> Session:
        if isinstance(data, dict) and isinstance(data.get("agent_version"), str):
            self.engine.get_version(principal, data["agent_version"], path="/agent_version")
        request = _validate(SessionCreate, data)
        version = self.engine.get_version(principal, request.agent_version, path="/agent_version")
        self.get_wallet(principal, request.wallet_id, "/wallet_id")
        if version.channel_id is None:
            raise ValidationFailed(
                "/agent_version: the version names no channel_id, so it cannot run",
                "/agent_version",
            )
        tool_set = self.engine.get_tool_set(principal, version.tool_set_id, path="/agent_version")
        tools = [
            {"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.input_schema}}
            for t in tool_set.tools
        ]
        session_id = self.runs.create_session(
            principal.tenant, version.agent_id, version.agent_version, request.wallet_id,
            version.channel_id, version.system_prompt, canonical_text(tools) if tools else "",
            request.subject,
        )
        return Session(session_id=session_id, agent_version=version.agent_version,
                       wallet_id=request.wallet_id,
                       subject=request.subject or f"session:{session_id}")

    def get_session(
        self, principal: Principal, session_id: str, path: str = "session_id"
    ) -> SessionRow:
        """404 for an unknown or foreign session; 403 outside the caller's agent scope."""
        session = self.runs.session(principal.tenant, session_id)
        if session is None:
            raise NotFound("no session with this id", path)
        self.engine.authorize(principal, frozenset(), session.agent_id, path=path)
        return session

    def session_view(self, principal: Principal, session_id: str) -> Session:
        s = self.get_session(principal, session_id)
        subject = self.store.read("SELECT subject FROM sessions WHERE id = ?", (session_id,))
        return Session(session_id=s.session_id, agent_version=s.agent_version,
                       wallet_id=s.wallet_id, subject=subject[0][0] or f"session:{session_id}")

    def history(self, principal: Principal, session_id: str, kind: str) -> list[dict[str, Any]]:
        self.get_session(principal, session_id)
        return [json.loads(item) for item in self.runs.history(session_id, kind)]

    # -- runs ------------------------------------------------------------------------------

    def create_run(self, principal: Principal, session_id: str, data: object) -> Run:
        """RUN-01: version, identity and funds are admitted before the run is queued."""
        session = self.get_session(principal, session_id)
        request = _validate(RunCreate, data)
        channel = self.engine.get_channel(principal, session.channel_id)
        first = self.admission_reservation(channel)
        at = self.clock.now()
        with self.store.transaction() as db:
            if self.runs.active_run(db, session_id):
                raise Conflict("the session has a run or tool calls still open", "session_id")
            run_id = Store.insert(db, "runs", "run", ("tenant", "session_id", "state"),
                                  (principal.tenant, session_id, "queued"))
            event(db, run_id, "run.created", at, session_id=session_id)
            available = Wallets.available(db, session.wallet_id)
            if available < first:
                event(db, run_id, "admission.refused", at, reservation=first,
                      available=available)
                RunStore.end(db, run_id, "insufficient_balance", at)
                return Run(run_id=run_id, session_id=session_id, state="ended",
                           end_reason="insufficient_balance")
            if session.pending_reserved is not None:
                # The answer to the model's request for input or approval.
                append(db, session_id, "execution", {
                    "role": "tool", "tool_call_id": session.pending_reserved,
                    "content": request.input})
                db.execute("UPDATE sessions SET pending_reserved = NULL WHERE id = ?",
                           (session_id,))
            else:
                append(db, session_id, "execution", {"role": "user", "content": request.input})
            append(db, session_id, "formal", {"type": "user", "text": request.input})
            event(db, run_id, "run.queued", at)
        self.workers.notify()
        return Run(run_id=run_id, session_id=session_id, state="queued", end_reason=None)

    def admission_reservation(self, channel: Channel) -> int:
        """What the first call will reserve (BIL-01): admission needs that much available."""
        prices = billing.Prices(**channel.prices.model_dump())
        return billing.reservation(prices, channel.input_capacity, channel.output_capacity)

    def _run(self, principal: Principal, run_id: str) -> tuple[str, str, str | None]:
        found = self.runs.run(principal.tenant, run_id)
        if found is None:
            raise NotFound("no run with this id", "run_id")
        self.get_session(principal, found[0], "run_id")
        return found

    def get_run(self, principal: Principal, run_id: str) -> Run:
        session_id, state, reason = self._run(principal, run_id)
        return Run(run_id=run_id, session_id=session_id, state=state,  # type: ignore[arg-type]
                   end_reason=reason)

    def cancel_run(self, principal: Principal, run_id: str, data: object) -> Run:
        """Ends the run; it cancels no business task: its tool calls stay as they are, and
        their later receipts are kept for audit only (RUN-13, EXE-13, EXE-15)."""
        session_id, _, _ = self._run(principal, run_id)
        _validate(CancelRequest, data)
        with self.store.transaction() as db:
            active = db.execute("SELECT state FROM runs WHERE id = ?",
                                (run_id,)).fetchone()[0] != "ended"
            RunStore.end(db, run_id, "cancelled", self.clock.now())
            if active:
                _close_open_calls(db, run_id, session_id)
        return self.get_run(principal, run_id)

    def append_input(self, principal: Principal, run_id: str, data: object) -> InputAccepted:
        """RUN-06: input for an active run, pending until the worker takes it (inputs.py);
        409 once the run has ended (start a new run with it)."""
        session_id, _, _ = self._run(principal, run_id)
        text = _validate(InputAppend, data).input
        with self.store.transaction() as db:
            state = db.execute("SELECT state FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
            if state == "ended":
                raise Conflict("the run has ended; start a new run with this input", "run_id")
            input_id = inputs.record(db, run_id, session_id, text, self.clock.now())
        self.workers.notify()
        return InputAccepted(run_id=run_id, input_id=input_id, state="pending")

    def revoke_tool(self, principal: Principal, agent_id: str, data: object) -> ToolRevocation:
        """RUN-14: the agent's tool is no longer dispatched; active runs it reaches are told
        at once and end `permission_changed` at their next step (revocations.py)."""
        name = _validate(ToolRevocationCreate, data).tool_name
        with self.store.transaction() as db:
            revocation_id, reached = revocations.revoke(db, principal.tenant, agent_id, name,
                                                        self.clock.now())
        self.workers.notify()
        return ToolRevocation(revocation_id=revocation_id, agent_id=agent_id, tool_name=name,
                              runs=reached)

    def events(self, principal: Principal, run_id: str) -> list[RunEvent]:
        self._run(principal, run_id)
        return [RunEvent.model_validate(e) for e in self.runs.events(run_id)]

    def tool_calls(self, principal: Principal, run_id: str) -> list[ToolCallView]:
        self._run(principal, run_id)
        names = ("call_id", "run_id", "tool_call_id", "name", "arguments", "state",
                 "cancel_requested")
        return [ToolCallView.model_validate({**dict(zip(names, row, strict=True)),
                                             "cancel_requested": bool(row[6])})
                for row in self.runs.tool_calls(run_id, self.clock.now())]

    # -- executors (docs/executors.md; claims.py, receipts.py) ---------------------------------

    def register_executor(self, principal: Principal, data: object) -> ExecutorRegistered:
        return self.executors.register(principal.tenant, data)

    def get_executor(self, principal: Principal, executor_id: str) -> Executor:
        return self.executors.get(principal.tenant, executor_id)

    def heartbeat(self, principal: Principal, data: object) -> HeartbeatAnswer:
        _validate(Heartbeat, data)
        assert principal.executor_id is not None
        return self.executors.heartbeat(principal.executor_id)

    def candidates(self, principal: Principal) -> list[Candidate]:
        with self.store.transaction() as db:
            return claims.candidates(db, principal, self.clock.now())

    def candidate_list(self, principal: Principal) -> CandidateList:
        """The answer of `GET /v1/executor/candidates`: a seam for the mutant catalogue
        (reference/mutants/executors.py), the reference's answer unchanged."""
        return CandidateList(candidates=self.candidates(principal))

    def executor_call(self, principal: Principal, call_id: str) -> ExecutorCall:
        with self.store.transaction() as db:
            return claims.executor_call(db, principal, call_id, self.clock.now())

    def claim(self, principal: Principal, call_id: str, data: object) -> Claim:
        """404, 403 out of scope (naming no argument), 422, then the claim (EXE-01..05)."""
        with self.store.transaction() as db:
            call = claims.scoped_call(db, principal, call_id)
            _validate(ClaimRequest, data)
            return claims.claim(db, principal, call, self.clock.now())

    async def submit_receipt(self, principal: Principal, call_id: str,
                             data: object) -> ReceiptAnswer:
        """A receipt of any kind, judged whole in one savepoint of a group commit
        (`Store.grouped`: receipts arriving together share one commit, and each is answered
        only once it is durable; receipts.py); a final is stored in full and projected once
        into the execution history (BUD-15..18)."""
        executor_id = principal.executor_id
        assert executor_id is not None

        def intake(db: sqlite3.Connection) -> ReceiptAnswer:
            call = claims.scoped_call(db, principal, call_id)
            receipt = _validate(Receipt, data)
            self.receipt_members(receipt)
            for name in ("result", "data"):
                if name in receipt.model_fields_set:
                    self.engine.check_result(getattr(receipt, name), f"/{name}")
            assert isinstance(data, dict)
            return self.take_receipt(db, executor_id, call, receipt, data, self.clock.now())

        answer = await self.store.grouped(intake)
        self.workers.notify()
        return answer

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: claims.CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        """One validated receipt judged inside the intake's transaction (`receipts.take`): a
        seam for the mutant catalogue (reference/mutants/executors.py), which replaces how a
        receipt is judged without touching the module's functions."""
        return receipts.take(db, executor_id, call, receipt, body, at, self._context_text)

    def detach(self, principal: Principal, call_id: str, data: object) -> DetachAnswer:
        """EXE-15: before acceptance the call is dispatchable again; after it, the outcome is
        unknown: `reconciliation_required`, entering history whole, never dispatched again."""
        assert principal.executor_id is not None
        at = self.clock.now()
        with self.store.transaction() as db:
            call = claims.scoped_call(db, principal, call_id)
            claim_id = _validate(Detach, data).claim_id
            if claims.current_claim(db, call, principal.executor_id, at) != claim_id:
                raise Conflict("the claim is not the call's current claim held by this "
                               "executor (lapsed, detached or another's)", "/claim_id")
            if call.state == "claimed":
                claims.detach_claimed(db, call, at)
                return DetachAnswer(call_id=call_id, state="dispatchable")
            if call.state != "accepted":
                raise Conflict(f"the call is {call.state}: there is no claim to give up",
                               "call_id")
            if not call.run_ended:
                receipt = Receipt(receipt_id=f"detach:{claim_id}", claim_id=claim_id,
                                  kind="reconciliation_required", result=receipts.DETACHED)
                content, figures = self._context_text(receipt, call.budget)
                item = {"receipt_id": receipt.receipt_id, "kind": receipt.kind,
                        "result": receipts.DETACHED}
                db.execute("INSERT INTO receipts (call_id, receipt_id, body, projection, kind, "
                           "claim_id, applied) VALUES (?, ?, ?, ?, ?, ?, 1)",
                           (call_id, receipt.receipt_id, canonical_text(item), content,
                            receipt.kind, claim_id))
                receipts.finish(db, call, receipt.receipt_id, receipt.kind, content, figures,
                                item, at)
                event(db, call.run_id, "tool_call.detached", at, call_id=call_id,
                      claim_id=claim_id, accepted=True)
            else:  # the run ended: nothing enters its histories (EXE-13)
                db.execute("UPDATE tool_calls SET state = 'reconciliation_required' "
                           "WHERE id = ? AND state = 'accepted'", (call_id,))
            db.execute("UPDATE tool_calls SET claim_id = NULL WHERE id = ?", (call_id,))
            db.execute("UPDATE claims SET state = 'detached' WHERE id = ?", (claim_id,))
        self.workers.notify()
        return DetachAnswer(call_id=call_id, state="reconciliation_required")

    def cancel_tool_call(self, principal: Principal, call_id: str,
                         data: object) -> ToolCallCancelled:
        """EXE-12: a business cancel request; the call and the run go on until the executor
        sends `cancelled` (claims.request_cancel)."""
        at = self.clock.now()
        with self.store.transaction() as db:
            call = claims.find_call(db, principal.tenant, call_id)
            self.get_session(principal, call.session_id, "call_id")
            _validate(ToolCallCancel, data)
            claims.request_cancel(db, call, at)
        return ToolCallCancelled(call_id=call_id, state=call.view_state(at),  # type: ignore[arg-type]
                                 cancel_requested=True)

    def _context_text(self, receipt: Receipt, budget: int) -> tuple[str, dict[str, Any]]:
        """The tool message's content and the figures of `receipt.stored`: a completed result
        or a failure projected to the tool's budget (BUD-15); a submission or an unknown
        business result whole, however large (BUD-18: projecting it could cut the handle or
        the evidence the model needs to follow it up); a cancellation whole (it is small)."""
        value = receipts.history_value(receipt)
        if receipt.kind in receipts.PROJECTED:
            projected = self.engine.projector.project(value, budget)
            return canonical_text(projected.result), {
                "original_bytes": projected.original_bytes,
                "retained_bytes": projected.retained_bytes, "truncated": projected.truncated}
        content = canonical_text(value)
        size = len(content.encode())
        figures: dict[str, Any] = {"original_bytes": size, "retained_bytes": size,
                                   "truncated": False}
        if receipt.kind in receipts.PROTECTED:
            figures["protected"] = True
        return content, figures


UNANSWERED = {"outcome": "unknown",
              "reason": "the run was cancelled before this call's result; its business task "
                        "may still finish"}


def _close_open_calls(db: sqlite3.Connection, run_id: str, session_id: str) -> None:
    """Give each call the cancelled run left open a tool message saying its outcome is
    unknown: a model request must answer every tool call its history holds, or the next
    run of the session would be refused by the provider. The call itself is untouched (its
    executor may still finish; the receipt is kept for audit, EXE-13)."""
    marks = ", ".join("?" * len(claims.OPEN_STATES))
    for (tool_call_id,) in db.execute(
        f"SELECT tool_call_id FROM tool_calls WHERE run_id = ? AND state IN ({marks}) "
        "ORDER BY seq", (run_id, *claims.OPEN_STATES)).fetchall():
        append(db, session_id, "execution", {"role": "tool", "tool_call_id": tool_call_id,
                                             "content": canonical_text(UNANSWERED)})
