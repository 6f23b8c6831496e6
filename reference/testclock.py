"""The test clock's time, kept in the store: a restarted `arck serve --test-clock` on the same
database goes on from where its clock was, as the harness's side of the clock does (RUN-02
over HTTP; docs/targets.md "Restart"). Only `arck serve`'s own clock is kept; a clock given
to `create_app` is the caller's."""

from __future__ import annotations

from arck.reference.clock import DEFAULT_START, ManualClock
from arck.reference.store import Store

__all__ = ["keep", "resumed"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS test_clock (
    id INTEGER PRIMARY KEY CHECK (id = 1), now REAL NOT NULL);
"""


def resumed(store: Store) -> ManualClock:
    """A manual clock at the time the store last kept, or at the default start."""
    store.install(_SCHEMA)
    rows = store.read("SELECT now FROM test_clock WHERE id = 1")
    return ManualClock(float(rows[0][0]) if rows else DEFAULT_START)


def keep(store: Store, now: float) -> None:
    """Keep the clock's time (after each advance), durably."""
    with store.transaction() as db:
        db.execute("INSERT INTO test_clock (id, now) VALUES (1, ?) "
                   "ON CONFLICT (id) DO UPDATE SET now = excluded.now", (now,))
