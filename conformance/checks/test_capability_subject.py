"""CAP-10, CAP-12: an operation declaring `subject.required: true` is never dispatched for a
session without a trusted subject, and `readonly` or `risk.level: low` never skips that check.

Two operations require a subject (one read-only and of low risk, one neither) and one does
not; a model calls all three in one turn, in a session whose creator named a subject or did
not. Core (CAP-12): the two that require a subject are treated alike, whatever they declare
besides. Reference profile (docs/capabilities.md, "Subjects"): a session is trusted when its
creator named its `subject`; without one, both are refused before dispatch (never listed as
tool calls; the model reads `subject_required`), the third is dispatched; with one, all three
are dispatched."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from arck.conformance import capability_steps as steps
from arck.conformance.checking import expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotTestable
from arck.conformance.judge import answer
from arck.conformance.runworld import RunWorld, world
from arck.simulator.provider import Step, ToolCall

REQUIRED = ("subject_low_read", "subject_high_write")  # both declare subject.required: true
OPEN = "subject_open"
_ROUNDS = 12


def _cases(ctx: CheckContext) -> st.SearchStrategy[Any]:
    idempotent = st.sampled_from([None, True, False])
    # the levels beside `low` (which CAP-12 names) are the profile's (CAP-14)
    levels = [None, "medium", "high", "critical"] if ctx.profile == "reference" else [None]
    return st.fixed_dictionaries({
        "named": st.booleans(),  # whether the session's creator named its subject
        "high_risk": st.sampled_from(levels),
        "idempotent": st.tuples(idempotent, idempotent, idempotent),
        "open_subject": st.sampled_from([None, False]),  # the third: required false, or silent
    })


def _declaration(ctx: CheckContext, name: str, case: dict[str, Any], i: int) -> dict[str, Any]:
    execution: dict[str, Any] = {}
    declaration: dict[str, Any] = {"version": 1, "enabled": True, "scope": steps.scope(ctx, name)}
    if name == REQUIRED[0]:
        declaration |= {"subject": {"required": True}, "risk": {"level": "low"}}
        execution["readonly"] = True
    elif name == REQUIRED[1]:
        declaration["subject"] = {"required": True}
        if case["high_risk"] is not None:
            declaration["risk"] = {"level": case["high_risk"]}
        execution["readonly"] = False
    elif case["open_subject"] is not None:
        declaration["subject"] = {"required": False}
    if case["idempotent"][i] is not None:
        execution["idempotent"] = case["idempotent"][i]
    if execution:
        declaration["execution"] = execution
    return declaration


@property_check("CAP-10", "CAP-12", cases=_cases, cap=8, examples=(
    {"named": False, "high_risk": None, "idempotent": (True, None, None),
     "open_subject": None},
    {"named": True, "high_risk": None, "idempotent": (None, False, None),
     "open_subject": False}))
def test_a_call_without_a_trusted_subject_is_never_dispatched(
    ctx: CheckContext, case: dict[str, Any]
) -> None:
    """Core: the read-only, low-risk operation and the writing one, both requiring a
    subject, are dispatched or refused alike. Profile: without a named subject both are
    refused before dispatch and the third dispatched; with one, all three dispatched."""
    w = world(ctx)
    tools = []
    for i, name in enumerate((*REQUIRED, OPEN)):
        declared = steps.declare(ctx, _declaration(ctx, name, case, i))
        binding = steps.kept(ctx, declared, judged=False)
        tools.append({**ctx.tool(None), "name": name, "binding_id": binding["binding_id"]})
    published = steps.target(ctx).publish_tool_set({"name": ctx.name("tools"), "tools": tools})
    agent = w.agent_on(str(answer(published, "CAP-10").get("tool_set_id")), [
        Step(tool_calls=[ToolCall(name=name, arguments={"order": i})
                         for i, name in enumerate((*REQUIRED, OPEN))]),
        Step(text="done")])
    body: dict[str, Any] = {"agent_version": agent.agent_version, "wallet_id": w.wallet(10**12)}
    if case["named"]:
        body["subject"] = f"user:{ctx.name('subject')}"
    session = str(w.ok(w.target.create_session(body), "create a session").get("session_id"))
    run_id = str(w.start(session, "Do all three").get("run_id"))
    role = w.register_executor(bindings=[t["binding_id"] for t in tools])
    dispatched = _drive(w, run_id, role)
    seen = lambda: (f"dispatched {sorted(dispatched)} in run {run_id} (session "  # noqa: E731
                    f"{'with' if case['named'] else 'without'} a named subject); declared "
                    + json.dumps([_declaration(ctx, n, case, i)
                                  for i, n in enumerate((*REQUIRED, OPEN))]))
    expect((REQUIRED[0] in dispatched) == (REQUIRED[1] in dispatched), "CAP-12",
           "the read-only, low-risk operation that requires a subject dispatched or refused "
           "exactly as the writing one that requires it: hints grant no authority", seen)
    if ctx.profile != "reference":
        return
    want = {*REQUIRED, OPEN} if case["named"] else {OPEN}
    expect(dispatched == want, "CAP-10",
           f"profile: {sorted(want)} dispatched, " + (
               "every operation: the session's creator named its subject" if case["named"]
               else "the operations requiring a subject refused before dispatch: no one "
                    "named the session's subject"), seen)
    if not case["named"]:
        refused = {e.get("data", {}).get("name") for e in w.events(run_id)
                   if e.get("type") == "tool_call.refused"
                   and e.get("data", {}).get("code") == "subject_required"}
        expect(refused == set(REQUIRED), "CAP-10",
               f"profile: event tool_call.refused (code subject_required) for {list(REQUIRED)}",
               lambda: json.dumps(w.events(run_id))[:600])


def _drive(w: RunWorld, run_id: str, role: str) -> set[str]:
    """Answer the run's calls until it ends: the names of the tools it dispatched."""
    names: dict[str, str] = {}
    w.ok(w.executors().heartbeat(role), "send an executor heartbeat")
    for _ in range(_ROUNDS):
        snapshot, _ = w.settle(run_id)
        calls = w.tool_calls(run_id)
        for call in calls:
            names[str(call.get("call_id"))] = str(call.get("name"))
        if snapshot.get("state") == "ended":
            return set(names.values())
        fresh = [c for c in calls if c.get("state") == "dispatchable"]
        if not fresh:
            raise NotTestable(f"run {run_id} waits with no tool call to claim: {snapshot}")
        for call in fresh:
            call_id = str(call.get("call_id"))
            w.ok(w.answer(call_id, {"ok": True}, f"arck-subject-{call_id}", role=role),
                 "send a completed receipt")
    raise NotTestable(f"run {run_id} did not end within {_ROUNDS} rounds of answers")
