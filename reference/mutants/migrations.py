"""Mutants of the store migration (DEF-07): token budgets to byte budgets, done wrong.

Each replaces the `migrate` seam of `create_app` (reference/migrations.py), which runs at every
start of an app on a store; the one-time record, the rule per tool and what else is touched
are the reference's own otherwise.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from fastapi import FastAPI

from arck.reference import migrations
from arck.reference.canonical import canonical_text
from arck.reference.models import DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET
from arck.reference.mutants.base import serve
from arck.reference.projection import Projector
from arck.reference.store import Store

BYTES_PER_TOKEN = 4  # the conversion DEF-07 forbids


def _migrate(store: Store, rule: migrations.Rule, *, once: bool = True) -> list[str]:
    """`migrations.migrate` with another rule per tool (and, with `once` false, no look at
    the store's record)."""
    store.install(migrations.SCHEMA)
    with store.transaction() as db:
        if once and db.execute("SELECT 1 FROM store_revisions WHERE revision = ?",
                               (migrations.REVISION,)).fetchone() is not None:
            return []
        changed = migrations.rewrite_tool_sets(db, rule)
        db.execute("INSERT OR REPLACE INTO store_revisions (revision, name, tool_sets) "
                   "VALUES (?, ?, ?)", (migrations.REVISION, migrations.NAME, len(changed)))
    return changed


def _tokens_to_bytes(tool: dict[str, Any]) -> dict[str, Any] | None:
    migrated = migrations.migrated_tool(tool)
    tokens = tool.get(migrations.TOKEN_BUDGET)
    if migrated is not None and isinstance(tokens, int):
        migrated["max_result_context_bytes"] = max(MIN_BUDGET, min(MAX_BUDGET,
                                                                   tokens * BYTES_PER_TOKEN))
    return migrated


def tokens_to_bytes_migration(store: Store) -> object:
    """Token budgets converted at 4 bytes a token (clamped to 1,024..32,768), not replaced by
    the 16,384-byte default."""
    return _migrate(store, _tokens_to_bytes)


def _every_budget(tool: dict[str, Any]) -> dict[str, Any]:
    """The rule of a migration written for a store of revision 0, where every budget was
    token-based: every tool to the default."""
    kept = {k: v for k, v in tool.items() if k not in migrations.LEGACY_KEYS}
    return {**kept, "max_result_context_bytes": DEFAULT_BUDGET}


def every_start_migration(store: Store) -> object:
    """The one-time migration run at every start (its record never consulted); it resets
    every tool's budget to the default, those published since with their own budget too."""
    return _migrate(store, _every_budget, once=False)


def _reproject(db: sqlite3.Connection, tool_set_ids: list[str]) -> None:
    """Re-cut every projected tool message of those tool sets' sessions at the new budget,
    from its stored receipt: the committed execution history rewritten."""
    if not tool_set_ids:
        return
    marks = ", ".join("?" * len(tool_set_ids))
    rows = db.execute(
        "SELECT r.body, r.projection, c.tool_call_id, s.id FROM receipts r "
        "JOIN tool_calls c ON c.id = r.call_id JOIN runs u ON u.id = c.run_id "
        "JOIN sessions s ON s.id = u.session_id "
        "JOIN agent_versions v ON v.id = s.agent_version "
        f"WHERE r.kind = 'completed' AND r.projection != '' AND v.tool_set_id IN ({marks})",
        tool_set_ids).fetchall()
    projector = Projector()
    for body, projection, tool_call_id, session_id in rows:
        result = json.loads(body).get("result")
        content = canonical_text(projector.project(result, DEFAULT_BUDGET).result)
        for seq, item in db.execute("SELECT seq, item FROM history WHERE session_id = ? AND "
                                    "kind = 'execution'", (session_id,)).fetchall():
            message = json.loads(item)
            if (message.get("role") == "tool" and message.get("tool_call_id") == tool_call_id
                    and message.get("content") == projection):
                message["content"] = content
                db.execute("UPDATE history SET item = ? WHERE seq = ?",
                           (canonical_text(message), seq))


def reprojecting_migration(store: Store) -> object:
    """The reference migration, which then re-projects the committed execution history of the
    migrated tools' sessions at the new 16,384-byte budget."""
    store.install(migrations.SCHEMA)
    with store.transaction() as db:
        if db.execute("SELECT 1 FROM store_revisions WHERE revision = ?",
                      (migrations.REVISION,)).fetchone() is not None:
            return None
        changed = migrations.rewrite_tool_sets(db, migrations.migrated_tool)
        _reproject(db, changed)
        db.execute("INSERT INTO store_revisions (revision, name, tool_sets) VALUES (?, ?, ?)",
                   (migrations.REVISION, migrations.NAME, len(changed)))
    return changed


def tokens_to_bytes() -> FastAPI:
    return serve(migrate=tokens_to_bytes_migration)


def every_start() -> FastAPI:
    return serve(migrate=every_start_migration)


def reprojects_history() -> FastAPI:
    return serve(migrate=reprojecting_migration)
