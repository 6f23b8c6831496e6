"""Input appended to a run while it is active (RUN-06; docs/runs.md "Appended input").

An appended input is stored pending, with its event, and enters the histories only at a point
the worker chooses, so no request is ever composed while its history moves:

* before a main call is composed (a new step, never a retry of a refused call), every pending
  input is appended, in order, after what the history holds (after the results of an accepted
  tool batch, which the run waited for);
* when the answer of the call in flight is applied and inputs arrived meanwhile: a tool plan
  is discarded (never stored, never dispatched: it was not yet accepted, RUN-16) and the run
  asks the model again with the input appended; text or a request for input or approval is
  applied as usual, the input appended after it (the first one answering the request) and
  the run goes on instead of ending.

A batch already accepted is never revoked: its calls stay dispatchable and the input waits.
Histories only grow (RUN-08): a discarded plan never entered them.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from arck.reference.runtime.runstore import append, event
from arck.reference.store import Store

__all__ = ["SCHEMA", "discard_plan", "pending", "record", "requeue", "take"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS run_inputs (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, run_id TEXT NOT NULL,
    session_id TEXT NOT NULL, text TEXT NOT NULL, state TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS run_inputs_by_run ON run_inputs (run_id, state, seq);
"""


def record(db: sqlite3.Connection, run_id: str, session_id: str, text: str, at: float) -> str:
    """Store the input pending (event `input.appended`); the caller checked the run is active."""
    input_id = Store.insert(db, "run_inputs", "in", ("run_id", "session_id", "text", "state"),
                            (run_id, session_id, text, "pending"))
    event(db, run_id, "input.appended", at, input_id=input_id)
    return input_id


def pending(db: sqlite3.Connection, run_id: str) -> list[tuple[str, str]]:
    """(input_id, text) of the run's inputs not yet in the histories, oldest first."""
    rows = db.execute("SELECT id, text FROM run_inputs WHERE run_id = ? AND state = 'pending' "
                      "ORDER BY seq", (run_id,)).fetchall()
    return [(str(a), str(b)) for a, b in rows]


def take(
    db: sqlite3.Connection, run_id: str, session_id: str, at: float, answer: str | None = None
) -> list[str]:
    """Append the pending inputs to both histories, in order (event `input.applied`). With
    `answer` (the tool_call_id of a request for input or approval) the first one is the `tool`
    message answering it, as the next run's input would be."""
    taken = pending(db, run_id)
    for n, (input_id, text) in enumerate(taken):
        if n == 0 and answer is not None:
            append(db, session_id, "execution",
                   {"role": "tool", "tool_call_id": answer, "content": text})
        else:
            append(db, session_id, "execution", {"role": "user", "content": text})
        append(db, session_id, "formal", {"type": "user", "text": text})
        db.execute("UPDATE run_inputs SET state = 'applied' WHERE id = ?", (input_id,))
    if taken:
        event(db, run_id, "input.applied", at, input_ids=[i for i, _ in taken])
    return [i for i, _ in taken]


def discard_plan(
    db: sqlite3.Connection, run_id: str, call_id: str, calls: list[dict[str, Any]], at: float
) -> None:
    """RUN-06: a plan answered after input arrived is never accepted nor dispatched."""
    event(db, run_id, "tool_plan.discarded", at, call_id=call_id,
          tool_call_ids=[str(c.get("id", "")) for c in calls],
          names=[str((c.get("function") or {}).get("name", "")) for c in calls],
          input_ids=[i for i, _ in pending(db, run_id)])


def requeue(db: sqlite3.Connection, run_id: str, worker: str, at: float, why: str) -> bool:
    """The run held by `worker` goes back to the queue for its next model call."""
    done = db.execute("UPDATE runs SET state = 'queued', worker = NULL, lease_until = NULL "
                      "WHERE id = ? AND state = 'running' AND worker = ?", (run_id, worker))
    if done.rowcount != 1:
        return False
    event(db, run_id, "run.queued", at, why=why)
    return True
