"""Tool permissions revoked while runs are active (RUN-14; docs/runs.md "Permission revocation").

A permission, in the reference, is an agent's right to have one of its tools dispatched: a tool
name of the agent (any version). `POST /v1/agents/{agent_id}/tool-revocations` takes it away
for good. The revocation's transaction records event `permission.revoked` on every active run
of the agent whose pinned tools hold the name, so it takes effect at once:

* a tool plan answered after it is never accepted: its calls are stored `revoked` (listed,
  never dispatchable) and the run ends `permission_changed`; likewise a plan of any run that
  names a revoked tool;
* a run that received the event ends `permission_changed` at its next step, before any model
  call; a turn that ends the run anyway (text, a request for input) ends it as usual;
* calls already dispatchable were dispatched before: they stay so, and their receipts are
  accepted.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import Any

from arck.reference.runtime.runstore import RunStore, event
from arck.reference.store import Store

__all__ = ["SCHEMA", "end_if_revoked", "refuse_plan", "refused", "revoke"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_revocations (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL,
    agent_id TEXT NOT NULL, tool_name TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS revocations_by_agent ON tool_revocations (tenant, agent_id);
"""


def _names(tools: str) -> set[str]:
    """The function names of a session's canonical `tools` array ("" for none)."""
    found = json.loads(tools) if tools else []
    return {str((t.get("function") or {}).get("name", "")) for t in found if isinstance(t, dict)}


def revoke(
    db: sqlite3.Connection, tenant: str, agent_id: str, tool_name: str, at: float
) -> tuple[str, list[str]]:
    """Record the revocation and tell every active run it reaches; (revocation id, run ids)."""
    revocation_id = Store.insert(db, "tool_revocations", "rev",
                                 ("tenant", "agent_id", "tool_name", "at"),
                                 (tenant, agent_id, tool_name, at))
    rows = db.execute(
        "SELECT runs.id, sessions.tools FROM runs JOIN sessions ON sessions.id = runs.session_id "
        "WHERE runs.tenant = ? AND sessions.agent_id = ? AND runs.state != 'ended' "
        "ORDER BY runs.seq", (tenant, agent_id)).fetchall()
    reached = [str(run_id) for run_id, tools in rows if tool_name in _names(str(tools))]
    for run_id in reached:
        event(db, run_id, "permission.revoked", at, revocation_id=revocation_id,
              agent_id=agent_id, tool_name=tool_name)
    return revocation_id, reached


def _revoked_during(db: sqlite3.Connection, run_id: str) -> list[str]:
    rows = db.execute("SELECT data FROM run_events WHERE run_id = ? AND "
                      "type = 'permission.revoked' ORDER BY n", (run_id,)).fetchall()
    return [str(json.loads(r[0]).get("tool_name")) for r in rows]


def refused(
    db: sqlite3.Connection, run_id: str, tenant: str, agent_id: str, names: list[str]
) -> list[str]:
    """Why a plan of these tool names cannot be accepted: the tools revoked during the run,
    and any named tool revoked for the agent at all; empty when it can."""
    revoked = {str(r[0]) for r in db.execute(
        "SELECT tool_name FROM tool_revocations WHERE tenant = ? AND agent_id = ?",
        (tenant, agent_id))}
    return sorted(set(_revoked_during(db, run_id)) | (revoked & set(names)))


def refuse_plan(
    db: sqlite3.Connection, run_id: str, worker: str, call_id: str,
    calls: list[dict[str, Any]], why: list[str], at: float, bindings: Mapping[str, str],
) -> None:
    """The plan is never dispatchable: its calls are listed `revoked`, the run ends. Each
    keeps its tool's binding, so an executor holding it is told 409 (the call's state), not
    403 (docs/executors.md)."""
    ids = []
    for call in calls:
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        ids.append(Store.insert(
            db, "tool_calls", "tc",
            ("run_id", "model_call_id", "tool_call_id", "name", "arguments", "budget", "state",
             "binding_id"),
            (run_id, call_id, str(call.get("id", "")), name,
             str(function.get("arguments", "")), 0, "revoked", bindings.get(name))))
    event(db, run_id, "tool_plan.refused", at, call_id=call_id, call_ids=ids, revoked=why)
    RunStore.end(db, run_id, "permission_changed", at, worker=worker)


def end_if_revoked(db: sqlite3.Connection, run_id: str, worker: str, at: float) -> bool:
    """At a step: a run told of a revocation ends `permission_changed` before its next call."""
    why = _revoked_during(db, run_id)
    if not why:
        return False
    event(db, run_id, "permission.enforced", at, revoked=sorted(set(why)))
    return RunStore.end(db, run_id, "permission_changed", at, worker=worker)
