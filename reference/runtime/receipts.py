"""Receipt intake by kind, in the judgement order of docs/executors.md, and the finals that
enter a run's histories.

Why a module of its own: what a receipt does is decided in one place and in one order —
replay (EXE-08/09), claim (EXE-17), run ended (EXE-13), kind and state (EXE-14) — inside one
transaction, so a second delivery never finds the first in flight. The projection of a final
into the execution history stays the runtime's seam (`Runtime._context_text`), passed in.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from arck.reference.canonical import canonical_text
from arck.reference.errors import Conflict, ValidationFailed
from arck.reference.runtime.claims import OPEN_STATES, CallRow, current_claim
from arck.reference.runtime.executor_wire import FINAL_KINDS, Receipt, ReceiptAnswer
from arck.reference.runtime.runstore import append, event

__all__ = ["CALL_STATE", "DETACHED", "PROJECTED", "PROTECTED", "ContextText", "finish",
           "history_value", "members", "take"]

# A call's state once its final receipt is stored, by the receipt's kind.
CALL_STATE = {"completed": "completed", "failed": "failed", "cancelled": "cancelled",
              "submission": "submitted", "reconciliation_required": "reconciliation_required"}
PROJECTED = frozenset({"completed", "failed"})  # cut to the tool's budget (BUD-15)
PROTECTED = frozenset({"submission", "reconciliation_required"})  # enter whole (BUD-18)
DETACHED = {"outcome": "unknown", "reason": "executor detached after acceptance"}
# Which members each kind takes beyond receipt_id, claim_id and kind; and which it needs.
_TAKES: dict[str, tuple[str, ...]] = {
    "accepted": (), "progress": ("sequence", "data"), "completed": ("result",),
    "failed": ("error",), "cancelled": ("reason",), "submission": ("result",),
    "reconciliation_required": ("result",)}
_NEEDS: dict[str, tuple[str, ...]] = {
    "progress": ("sequence",), "completed": ("result",), "failed": ("error",),
    "submission": ("result",)}
_OPTIONAL = ("result", "error", "reason", "sequence", "data")
ContextText = Callable[[Receipt, int], tuple[str, dict[str, Any]]]

_FINALS = tuple(sorted(FINAL_KINDS))
_FINAL_MARKS = ", ".join("?" * len(_FINALS))


def members(receipt: Receipt) -> None:
    """422 naming the member a kind does not take, or the one it needs and lacks."""
    for name in _OPTIONAL:
        if name in receipt.model_fields_set and name not in _TAKES[receipt.kind]:
            raise ValidationFailed(f"/{name}: not a member of a {receipt.kind} receipt",
                                   f"/{name}")
    for name in _NEEDS.get(receipt.kind, ()):
        # `result` may be any JSON value, null too; a null error or sequence is none at all
        # (it reached the history and the progress order as one: a 500).
        if name not in receipt.model_fields_set or (
                name in ("error", "sequence") and getattr(receipt, name) is None):
            raise ValidationFailed(f"/{name}: required in a {receipt.kind} receipt", f"/{name}")


def history_value(receipt: Receipt) -> Any:
    """What a final enters the execution history as (docs/executors.md, Receipts)."""
    if receipt.kind == "failed":
        assert receipt.error is not None
        return {"error": receipt.error.model_dump()}
    if receipt.kind == "cancelled":
        return {"cancelled": True, "reason": receipt.reason}
    if receipt.kind == "reconciliation_required" and "result" not in receipt.model_fields_set:
        return {"outcome": "unknown"}
    return receipt.result


def take(db: sqlite3.Connection, executor_id: str, call: CallRow, receipt: Receipt,
         body: dict[str, Any], at: float, context_text: ContextText) -> ReceiptAnswer:
    """One receipt, judged in order: replay, claim, one final, run ended, kind and state."""
    text = canonical_text(body)
    seen = db.execute("SELECT body, answer FROM receipts WHERE call_id = ? AND receipt_id = ?",
                      (call.call_id, receipt.receipt_id)).fetchone()
    if seen is not None:  # 1. replay (EXE-08, EXE-09)
        if seen[0] != text:
            raise Conflict("this receipt_id was sent with another body; nothing was changed",
                           "/receipt_id")
        first = json.loads(seen[1]) if seen[1] else {
            "call_id": call.call_id, "receipt_id": receipt.receipt_id,
            "state": call.view_state(at), "run_ended": call.run_ended, "applied": True}
        return ReceiptAnswer(**{**first, "replayed": True})
    if current_claim(db, call, executor_id, at) != receipt.claim_id:  # 2. claim (EXE-17)
        raise Conflict("the claim is not the call's current claim held by this executor "
                       "(lapsed, detached or another's)", "/claim_id")
    if receipt.kind in FINAL_KINDS and db.execute(  # 3. one final (EXE-14)
        f"SELECT 1 FROM receipts WHERE call_id = ? AND kind IN ({_FINAL_MARKS}) LIMIT 1",
        (call.call_id, *_FINALS),
    ).fetchone() is not None:
        raise Conflict("the call has its final receipt already (EXE-14)", "/kind")
    if call.run_ended:  # 4. run ended (EXE-13)
        if receipt.kind == "accepted":
            raise Conflict("the run has ended: acceptance is refused, nothing may start",
                           "call_id")
        return _store(db, call, receipt, text, call.view_state(at), applied=False)
    if receipt.kind == "accepted":  # 5. kind and state
        _move(db, call, "claimed", "accepted", "the call is not claimed: accepted already or "
              "final")
        db.execute("UPDATE claims SET state = 'accepted' WHERE id = ?", (call.claim_id,))
        event(db, call.run_id, "tool_call.accepted", at, call_id=call.call_id,
              claim_id=call.claim_id, receipt_id=receipt.receipt_id)
        return _store(db, call, receipt, text, "accepted")
    if call.state != "accepted":
        why = ("the call has its final receipt already" if call.state not in OPEN_STATES
               else "the call is not accepted yet: send an accepted receipt first")
        raise Conflict(why, "/kind")
    if receipt.kind == "progress":
        assert receipt.sequence is not None
        if db.execute("UPDATE tool_calls SET last_sequence = ? WHERE id = ? AND "
                      "last_sequence < ?", (receipt.sequence, call.call_id,
                                            receipt.sequence)).rowcount != 1:
            raise Conflict(f"/sequence: must be above the call's last, {call.last_sequence}",
                           "/sequence")
        data = {"data": receipt.data} if "data" in receipt.model_fields_set else {}
        event(db, call.run_id, "tool_call.progress", at, call_id=call.call_id,
              receipt_id=receipt.receipt_id, sequence=receipt.sequence, **data)
        return _store(db, call, receipt, text, "accepted")
    content, figures = context_text(receipt, call.budget)
    item = {k: v for k, v in body.items() if k != "claim_id"}
    answer = _store(db, call, receipt, text, CALL_STATE[receipt.kind], projection=content)
    finish(db, call, receipt.receipt_id, receipt.kind, content, figures, item, at)
    return answer


def finish(db: sqlite3.Connection, call: CallRow, receipt_id: str, kind: str, content: str,
           figures: dict[str, Any], item: dict[str, Any], at: float) -> None:
    """A final enters both histories (BUD-15..18): the receipt whole in the formal one, the
    tool message in the execution one; the run is queued again once every call of its batch
    is final or revoked."""
    assert kind in FINAL_KINDS
    _move(db, call, "accepted", CALL_STATE[kind], "the call is not accepted")
    append(db, call.session_id, "formal", {"type": "receipt", "call_id": call.call_id, **item})
    append(db, call.session_id, "execution", {"role": "tool", "tool_call_id": call.tool_call_id,
                                              "content": content})
    event(db, call.run_id, "receipt.stored", at, call_id=call.call_id, receipt_id=receipt_id,
          kind=kind, **figures)
    marks = ", ".join("?" * len(OPEN_STATES))
    waiting = db.execute(f"SELECT 1 FROM tool_calls WHERE run_id = ? AND state IN ({marks}) "
                         "LIMIT 1", (call.run_id, *OPEN_STATES)).fetchone()
    if waiting is None and db.execute(
        "UPDATE runs SET state = 'queued' WHERE id = ? AND state = 'waiting_tools'",
        (call.run_id,),
    ).rowcount == 1:
        event(db, call.run_id, "run.queued", at)


def _move(db: sqlite3.Connection, call: CallRow, before: str, after: str, why: str) -> None:
    """A conditional update of the call's state under its claim; 409 if it moved meanwhile."""
    if db.execute("UPDATE tool_calls SET state = ? WHERE id = ? AND state = ? AND claim_id IS ?",
                  (after, call.call_id, before, call.claim_id)).rowcount != 1:
        raise Conflict(why, "/kind")


def _store(db: sqlite3.Connection, call: CallRow, receipt: Receipt, text: str, state: str,
           *, applied: bool = True, projection: str = "") -> ReceiptAnswer:
    answer = ReceiptAnswer(call_id=call.call_id, receipt_id=receipt.receipt_id, replayed=False,
                           state=state, run_ended=call.run_ended,  # type: ignore[arg-type]
                           applied=applied)
    db.execute("INSERT INTO receipts (call_id, receipt_id, body, projection, kind, claim_id, "
               "applied, answer) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               (call.call_id, receipt.receipt_id, text, projection, receipt.kind,
                receipt.claim_id, int(applied), canonical_text(answer.model_dump())))
    return answer
