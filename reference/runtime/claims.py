"""Claims on tool calls: candidates, the claim with exactly one winner, its lease and grant,
what an executor reads of its calls, detach and the business cancel request.

Why a module of its own: who may work on a call is the executor protocol's core (EXE-01..05,
EXE-15, EXE-17), apart from what a receipt does to a run (receipts.py). Every change is a
conditional update in one transaction, written as if several processes shared the database: a
claim takes the call only if it is still `dispatchable`, or `claimed` under a lease that
lapsed by now, so of concurrent claims exactly one matches. A lapse needs no timer: a claim
not accepted by `claim_until` counts as gone wherever the call is read.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from typing import Any

from arck.reference.auth import Principal
from arck.reference.canonical import canonical_text
from arck.reference.errors import Conflict, ExecutorOffline, Forbidden, NotFound
from arck.reference.runtime.executor_wire import (
    Candidate,
    Claim,
    ExecutorCall,
    Grant,
    Subject,
)
from arck.reference.runtime.executors import Executors
from arck.reference.runtime.runstore import event
from arck.reference.store import Store
from arck.reference.strictjson import StrictJSONError, loads_strict

__all__ = ["CANDIDATE_LIMIT", "LEASE_SECONDS", "OPEN_STATES", "SCHEMA", "CallRow", "candidates",
           "claim", "current_claim", "detach_claimed", "executor_call", "find_call",
           "request_cancel", "scoped_call"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, call_id TEXT NOT NULL,
    executor_id TEXT NOT NULL, claimed_at REAL NOT NULL, lease_until REAL NOT NULL,
    state TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS claims_by_call ON claims (call_id, executor_id);
CREATE INDEX IF NOT EXISTS tool_calls_by_state ON tool_calls (state, seq);
"""
LEASE_SECONDS = 30.0  # a claim not accepted within it lapses (EXE-17)
CANDIDATE_LIMIT = 100
# A call in one of these has no final state yet: its run waits for it.
OPEN_STATES = ("dispatchable", "claimed", "accepted")


@dataclass(frozen=True)
class CallRow:
    """A tool call as the protocol reads it; `state` is as stored (see `view_state`)."""

    call_id: str
    run_id: str
    session_id: str
    tool_call_id: str
    name: str
    arguments: str
    budget: int
    state: str
    binding_id: str | None
    claim_id: str | None
    claim_until: float | None
    cancel_requested: bool
    last_sequence: int
    run_ended: bool

    def lapsed(self, at: float) -> bool:
        """Claimed, never accepted, and its lease is over: a candidate again (EXE-17)."""
        return self.state == "claimed" and (self.claim_until or 0.0) <= at

    def view_state(self, at: float) -> str:
        return "dispatchable" if self.lapsed(at) else self.state


def find_call(db: sqlite3.Connection, tenant: str, call_id: str) -> CallRow:
    """The call of the tenant, or 404 (another tenant's is as unknown)."""
    row = db.execute(
        "SELECT tc.id, tc.run_id, runs.session_id, tc.tool_call_id, tc.name, tc.arguments, "
        "tc.budget, tc.state, tc.binding_id, tc.claim_id, tc.claim_until, "
        "tc.cancel_requested, tc.last_sequence, runs.state = 'ended' "
        "FROM tool_calls tc JOIN runs ON runs.id = tc.run_id "
        "WHERE tc.id = ? AND runs.tenant = ?", (call_id, tenant)).fetchone()
    if row is None:
        raise NotFound("no tool call with this id", "call_id")
    return CallRow(str(row[0]), str(row[1]), str(row[2]), str(row[3]), str(row[4]),
                   str(row[5]), int(row[6]), str(row[7]), row[8], row[9], row[10],
                   bool(row[11]), int(row[12]), bool(row[13]))


def scoped_call(db: sqlite3.Connection, principal: Principal, call_id: str) -> CallRow:
    """404 for a call the tenant does not have, then 403 when its binding is outside the
    executor's scope; the answer names nothing of the call (EXE-03)."""
    call = find_call(db, principal.tenant, call_id)
    assert principal.executor_id is not None
    if call.binding_id not in Executors.bindings(db, principal.executor_id):
        raise Forbidden("the call's binding is outside this executor's scope", "call_id")
    return call


def current_claim(db: sqlite3.Connection, call: CallRow, executor_id: str, at: float) -> str | None:
    """The call's claim if it is current (not lapsed, not detached) and this executor's."""
    if call.claim_id is None or call.lapsed(at):
        return None
    row = db.execute("SELECT executor_id FROM claims WHERE id = ?", (call.claim_id,)).fetchone()
    return call.claim_id if row is not None and row[0] == executor_id else None


def candidates(db: sqlite3.Connection, principal: Principal, at: float) -> list[Candidate]:
    """Dispatchable calls (a lapsed claim included) of the tenant's runs not ended, whose
    binding is in the executor's scope; oldest first, at most 100. No arguments (EXE-03)."""
    assert principal.executor_id is not None
    bindings = Executors.bindings(db, principal.executor_id)
    marks = ", ".join("?" * len(bindings))
    rows = db.execute(
        "SELECT tc.id, tc.binding_id, tc.name, tc.cancel_requested "
        "FROM tool_calls tc JOIN runs ON runs.id = tc.run_id "
        "WHERE runs.tenant = ? AND runs.state != 'ended' AND "
        "(tc.state = 'dispatchable' OR (tc.state = 'claimed' AND tc.claim_until <= ?)) "
        f"AND tc.binding_id IN ({marks}) ORDER BY tc.seq LIMIT ?",
        (principal.tenant, at, *bindings, CANDIDATE_LIMIT)).fetchall()
    return [Candidate(call_id=r[0], binding_id=r[1], tool_name=r[2], cancel_requested=bool(r[3]))
            for r in rows]


