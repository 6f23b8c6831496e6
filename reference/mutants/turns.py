"""Mutants of turns (RUN-06, RUN-10, RUN-14): one defect each, on the runtime's seams.

An appended input that withdraws a batch already accepted, a chat-history tool that reads the
execution history (receipts and all), a revocation that lets a plan in flight through,
pending input taken in before a revocation ends the run, a refused plan's calls stored without
their binding.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.mutants.base import serve
from arck.reference.runtime import inputs, revocations
from arck.reference.runtime.runstore import event, held
from arck.reference.runtime.service import Runtime
from arck.reference.runtime.wire import InputAccepted
from arck.reference.runtime.worker import Workers


class InputRevokesBatchRuntime(Runtime):
    """Input appended while an accepted batch waits withdraws the batch and queues the run
    (RUN-06: a batch already accepted is never revoked by later input)."""

    def append_input(self, principal: Principal, run_id: str, data: object) -> InputAccepted:
        answer = super().append_input(principal, run_id, data)
        with self.store.transaction() as db:
            withdrawn = db.execute("UPDATE tool_calls SET state = 'completed' WHERE run_id = ? "
                                   "AND state = 'dispatchable'", (run_id,)).rowcount
            if withdrawn and db.execute("UPDATE runs SET state = 'queued' WHERE id = ? AND "
                                        "state = 'waiting_tools'", (run_id,)).rowcount:
                event(db, run_id, "run.queued", self.clock.now())
        self.workers.notify()
        return answer


def _execution_history(db: sqlite3.Connection, session_id: str, arguments: str) -> Any:
    """Every message's text of the execution history: tool results (receipts) included."""
    found = []
    for (text,) in db.execute("SELECT item FROM history WHERE session_id = ? AND "
                              "kind = 'execution' ORDER BY seq", (session_id,)):
        item = json.loads(text)
        if item.get("role") != "system" and isinstance(item.get("content"), str):
            found.append({"role": item["role"], "text": item["content"]})
    return {"messages": found[-20:]}


class ExecutionChatHistoryWorkers(Workers):
    chat_history = staticmethod(_execution_history)


def _nothing_refused(
    db: sqlite3.Connection, run_id: str, tenant: str, agent_id: str, names: list[str]
) -> list[str]:
    return []


class PlanAfterRevocationWorkers(Workers):
    """A revocation is looked at only when a run is next claimed: the plan of the call in
    flight is accepted and dispatched (RUN-14: it takes effect at once)."""

    refused_tools = staticmethod(_nothing_refused)


class InputBeforeRevocationWorkers(Workers):
    """At a step, input still pending enters the histories before the revocation is looked
    at: the run ends `permission_changed` all the same, with the input in its histories
    (docs/runs.md, Appended input: input pending when a revocation ends the run enters none)."""

    def _gate(self, run_id: str, worker: str, take_inputs: bool) -> bool:
        if take_inputs:
            with self.store.transaction() as db:
                row = db.execute("SELECT session_id FROM runs WHERE id = ?",
                                 (run_id,)).fetchone()
                if row is not None and held(db, run_id, worker):
                    inputs.take(db, run_id, str(row[0]), self.clock.now())
        return super()._gate(run_id, worker, take_inputs)


def _refused_unbound(
    db: sqlite3.Connection, run_id: str, worker: str, call_id: str,
    calls: list[dict[str, Any]], why: list[str], at: float, bindings: Mapping[str, str],
) -> None:
    revocations.refuse_plan(db, run_id, worker, call_id, calls, why, at, {})


class RevokedCallUnboundWorkers(Workers):
    """A refused plan's calls are stored without their tool's binding: an executor holding
    it is told 403 (outside its scope) for a claim or receipt, not 409 (the call's state)."""

    refuse_plan = staticmethod(_refused_unbound)


def input_revokes_batch() -> FastAPI:
    return serve(runtime_class=InputRevokesBatchRuntime)


def execution_chat_history() -> FastAPI:
    return serve(workers_class=ExecutionChatHistoryWorkers)


def plan_after_revocation() -> FastAPI:
    return serve(workers_class=PlanAfterRevocationWorkers)


def input_before_revocation() -> FastAPI:
    return serve(workers_class=InputBeforeRevocationWorkers)


def revoked_call_unbound() -> FastAPI:
    return serve(workers_class=RevokedCallUnboundWorkers)
