"""Sessions, histories, runs, events, model calls, tool calls, receipts and calibration samples.

Every change of a run is one transaction with its events, so the event list and the snapshot
never disagree, and nothing about a run lives only in memory. State changes are conditional
updates (`WHERE state = ... AND worker = ...`): a worker that lost its run changes nothing.
Histories are append-only rows; the execution history of a session keeps running totals of its
size so a request's raw estimate costs nothing to compute (CTX-13) and is never rebuilt.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from arck.reference.canonical import canonical_text, utf8_length
from arck.reference.runtime import pacing
from arck.reference.runtime.changes import CHANGES
from arck.reference.store import Store

__all__ = ["LEASE_SCHEMA", "SCHEMA", "Claim", "RunStore", "SessionRow", "append", "event", "held"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL,
    agent_id TEXT NOT NULL, agent_version TEXT NOT NULL, wallet_id TEXT NOT NULL,
    channel_id TEXT NOT NULL, tools TEXT NOT NULL,
    exec_count INTEGER NOT NULL, exec_bytes INTEGER NOT NULL,
    pending_reserved TEXT, last_raw INTEGER, last_real INTEGER,
    exec_generation INTEGER NOT NULL DEFAULT 0, calls_since_summary INTEGER, subject TEXT);
CREATE TABLE IF NOT EXISTS history (
    seq INTEGER PRIMARY KEY, session_id TEXT NOT NULL, kind TEXT NOT NULL, item TEXT NOT NULL,
    generation INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS history_by_session ON history (session_id, kind, seq);
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL,
    session_id TEXT NOT NULL, state TEXT NOT NULL, end_reason TEXT, worker TEXT,
    lease_until REAL);
CREATE INDEX IF NOT EXISTS runs_by_state ON runs (state, seq);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs (session_id, state);
CREATE TABLE IF NOT EXISTS run_events (
    seq INTEGER PRIMARY KEY, run_id TEXT NOT NULL, n INTEGER NOT NULL, type TEXT NOT NULL,
    at REAL NOT NULL, data TEXT NOT NULL, UNIQUE (run_id, n));
CREATE TABLE IF NOT EXISTS model_calls (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, run_id TEXT NOT NULL,
    state TEXT NOT NULL, reservation INTEGER NOT NULL, charge INTEGER,
    raw INTEGER NOT NULL, set_key TEXT NOT NULL, usage TEXT, response TEXT,
    purpose TEXT NOT NULL DEFAULT 'main');
CREATE TABLE IF NOT EXISTS tool_calls (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, run_id TEXT NOT NULL,
    model_call_id TEXT NOT NULL, tool_call_id TEXT NOT NULL, name TEXT NOT NULL,
    arguments TEXT NOT NULL, budget INTEGER NOT NULL, state TEXT NOT NULL,
    binding_id TEXT, claim_id TEXT, claim_until REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0, last_sequence INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS receipts (
    seq INTEGER PRIMARY KEY, call_id TEXT NOT NULL, receipt_id TEXT NOT NULL,
    body TEXT NOT NULL, projection TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'completed', claim_id TEXT, applied INTEGER NOT NULL DEFAULT 1,
    answer TEXT, UNIQUE (call_id, receipt_id));
CREATE TABLE IF NOT EXISTS calibration_samples (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL,
    set_key TEXT NOT NULL, raw INTEGER NOT NULL, real INTEGER NOT NULL,
    model_call_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS samples_by_set ON calibration_samples (tenant, set_key, seq);
"""


# Leases (RUN-02): which app instance's workers exist, so worker names never repeat.
LEASE_SCHEMA = """
CREATE TABLE IF NOT EXISTS worker_instances (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, started_at REAL NOT NULL);
"""


@dataclass(frozen=True)
class Claim:
    """A run a worker now holds; `takeover`: it was running under a lease that expired."""

    run_id: str
    takeover: bool


@dataclass(frozen=True)
class SessionRow:
    session_id: str
    tenant: str
    agent_id: str
    agent_version: str
    wallet_id: str
    channel_id: str
    tools: str  # the canonical `tools` array sent with every request, or "" for none
    exec_count: int
    exec_bytes: int
    pending_reserved: str | None  # tool_call_id of an input/approval request to answer
    last: tuple[int, int] | None  # (raw, real prompt_tokens) of the last trusted call
    # Main calls completed since the last summary call (CTX-05); None: no summary yet.
    calls_since_summary: int | None = None
    subject: str | None = None  # as its creator named it; None: the default (not trusted)


def held(db: sqlite3.Connection, run_id: str, worker: str) -> bool:
    """The run is still running under `worker` (a worker that lost it changes nothing)."""
    return db.execute(
        "SELECT 1 FROM runs WHERE id = ? AND state = 'running' AND worker = ?", (run_id, worker)
    ).fetchone() is not None


