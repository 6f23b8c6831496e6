"""Tenant-scoped SQLite storage for bindings, tool sets and agent versions (DEF-04, AUTH-03).

Every read takes the tenant, so another tenant's row is simply absent. Published tool sets and
agent versions are immutable: the store has no update method, and triggers abort any UPDATE or
DELETE that other code might try. Ids are sequential per store so a scenario replays
byte-identically.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from arck.reference.models import AgentVersion, Binding, PublishedTool, ToolSet

__all__ = ["Store"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bindings (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL,
    name TEXT NOT NULL, description TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tool_sets (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL,
    name TEXT NOT NULL, tools TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS agent_versions (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL,
    agent_id TEXT NOT NULL, tool_set_id TEXT NOT NULL, system_prompt TEXT NOT NULL);
"""
_IMMUTABLE = ("tool_sets", "agent_versions")
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
        self._db = sqlite3.connect(database, check_same_thread=False, isolation_level=None)
        with self._lock:
            self._db.executescript(_SCHEMA)
            for table in _IMMUTABLE:
                for op in ("UPDATE", "DELETE"):
                    self._db.executescript(_TRIGGER.format(table=table, op=op))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _insert(
        self, table: str, prefix: str, columns: Sequence[str], values: Sequence[Any]
    ) -> str:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(f"SELECT COALESCE(MAX(seq), 0) + 1 FROM {table}").fetchone()
                new_id = f"{prefix}-{row[0]:06d}"
                names = ", ".join(("seq", "id", *columns))
                marks = ", ".join("?" * (len(columns) + 2))
                self._db.execute(
                    f"INSERT INTO {table} ({names}) VALUES ({marks})", (row[0], new_id, *values)
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return new_id

    def _row(self, table: str, columns: str, tenant: str, row_id: str) -> tuple[Any, ...] | None:
        with self._lock:
            row: tuple[Any, ...] | None = self._db.execute(
                f"SELECT {columns} FROM {table} WHERE id = ? AND tenant = ?", (row_id, tenant)
            ).fetchone()
        return row

    def add_binding(self, tenant: str, name: str, description: str) -> Binding:
        new_id = self._insert(
            "bindings", "bnd", ("tenant", "name", "description"), (tenant, name, description)
        )
        return Binding(binding_id=new_id, name=name, description=description)

    def binding(self, tenant: str, binding_id: str) -> Binding | None:
        row = self._row("bindings", "name, description", tenant, binding_id)
        if row is None:
            return None
        return Binding(binding_id=binding_id, name=row[0], description=row[1])

    def add_tool_set(self, tenant: str, name: str, tools: Sequence[PublishedTool]) -> ToolSet:
        text = _dumps([tool.model_dump() for tool in tools])
        new_id = self._insert("tool_sets", "ts", ("tenant", "name", "tools"), (tenant, name, text))
        return ToolSet(tool_set_id=new_id, name=name, tools=list(tools))

    def tool_set(self, tenant: str, tool_set_id: str) -> ToolSet | None:
        row = self._row("tool_sets", "name, tools", tenant, tool_set_id)
        if row is None:
            return None
        return ToolSet.model_validate(
            {"tool_set_id": tool_set_id, "name": row[0], "tools": json.loads(row[1])}
        )

    def add_version(
        self, tenant: str, agent_id: str, tool_set_id: str, system_prompt: str
    ) -> AgentVersion:
        new_id = self._insert(
            "agent_versions",
            "av",
            ("tenant", "agent_id", "tool_set_id", "system_prompt"),
            (tenant, agent_id, tool_set_id, system_prompt),
        )
        return AgentVersion(
            agent_version=new_id,
            agent_id=agent_id,
            tool_set_id=tool_set_id,
            system_prompt=system_prompt,
        )

    def version(self, tenant: str, version_id: str) -> AgentVersion | None:
        row = self._row(
            "agent_versions", "agent_id, tool_set_id, system_prompt", tenant, version_id
        )
        if row is None:
            return None
        return AgentVersion(
            agent_version=version_id, agent_id=row[0], tool_set_id=row[1], system_prompt=row[2]
        )
