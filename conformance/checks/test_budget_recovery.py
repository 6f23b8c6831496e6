"""BUD-20: cursors, ids and status a projection drops stay recoverable.

A run's tool result is larger than its tool's budget, with its cursors, ids and status where a
projection loses them (`strategies.buried_fields_results`). What the model was given is the
tool message of the request after the receipt; `arck check-tool`'s own judgement
(`conformance/tooldesign.py`) says where each watched field went, in that message and in the
dry-run's preview of the same result. Each field the projection dropped must be at its place,
canonically equal, in the receipt the formal history returns (BUD-16), and what check-tool
reads as visible in the dry-run must be visible in what the run stored (tool authors see what
survives through dry-run, H-06). Recovery "through the product's own tools by id, cursor or
range" is the product's business: the platform's part, dispatching a follow-up call with its
arguments whole, is judged by the checks of executors.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from arck.conformance import oracle, tooldesign
from arck.conformance.checking import expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotTestable
from arck.conformance.runworld import TOOL, canonical, contains_equal, messages, world
from arck.conformance.strategies import buried_fields_results
from arck.conformance.tooldesign import LOST, VISIBLE, Field, Visibility
from arck.simulator.provider import Step, ToolCall

FUNDS = 10**12
BUDGETS = (1024, 2048, 4096)
CASES = st.sampled_from(BUDGETS).flatmap(
    lambda budget: st.tuples(st.just(budget), buried_fields_results(budget)))
# The export of docs/check-tool.md: a cursor five levels deep between two long arrays, item
# ids in the middle of a list, and a shallow status the profile keeps in preserved_fields.
EXPORT = (2048, {
    "a_log": "x" * 3000,
    "m": {"items": [{"id": f"it-{i:04d}", "status": "ok"} for i in range(30)],
          "meta": {"paging": {"links": {"next": {"cursor": "eyJvZmZzZXQiOjMwfQ"}}}}},
    "status": "partial",
    "z_log": "y" * 3000,
})


def _recovers(item: Any, field: Field) -> bool:
    """Some object or array inside `item` holds `field`'s value at the field's place."""
    assert field.steps is not None
    parts = [str(step) for step in field.steps]
    for _path, node in oracle.walk(item):
        if isinstance(node, dict | list):
            hit = tooldesign.locate(node, parts)
            if hit is not None and oracle.canonically_equal(hit[1], field.value):
                return True
    return False


def _states(report: tooldesign.SampleReport) -> dict[str, Visibility]:
    return {v.field.pointer: v for v in report.fields}


def _listed(fields: list[Visibility], limit: int = 6) -> str:
    shown = ", ".join(f"{v.field.pointer} ({v.state})" for v in fields[:limit])
    return shown + (f" and {len(fields) - limit} more" if len(fields) > limit else "")


@property_check("BUD-16", "BUD-20", cases=CASES, examples=(EXPORT,), cap=25)
def test_dropped_fields_stay_recoverable(ctx: CheckContext, case: Any) -> None:
    """A result over its budget goes through a dry-run and a run. Every cursor, id and status
    its projection dropped is in the full receipt the formal history returns, at its place and
    canonically equal; every field check-tool sees in the dry-run's preview is also in the tool
    message the run gave the model."""
    budget, result = case
    w = world(ctx)
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={})]),
                     Step(text="noted")], budget=budget)
    sample = tooldesign.Sample("result", result)
    fields = tooldesign.watched_fields(result)
    body = {"agent_version": agent.agent_version, "tool_name": agent.tool_name,
            "arguments": {}, "mock_receipts": [
                {"receipt_id": ctx.name("dry"), "kind": "completed", "result": result}]}
    preview = w.ok(w.target.dry_run(body), "dry-run the result").get("context_preview")
    if not isinstance(preview, dict):
        raise NotTestable(f"not testable: the dry-run answered no context_preview (DRY-01): "
                          f"{str(preview)[:200]}")
    dry = _states(tooldesign.analyse(sample, fields, preview, budget))
    session = w.session(agent, w.wallet(FUNDS))
    run_id = str(w.start(session, "Fetch the export").get("run_id"))
    snapshot, _ = w.settle(run_id)
    pending = [c for c in w.tool_calls(run_id) if c.get("state") == "dispatchable"]
    if snapshot.get("state") != "waiting_tools" or not pending:
        raise NotTestable(f"not testable: the run never waited for its tool call: {snapshot}")
    receipt_id = ctx.name("recover")
    w.ok(w.answer(str(pending[0].get("call_id")), result, receipt_id),
         "send a completed receipt over the budget (BUD-17)")
    w.settle(run_id)
    sent = [m.get("content") for r in w.requests(agent)[1:] for m in messages(r)
            if m.get("role") == "tool"]
    try:
        projected = json.loads(sent[0]) if sent and isinstance(sent[0], str) else None
    except ValueError:
        projected = None
    if projected is None:
        raise NotTestable("not testable: no request after the receipt carried the tool result "
                          f"as JSON text: {str(sent[:1])[:200]}")
    whole = oracle.canonically_equal(projected, result)
    stored = {"max_result_context_bytes": budget, "original_bytes": oracle.size(result),
              "truncated": not whole, "result": projected}
    ran = _states(tooldesign.analyse(sample, fields, stored, budget))
    hidden = [ran[p] for p, v in dry.items() if v.state in VISIBLE and ran[p].state == LOST]
    expect(not hidden, "BUD-20",
           "every field check-tool sees in the dry-run's preview also visible in the tool "
           "message the run gave the model (DRY-03: tool authors see what survives)",
           lambda: f"{len(hidden)} visible in the dry-run, lost in the run: "
                   f"{_listed([dry[v.field.pointer] for v in hidden])}; the run's message: "
                   f"{str(sent[0])[:200]}")
    formal = [i for i in w.history(session, "formal") if receipt_id in canonical(i)]
    lost = [v for v in ran.values() if v.state == LOST]
    gone = [v for v in lost if not any(_recovers(i, v.field) for i in formal)]
    expect(bool(formal) and not gone, ("BUD-16", "BUD-20"),
           f"each of the {len(lost)} field(s) the {budget}-byte projection dropped "
           f"({_listed(lost)}) at its place in the receipt {receipt_id!r} of the formal "
           "history, canonically equal",
           lambda: (f"not recoverable: {_listed(gone)}; formal history items naming the "
                    f"receipt: {canonical(formal)[:300]}") if formal else
                   "no formal history item names the receipt")
    expect(any(contains_equal(i, result) for i in formal), ("BUD-16", "BUD-20"),
           f"the full {oracle.size(result)}-byte result in the formal history's receipt, "
           "canonically equal",
           lambda: canonical(formal)[:300])