def event(db: sqlite3.Connection, run_id: str, kind: str, at: float, /, **data: Any) -> None:
    """Append one event; ids count 1, 2, ... per run (a stream resumes from Last-Event-ID)."""
    row = db.execute(
        "SELECT COALESCE(MAX(n), 0) + 1 FROM run_events WHERE run_id = ?", (run_id,)
    ).fetchone()
    db.execute(
        "INSERT INTO run_events (run_id, n, type, at, data) VALUES (?, ?, ?, ?, ?)",
        (run_id, row[0], kind, at, canonical_text(data)),
    )
    CHANGES.changed(run_id)


def append(db: sqlite3.Connection, session_id: str, kind: str, item: dict[str, Any]) -> None:
    """Append to the formal or the execution history; the latter keeps its running size."""
    text = canonical_text(item)
    db.execute(
        "INSERT INTO history (session_id, kind, item, generation) "
        "SELECT ?, ?, ?, exec_generation FROM sessions WHERE id = ?",
        (session_id, kind, text, session_id),
    )
    if kind == "execution":
        db.execute(
            "UPDATE sessions SET exec_count = exec_count + 1, exec_bytes = exec_bytes + ? "
            "WHERE id = ?",
            (utf8_length(text), session_id),
        )


_ADDED_COLUMNS = (
    ("sessions", "exec_generation", "INTEGER NOT NULL DEFAULT 0"),
    ("sessions", "calls_since_summary", "INTEGER"),
    ("history", "generation", "INTEGER NOT NULL DEFAULT 0"),
    ("model_calls", "purpose", "TEXT NOT NULL DEFAULT 'main'"),
    # The executor protocol (docs/executors.md).
    ("sessions", "subject", "TEXT"),
    ("tool_calls", "binding_id", "TEXT"),
    ("tool_calls", "claim_id", "TEXT"),
    ("tool_calls", "claim_until", "REAL"),
    ("tool_calls", "cancel_requested", "INTEGER NOT NULL DEFAULT 0"),
    ("tool_calls", "last_sequence", "INTEGER NOT NULL DEFAULT 0"),
    ("receipts", "kind", "TEXT NOT NULL DEFAULT 'completed'"),
    ("receipts", "claim_id", "TEXT"),
    ("receipts", "applied", "INTEGER NOT NULL DEFAULT 1"),
    ("receipts", "answer", "TEXT"),
)


def _add_columns(store: Store) -> None:
    """Columns added since a table first existed (compaction's generations, summary
    spacing and call purpose; the executor protocol's) on an older file."""
    for table, column, kind in _ADDED_COLUMNS:
        if column not in {r[1] for r in store.read(f"PRAGMA table_info({table})")}:
            store.install(f"ALTER TABLE {table} ADD COLUMN {column} {kind};")
    store.install("CREATE INDEX IF NOT EXISTS history_by_generation "
                  "ON history (session_id, kind, generation, seq);")


