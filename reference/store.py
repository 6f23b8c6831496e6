"""Tenant-scoped SQLite storage of configuration: bindings, tool sets, versions, channels (DEF-04).

Every read takes the tenant, so another tenant's row is simply absent. Published tool sets and
agent versions are immutable: the store has no update method, and triggers abort any UPDATE or
DELETE that other code might try. Ids are sequential per store so a scenario replays
byte-identically.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence, Sized
from contextlib import contextmanager
from typing import Any, TypeVar

from arck.reference.models import AgentVersion, Binding, PublishedTool, ToolSet
from arck.reference.runtime.wire import Channel, ChannelCreate
from arck.reference.storagefaults import BUSY_TIMEOUT_S, is_storage_fault

__all__ = ["Store"]

_T = TypeVar("_T")
_log = logging.getLogger("arck.reference")
_Queued = tuple[Callable[[sqlite3.Connection], Any], "asyncio.Future[Any]"]
# How many turns of the event loop a group waits at most for what else is ready to run.
_GROUP_TURNS = 16

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bindings (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL,
    name TEXT NOT NULL, description TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS binding_capabilities (
    binding_id TEXT PRIMARY KEY, declaration TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS local_policies (
    binding_id TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tool_sets (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL,
    name TEXT NOT NULL, tools TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS agent_versions (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL,
    agent_id TEXT NOT NULL, tool_set_id TEXT NOT NULL, system_prompt TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS channels (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS version_runs (
    version_id TEXT PRIMARY KEY, channel_id TEXT NOT NULL, summary_channel_id TEXT,
    max_context_tokens INTEGER NOT NULL);
"""
_IMMUTABLE = ("tool_sets", "agent_versions", "version_runs", "channels",
              "binding_capabilities")