def claim(db: sqlite3.Connection, principal: Principal, call: CallRow, at: float) -> Claim:
    """EXE-01: one conditional update decides; 409 `executor_offline` (EXE-02), 409 for a
    call not dispatchable or of a run that ended. The winner gets the grant (EXE-05)."""
    executor_id = principal.executor_id
    assert executor_id is not None
    if not Executors.online(db, executor_id, at):
        raise ExecutorOffline("the executor is offline: send a heartbeat first", "call_id")
    if call.run_ended:
        raise Conflict("the call's run has ended", "call_id")
    until = at + LEASE_SECONDS
    claim_id = Store.insert(db, "claims", "cl",
                            ("call_id", "executor_id", "claimed_at", "lease_until", "state"),
                            (call.call_id, executor_id, at, until, "claimed"))
    taken = db.execute(
        "UPDATE tool_calls SET state = 'claimed', claim_id = ?, claim_until = ? WHERE id = ? "
        "AND (state = 'dispatchable' OR (state = 'claimed' AND claim_until <= ?)) "
        "AND EXISTS (SELECT 1 FROM runs WHERE runs.id = tool_calls.run_id "
        "AND runs.state != 'ended')",
        (claim_id, until, call.call_id, at)).rowcount
    if taken != 1:
        raise Conflict("the call is not dispatchable: claimed, accepted or final", "call_id")
    if call.claim_id is not None and db.execute(
        "UPDATE claims SET state = 'lapsed' WHERE id = ? AND state = 'claimed'",
        (call.claim_id,),
    ).rowcount == 1:
        # Leases lapse by the clock, with no write of their own: the takeover records it.
        event(db, call.run_id, "tool_call.claim_lapsed", at, call_id=call.call_id,
              claim_id=call.claim_id, lapsed_at=call.claim_until)
    event(db, call.run_id, "tool_call.claimed", at, call_id=call.call_id, claim_id=claim_id,
          executor_id=executor_id, lease_until=until)
    return Claim(claim_id=claim_id, call_id=call.call_id, executor_id=executor_id,
                 lease_until=until, grant=grant(db, principal.tenant, call))


def grant(db: sqlite3.Connection, tenant: str, call: CallRow) -> Grant:
    """Subject, agent and the resource versions the call was planned under, its arguments
    parsed (the raw string when they do not parse) and their digest (EXE-05)."""
    agent_id, agent_version, subject, tool_set_id = db.execute(
        "SELECT sessions.agent_id, sessions.agent_version, sessions.subject, "
        "agent_versions.tool_set_id FROM sessions JOIN agent_versions "
        "ON agent_versions.id = sessions.agent_version WHERE sessions.id = ?",
        (call.session_id,)).fetchone()
    arguments = parse_arguments(call.arguments)
    digest = hashlib.sha256(canonical_text(arguments).encode()).hexdigest()
    return Grant(subject=Subject(tenant=tenant, id=subject or f"session:{call.session_id}"),
                 agent_id=agent_id, agent_version=agent_version, tool_set_id=tool_set_id,
                 tool_name=call.name, binding_id=call.binding_id or "", run_id=call.run_id,
                 call_id=call.call_id, arguments=arguments, arguments_digest=f"sha256:{digest}")


def parse_arguments(text: str) -> Any:
    try:
        return loads_strict(text.encode("utf-8", "surrogatepass"))
    except StrictJSONError:
        return text


def executor_call(db: sqlite3.Connection, principal: Principal, call_id: str,
                  at: float) -> ExecutorCall:
    """A call the executor holds or held a claim on; 404 otherwise (another's is unknown)."""
    assert principal.executor_id is not None
    held = db.execute("SELECT 1 FROM claims WHERE call_id = ? AND executor_id = ? LIMIT 1",
                      (call_id, principal.executor_id)).fetchone()
    if held is None:
        raise NotFound("no tool call this executor holds or held a claim on", "call_id")
    call = find_call(db, principal.tenant, call_id)
    return ExecutorCall(call_id=call_id, state=call.view_state(at),  # type: ignore[arg-type]
                        claim_id=current_claim(db, call, principal.executor_id, at),
                        cancel_requested=call.cancel_requested, run_ended=call.run_ended)


def detach_claimed(db: sqlite3.Connection, call: CallRow, at: float) -> None:
    """Before acceptance nothing ran: the call is dispatchable again (EXE-15)."""
    db.execute("UPDATE tool_calls SET state = 'dispatchable', claim_id = NULL, "
               "claim_until = NULL WHERE id = ? AND state = 'claimed' AND claim_id = ?",
               (call.call_id, call.claim_id))
    db.execute("UPDATE claims SET state = 'detached' WHERE id = ?", (call.claim_id,))
    if not call.run_ended:
        event(db, call.run_id, "tool_call.detached", at, call_id=call.call_id,
              claim_id=call.claim_id, accepted=False)


def request_cancel(db: sqlite3.Connection, call: CallRow, at: float) -> None:
    """EXE-12: only a request; the executor sends `cancelled` once the product confirms."""
    if call.state not in OPEN_STATES:
        raise Conflict(f"the call is {call.state}: there is nothing to cancel", "call_id")
    db.execute("UPDATE tool_calls SET cancel_requested = 1 WHERE id = ?", (call.call_id,))
    if not call.cancel_requested and not call.run_ended:
        event(db, call.run_id, "tool_call.cancel_requested", at, call_id=call.call_id)