class RunStore:
    def __init__(self, store: Store) -> None:
        self.store = store
        store.install(SCHEMA)
        store.install(LEASE_SCHEMA)
        store.install(pacing.SCHEMA)
        if "lease_until" not in {r[1] for r in store.read("PRAGMA table_info(runs)")}:
            store.install("ALTER TABLE runs ADD COLUMN lease_until REAL;")  # an older file
        _add_columns(store)

    def create_session(
        self,
        tenant: str,
        agent_id: str,
        agent_version: str,
        wallet_id: str,
        channel_id: str,
        system_prompt: str,
        tools: str,
        subject: str | None = None,
    ) -> str:
        """A session pinned to its version (DEF-04/05), its history opened by the system prompt;
        `subject` whom it acts for (EXE-05; NULL: `session:<session_id>`)."""
        with self.store.transaction() as db:
            session_id = Store.insert(
                db, "sessions", "ses",
                ("tenant", "agent_id", "agent_version", "wallet_id", "channel_id", "tools",
                 "exec_count", "exec_bytes", "subject"),
                (tenant, agent_id, agent_version, wallet_id, channel_id, tools, 0, 0, subject),
            )
            append(db, session_id, "execution", {"role": "system", "content": system_prompt})
        return session_id

    def session(self, tenant: str, session_id: str) -> SessionRow | None:
        rows = self.store.read(
            "SELECT tenant, agent_id, agent_version, wallet_id, channel_id, tools, exec_count, "
            "exec_bytes, pending_reserved, last_raw, last_real, calls_since_summary, subject "
            "FROM sessions WHERE id = ? AND tenant = ?",
            (session_id, tenant),
        )
        if not rows:
            return None
        r = rows[0]
        last = (int(r[9]), int(r[10])) if r[9] is not None else None
        return SessionRow(
            session_id=session_id, tenant=r[0], agent_id=r[1], agent_version=r[2],
            wallet_id=r[3], channel_id=r[4], tools=r[5], exec_count=int(r[6]),
            exec_bytes=int(r[7]), pending_reserved=r[8], last=last, calls_since_summary=r[11],
            subject=r[12],
        )

    def history(self, session_id: str, kind: str, generation: int | None = None) -> list[str]:
        """The stored items' canonical texts, in order: requests are joined from these bytes.

        The execution history is its current generation (or the one asked): a compaction
        writes a new one and keeps the old rows (CTX-07). The formal history has one.
        """
        if kind != "execution":
            rows = self.store.read(
                "SELECT item FROM history WHERE session_id = ? AND kind = ? ORDER BY seq",
                (session_id, kind),
            )
        else:
            rows = self.store.read(
                "SELECT item FROM history WHERE session_id = ? AND kind = 'execution' AND "
                "generation = COALESCE(?, (SELECT exec_generation FROM sessions WHERE id = ?)) "
                "ORDER BY seq",
                (session_id, generation, session_id),
            )
        return [str(r[0]) for r in rows]

    @staticmethod
    def rewrite_execution(db: sqlite3.Connection, session_id: str, items: list[str]) -> None:
        """A formal compaction (CTX-07): the canonical texts become the next generation of the
        execution history, the old rows stay, and the running sizes are recomputed once."""
        db.execute("UPDATE sessions SET exec_generation = exec_generation + 1, exec_count = ?, "
                   "exec_bytes = ? WHERE id = ?",
                   (len(items), sum(utf8_length(t) for t in items), session_id))
        db.executemany(
            "INSERT INTO history (session_id, kind, item, generation) "
            "SELECT ?, 'execution', ?, exec_generation FROM sessions WHERE id = ?",
            [(session_id, text, session_id) for text in items],
        )

    def receipt_facts(self, session_id: str) -> dict[str, dict[str, Any]]:
        """tool_call_id -> {"receipt_id", "status"?} of the session's completed calls: the
        business facts compaction keeps (a result's top-level `status`, if it is a scalar)."""
        rows = self.store.read(
            "SELECT tool_calls.tool_call_id, receipts.receipt_id, receipts.body FROM receipts "
            "JOIN tool_calls ON tool_calls.id = receipts.call_id "
            "JOIN runs ON runs.id = tool_calls.run_id WHERE runs.session_id = ? "
            "AND receipts.applied = 1 AND receipts.kind IN ('completed', 'failed', "
            "'cancelled', 'submission', 'reconciliation_required') ORDER BY receipts.seq",
            (session_id,),
        )
        facts: dict[str, dict[str, Any]] = {}
        for tool_call_id, receipt_id, body in rows:
            fact: dict[str, Any] = {"receipt_id": receipt_id}
            result = json.loads(body).get("result")
            status = result.get("status") if isinstance(result, dict) else None
            if isinstance(status, str | int | float | bool):
                fact["status"] = status
            facts[str(tool_call_id)] = fact
        return facts

    def run(self, tenant: str, run_id: str) -> tuple[str, str, str | None] | None:
        """(session_id, state, end_reason)."""
        rows = self.store.read(
            "SELECT session_id, state, end_reason FROM runs WHERE id = ? AND tenant = ?",
            (run_id, tenant),
        )
        return (rows[0][0], rows[0][1], rows[0][2]) if rows else None

    def run_session(self, run_id: str) -> SessionRow:
        rows = self.store.read("SELECT tenant, session_id FROM runs WHERE id = ?", (run_id,))
        found = self.session(rows[0][0], rows[0][1])
        assert found is not None
        return found

    def events(self, run_id: str) -> list[dict[str, Any]]:
        rows = self.store.read(
            "SELECT n, type, at, data FROM run_events WHERE run_id = ? ORDER BY n", (run_id,)
        )
        return [{"id": n, "type": t, "at": at, "data": json.loads(d)} for n, t, at, d in rows]

    def active_run(self, db: sqlite3.Connection, session_id: str) -> bool:
        """A run of the session not ended. The tool calls of an ended run hold nothing: their
        receipts are kept for audit and enter no history (EXE-13, docs/executors.md)."""
        busy = db.execute(
            "SELECT 1 FROM runs WHERE session_id = ? AND state != 'ended' LIMIT 1",
            (session_id,),
        ).fetchone()
        return busy is not None

    def register_instance(self, at: float) -> str:
        """A new id for a process's (or an app's) set of workers: worker names never repeat,
        so a restarted app never mistakes a dead worker's claim for its own."""
        with self.store.transaction() as db:
            return Store.insert(db, "worker_instances", "inst", ("started_at",), (at,))

    def claim(self, worker: str, at: float, lease: float = 0.0) -> Claim | None:
        """Take a run whose lease expired (RUN-02), else the oldest queued run.

        Both are conditional updates another worker (or process) cannot share: a takeover names
        the previous holder and lease it saw, so of two workers taking the same run only one
        matches. The new holder owns the run until `at + lease`, and renews while it works.
        """
        with self.store.transaction() as db:
            row = db.execute(
                "SELECT id, worker, lease_until FROM runs WHERE state = 'running' AND "
                "(lease_until IS NULL OR lease_until <= ?) ORDER BY seq LIMIT 1",
                (at,),
            ).fetchone()
            if row is not None:
                done = db.execute(
                    "UPDATE runs SET worker = ?, lease_until = ? WHERE id = ? AND "
                    "state = 'running' AND worker IS ? AND lease_until IS ?",
                    (worker, at + lease, row[0], row[1], row[2]),
                )
                if done.rowcount != 1:
                    return None
                event(db, row[0], "run.recovered", at, worker=worker, previous_worker=row[1],
                      lease_expired_at=row[2])
                return Claim(str(row[0]), takeover=True)
            row = db.execute(
                "SELECT id FROM runs WHERE state = 'queued' ORDER BY seq LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            done = db.execute(
                "UPDATE runs SET state = 'running', worker = ?, lease_until = ? WHERE id = ? "
                "AND state = 'queued'",
                (worker, at + lease, row[0]),
            )
            if done.rowcount != 1:
                return None
            event(db, row[0], "run.started", at, worker=worker)
            return Claim(str(row[0]), takeover=False)

    def renew(self, run_id: str, worker: str, until: float) -> bool:
        """Extend the lease of a run this worker still holds; False once it holds it no more."""
        with self.store.transaction() as db:
            done = db.execute(
                "UPDATE runs SET lease_until = ? WHERE id = ? AND state = 'running' AND "
                "worker = ? AND (lease_until IS NULL OR lease_until < ?)",
                (until, run_id, worker, until),
            )
            if done.rowcount == 1:
                return True
            return db.execute(
                "SELECT 1 FROM runs WHERE id = ? AND state = 'running' AND worker = ?",
                (run_id, worker),
            ).fetchone() is not None

    def next_lease_expiry(self) -> float | None:
        """When the earliest lease of a running run ends (an idle worker then looks again)."""
        rows = self.store.read("SELECT MIN(COALESCE(lease_until, 0)) FROM runs "
                               "WHERE state = 'running'")
        return None if rows[0][0] is None else float(rows[0][0])

    def events_after(self, run_id: str, after: int) -> list[dict[str, Any]]:
        """The run's events with ids above `after` (a stream resuming from Last-Event-ID)."""
        rows = self.store.read(
            "SELECT n, type, at, data FROM run_events WHERE run_id = ? AND n > ? ORDER BY n",
            (run_id, after),
        )
        return [{"id": n, "type": t, "at": at, "data": json.loads(d)} for n, t, at, d in rows]

    @staticmethod
    def end(
        db: sqlite3.Connection, run_id: str, reason: str, at: float, *, worker: str | None = None
    ) -> bool:
        """End the run (RUN-11) unless it ended already or another worker holds it."""
        sql = "UPDATE runs SET state = 'ended', end_reason = ?, worker = NULL WHERE id = ? " \
              "AND state != 'ended'"
        params: tuple[Any, ...] = (reason, run_id)
        if worker is not None:
            sql += " AND worker = ?"
            params += (worker,)
        if db.execute(sql, params).rowcount != 1:
            return False
        event(db, run_id, "run.ended", at, end_reason=reason)
        return True

    def samples(self, tenant: str, set_key: str, limit: int) -> list[tuple[int, int]]:
        """The last `limit` (raw, real) samples of a set, oldest first (CTX-10, CTX-16)."""
        rows = self.store.read(
            "SELECT raw, real FROM calibration_samples WHERE tenant = ? AND set_key = ? "
            "ORDER BY seq DESC LIMIT ?",
            (tenant, set_key, limit),
        )
        return [(int(a), int(b)) for a, b in reversed(rows)]

    def tool_calls(self, run_id: str, at: float) -> list[tuple[Any, ...]]:
        """(call_id, run_id, tool_call_id, name, arguments, state, cancel_requested) in order;
        a claim whose lease lapsed by `at` shows `dispatchable` (docs/executors.md)."""
        return self.store.read(
            "SELECT id, run_id, tool_call_id, name, arguments, CASE WHEN state = 'claimed' AND "
            "claim_until <= ? THEN 'dispatchable' ELSE state END, cancel_requested "
            "FROM tool_calls WHERE run_id = ? ORDER BY seq",
            (at, run_id),
        )