_TRIGGER = """
CREATE TRIGGER IF NOT EXISTS {table}_no_{op} BEFORE {op} ON {table}
BEGIN SELECT RAISE(ABORT, 'published {table} rows are immutable'); END;
"""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class Store:
    """One SQLite connection shared by threads behind a lock (sync endpoints run in a pool)."""

    def __init__(self, database: str = ":memory:") -> None:
        self._lock = threading.RLock()
        self._queued: list[_Queued] = []  # `grouped` work waiting for its group
        # Called inside every write transaction just before its COMMIT: the crash tests'
        # seam (reference/crashpoint.py); None in every ordinary use.
        self.before_commit: Callable[[], None] | None = None
        # A short busy timeout: the store runs on the event loop's thread, so waiting out
        # another process's lock would stall every request (storagefaults.py: 503 instead).
        self._db = sqlite3.connect(database, check_same_thread=False, isolation_level=None,
                                   timeout=BUSY_TIMEOUT_S)
        with self._lock:
            self._db.executescript(_SCHEMA)
            for table in _IMMUTABLE:
                for op in ("UPDATE", "DELETE"):
                    self._db.executescript(_TRIGGER.format(table=table, op=op))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE): committed whole or rolled back whole. A
        COMMIT that fails (a full disk) leaves nothing open: the next one starts clean."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                if self.before_commit is not None:
                    self.before_commit()
                self._db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        """Roll back what is still open; SQLite may have rolled it back itself already (after
        SQLITE_FULL or an I/O error), and a failing ROLLBACK must not hide the first error."""
        if self._db.in_transaction:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                _log.exception("ROLLBACK failed after an error in a transaction")

    async def grouped(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """`work` in a savepoint of one write transaction with the other `grouped` work queued
        by then (a group commit); its value, or its exception, once that has committed.

        Why: a commit's fsyncs cost more than a receipt's own work, and receipts that arrive
        together can share them. The group starts once nothing else is ready to run on the
        event loop (so requests already received join it; at most `_GROUP_TURNS` turns), and
        runs whole in that one callback, under the lock, like `transaction`: no other code
        ever sees it open. Each work runs in the order queued and sees the writes of those
        before it; a failing one is rolled back to its savepoint, alone. No answer, a refusal
        included (it may rest on an earlier work's writes), goes out before the commit that
        holds it, and a failed commit fails them all. On the event loop only.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        # Cancelled waiters, and any a closed loop left behind, are no longer waited for.
        self._queued = [(w, f) for w, f in self._queued if not f.done() and f.get_loop() is loop]
        self._queued.append((work, future))
        if len(self._queued) == 1:
            loop.call_soon(self._group, loop, 0)
        return await future

    def _group(self, loop: asyncio.AbstractEventLoop, turns: int) -> None:
        ready = getattr(loop, "_ready", None)  # CPython's queue of ready callbacks
        if isinstance(ready, Sized) and len(ready) > 0 and turns < _GROUP_TURNS:
            loop.call_soon(self._group, loop, turns + 1)  # after what is ready now
            return
        queued = [(work, future) for work, future in self._queued if not future.done()]
        self._queued = []
        if not queued:
            return
        outcomes: list[tuple[Any, Exception | None]] = []
        try:
            with self._lock:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    for work, _ in queued:
                        self._db.execute("SAVEPOINT grouped")
                        try:
                            outcomes.append((work(self._db), None))
                        except Exception as exc:
                            if is_storage_fault(exc) or not self._db.in_transaction:
                                raise  # the storage failed: the whole group with it
                            self._db.execute("ROLLBACK TO grouped")  # this work's answer
                            outcomes.append((None, exc))
                        self._db.execute("RELEASE grouped")
                    if self.before_commit is not None:
                        self.before_commit()
                    self._db.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
        except Exception as exc:
            outcomes = [(None, exc)] * len(queued)
        for (_, future), (value, error) in zip(queued, outcomes, strict=True):
            if future.done():  # cancelled meanwhile
                continue
            if error is None:
                future.set_result(value)
            else:
                future.set_exception(error)

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self._db.execute(sql, params).fetchall())

    def install(self, schema: str) -> None:
        """Add tables (and triggers) another module owns; `CREATE ... IF NOT EXISTS` only."""
        with self._lock:
            self._db.executescript(schema)

    @staticmethod
    def insert(
        db: sqlite3.Connection,
        table: str,
        prefix: str,
        columns: Sequence[str],
        values: Sequence[Any],
    ) -> str:
        """Insert a row with the next sequential id of its table, inside a transaction."""
        row = db.execute(f"SELECT COALESCE(MAX(seq), 0) + 1 FROM {table}").fetchone()
        new_id = f"{prefix}-{row[0]:06d}"
        names = ", ".join(("seq", "id", *columns))
        marks = ", ".join("?" * (len(columns) + 2))
        db.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", (row[0], new_id, *values))
        return new_id

    def _insert(
        self, table: str, prefix: str, columns: Sequence[str], values: Sequence[Any]
    ) -> str:
        with self.transaction() as db:
            return self.insert(db, table, prefix, columns, values)

    def _row(self, table: str, columns: str, tenant: str, row_id: str) -> tuple[Any, ...] | None:
        with self._lock:
            row: tuple[Any, ...] | None = self._db.execute(
                f"SELECT {columns} FROM {table} WHERE id = ? AND tenant = ?", (row_id, tenant)
            ).fetchone()
        return row

    def add_binding(self, tenant: str, name: str, description: str,
                    capability: dict[str, Any] | None = None) -> Binding:
        """A binding, with its capability declaration (kept as sent) in the same commit."""
        with self.transaction() as db:
            new_id = self._insert_binding(db, tenant, name, description, capability)
        return Binding(binding_id=new_id, name=name, description=description,
                       capability=capability)

    def _insert_binding(self, db: sqlite3.Connection, tenant: str, name: str,
                        description: str, capability: dict[str, Any] | None) -> str:
        new_id = self.insert(db, "bindings", "bnd", ("tenant", "name", "description"),
                             (tenant, name, description))
        if capability is not None:
            db.execute("INSERT INTO binding_capabilities (binding_id, declaration) "
                       "VALUES (?, ?)", (new_id, _dumps(capability)))
        return new_id

    def binding(self, tenant: str, binding_id: str) -> Binding | None:
        with self._lock:
            row: tuple[Any, ...] | None = self._db.execute(
                "SELECT b.name, b.description, c.declaration FROM bindings b LEFT JOIN "
                "binding_capabilities c ON c.binding_id = b.id WHERE b.id = ? AND b.tenant = ?",
                (binding_id, tenant)).fetchone()
        if row is None:
            return None
        return Binding(binding_id=binding_id, name=row[0], description=row[1],
                       capability=json.loads(row[2]) if row[2] is not None else None)

    def set_local_policy(self, binding_id: str, body: dict[str, Any]) -> None:
        """A deployment setting, replaced whole (bindings themselves never change)."""
        with self.transaction() as db:
            db.execute("INSERT INTO local_policies (binding_id, body) VALUES (?, ?) "
                       "ON CONFLICT (binding_id) DO UPDATE SET body = excluded.body",
                       (binding_id, _dumps(body)))

    def local_policy(self, binding_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT body FROM local_policies WHERE binding_id = ?",
                                   (binding_id,)).fetchone()
        return json.loads(row[0]) if row is not None else None

    def add_imported(self, tenant: str, name: str, bindings: Sequence[Binding],
                     tools: Sequence[PublishedTool]) -> ToolSet:
        """An import's bindings and the tool set whose tools name them, in one commit: the
        `i`-th tool names the `i`-th binding (its `binding_id` is filled in here)."""
        with self.transaction() as db:
            named = [tool.model_copy(update={"binding_id": self._insert_binding(
                db, tenant, binding.name, binding.description, binding.capability)})
                for binding, tool in zip(bindings, tools, strict=True)]
            return self._insert_tool_set(db, tenant, name, named)

    def add_tool_set(self, tenant: str, name: str, tools: Sequence[PublishedTool]) -> ToolSet:
        with self.transaction() as db:
            return self._insert_tool_set(db, tenant, name, tools)

    def _insert_tool_set(self, db: sqlite3.Connection, tenant: str, name: str,
                         tools: Sequence[PublishedTool]) -> ToolSet:
        text = _dumps([tool.model_dump() for tool in tools])
        new_id = self.insert(db, "tool_sets", "ts", ("tenant", "name", "tools"),
                             (tenant, name, text))
        return ToolSet(tool_set_id=new_id, name=name, tools=list(tools))

    def tool_set(self, tenant: str, tool_set_id: str) -> ToolSet | None:
        row = self._row("tool_sets", "name, tools", tenant, tool_set_id)
        if row is None:
            return None
        return ToolSet.model_validate(
            {"tool_set_id": tool_set_id, "name": row[0], "tools": json.loads(row[1])}
        )

    def add_channel(self, tenant: str, channel: ChannelCreate) -> Channel:
        """A model channel; immutable like versions, which pin it."""
        body = channel.model_dump()
        new_id = self._insert("channels", "ch", ("tenant", "body"), (tenant, _dumps(body)))
        return Channel(channel_id=new_id, **body)

    def channel(self, tenant: str, channel_id: str) -> Channel | None:
        row = self._row("channels", "body", tenant, channel_id)
        return None if row is None else Channel(channel_id=channel_id, **json.loads(row[0]))

    def add_version(
        self,
        tenant: str,
        agent_id: str,
        tool_set_id: str,
        system_prompt: str,
        *,
        channel_id: str | None = None,
        summary_channel_id: str | None = None,
        max_context_tokens: int | None = None,
    ) -> AgentVersion:
        """A version, with its run settings (docs/runs.md) when it names a channel."""
        with self.transaction() as db:
            new_id = self.insert(
                db,
                "agent_versions",
                "av",
                ("tenant", "agent_id", "tool_set_id", "system_prompt"),
                (tenant, agent_id, tool_set_id, system_prompt),
            )
            if channel_id is not None:
                db.execute(
                    "INSERT INTO version_runs VALUES (?, ?, ?, ?)",
                    (new_id, channel_id, summary_channel_id, max_context_tokens),
                )
        return AgentVersion(
            agent_version=new_id,
            agent_id=agent_id,
            tool_set_id=tool_set_id,
            system_prompt=system_prompt,
            channel_id=channel_id,
            summary_channel_id=summary_channel_id,
            max_context_tokens=max_context_tokens,
        )

    def version(self, tenant: str, version_id: str) -> AgentVersion | None:
        row = self._row(
            "agent_versions", "agent_id, tool_set_id, system_prompt", tenant, version_id
        )
        if row is None:
            return None
        runs = self.read(
            "SELECT channel_id, summary_channel_id, max_context_tokens FROM version_runs "
            "WHERE version_id = ?",
            (version_id,),
        )
        names = ("channel_id", "summary_channel_id", "max_context_tokens")
        settings: dict[str, Any] = dict(zip(names, runs[0], strict=True)) if runs else {}
        return AgentVersion(
            agent_version=version_id,
            agent_id=row[0],
            tool_set_id=row[1],
            system_prompt=row[2],
            **settings,
        )
