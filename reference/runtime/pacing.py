"""Pacing (CAP-08): dispatches of an operation held to its effective `rate_limit` before any
reaches the business system (docs/capabilities.md, "Pacing").

The reference profile counts a sliding window per operation (binding) × tenant: a call is
dispatched at time t only if fewer than `count` dispatches of that operation and tenant lie
in the half-open window (t − window, t]. Otherwise it is never stored as dispatchable: the
engine answers it at once with a `tool` message the model can read (`rate_limited`, with the
milliseconds until the window has room), and the run goes on. Dispatch times are kept in the
store, in integer milliseconds of the engine's clock, so a restart forgets no window and a
boundary is exact.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from arck.reference.capability import ExecutionPolicy, window_ms

__all__ = ["SCHEMA", "admit", "rate_limited", "record"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS dispatches (
    seq INTEGER PRIMARY KEY, tenant TEXT NOT NULL, binding_id TEXT NOT NULL,
    at_ms INTEGER NOT NULL, call_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS dispatches_by_operation ON dispatches (tenant, binding_id, at_ms);
"""


def admit(
    db: sqlite3.Connection, tenant: str, policy: ExecutionPolicy, at: float, call_id: str
) -> int | None:
    """Record the dispatch of `call_id` if the window has room: None. Else the milliseconds
    until it has (at least 1), and nothing recorded. No rate limit: always admitted."""
    limit = policy.rate_limit
    if limit is None:
        return None
    now, window, count = round(at * 1000), window_ms(str(limit["window"])), int(limit["count"])
    # The count-th newest dispatch inside the window, read backwards on the index: none, the
    # window has room; else the room comes once it (the oldest that keeps it full) leaves.
    full = db.execute(
        "SELECT at_ms FROM dispatches WHERE tenant = ? AND binding_id = ? AND at_ms > ? "
        "ORDER BY at_ms DESC LIMIT 1 OFFSET ?",
        (tenant, policy.binding_id, now - window, count - 1)).fetchone()
    if full is not None:
        return max(1, int(full[0]) + window - now)
    record(db, tenant, policy.binding_id, now, call_id)
    return None


def record(db: sqlite3.Connection, tenant: str, binding_id: str, at_ms: int,
           call_id: str) -> None:
    """Count one dispatch of the operation at `at_ms`."""
    db.execute("INSERT INTO dispatches (tenant, binding_id, at_ms, call_id) VALUES (?, ?, ?, ?)",
               (tenant, binding_id, at_ms, call_id))


def rate_limited(name: str, retry_after_ms: int) -> dict[str, Any]:
    """The engine's answer to a call its operation's rate limit refused before dispatch."""
    return {"error": {
        "code": "rate_limited", "retry_after_ms": retry_after_ms,
        "message": f"{name!r} is paced by its declared rate limit (CAP-08): nothing was run; "
                   f"the operation has room again in {retry_after_ms} ms"}}
