"""DEF-07 (profile): token budgets found in stored configuration migrate once to the 16,384-byte
default; committed execution history is left as it is.

The target's optional `legacy_restart(tool_set_ids, tokens)` step stops it, writes the named
tool sets back as the revision before byte budgets stored them (each tool with a token budget
of `tokens`) and starts the current revision on that store: what an upgrade meets
(docs/targets.md). Around it the check judges only the public API and what the simulated
provider received: the tool set reads back with the default (not tokens × 4, not its old
bytes), runs and dry-runs of the pinned version use it, both histories of a session with a
projected result are unchanged, and a plain `restart()` afterwards changes nothing, a tool set
published since with its own budget included (the migration ran once).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from arck.conformance import oracle
from arck.conformance.checking import expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotApplicable, NotTestable
from arck.conformance.runworld import TOOL, Agent, RunWorld, canonical, messages, world
from arck.simulator.errors import StepUnavailable
from arck.simulator.provider import Step, ToolCall

FUNDS = 10**12
DEFAULT_BUDGET = 16_384
BUDGET = "max_result_context_bytes"
# A budget of this many tokens converted at 4 bytes a token would be the default itself.
_AMBIGUOUS = DEFAULT_BUDGET // 4
CASES = st.tuples(
    st.sampled_from((1024, 2048, 4096)),  # the byte budget the tool had before
    st.one_of(st.sampled_from((1000, 2000, 8000, 16_384, 100_000)),
              st.integers(1, 200_000)).filter(lambda t: t != _AMBIGUOUS),  # its token budget
    st.sampled_from((1024, 2048, 8192, 32_768)),  # a tool set published after the upgrade
)


def _result(tag: str, size: int) -> dict[str, Any]:
    """A result of about `size` canonical bytes, over the old budget and within the default."""
    rows = [f"{tag}-{i:04d}-" + "r" * 90 for i in range(max(1, size // 103))]
    return {"status": "ok", "page": tag, "rows": rows}


def _needs(w: RunWorld, name: str) -> Any:
    step = getattr(w.target, name, None)
    if not callable(step):
        raise NotApplicable(f"the target offers no {name} step (docs/targets.md, "
                            "\"Upgrade from token budgets\"): DEF-07 needs a store written "
                            "under the earlier revision, and a start on it")
    return step


def _step(w: RunWorld, name: str, *args: Any) -> None:
    step = _needs(w, name)
    try:
        step(*args)
    except StepUnavailable as exc:
        raise NotApplicable(str(exc)) from None


def _tool_set_id(w: RunWorld, agent: Agent) -> str:
    version = w.ok(w.target.get_agent_version(agent.agent_version), "read the agent version")
    if not isinstance(version.get("tool_set_id"), str):
        raise NotTestable(f"not testable: the version names no tool_set_id: {version}")
    return str(version["tool_set_id"])


def _tools(w: RunWorld, tool_set_id: str) -> list[dict[str, Any]]:
    tools = w.ok(w.target.get_tool_set(tool_set_id), f"read tool set {tool_set_id}").get("tools")
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise NotTestable(f"not testable: tool set {tool_set_id} holds no list of tools")
    return tools


def _previewed(w: RunWorld, agent: Agent, result: Any) -> dict[str, Any]:
    body = {"agent_version": agent.agent_version, "tool_name": agent.tool_name,
            "arguments": {}, "mock_receipts": [
                {"receipt_id": w.ctx.name("migrated"), "kind": "completed", "result": result}]}
    preview = w.ok(w.target.dry_run(body), "dry-run the tool").get("context_preview")
    return preview if isinstance(preview, dict) else {}


def _histories(w: RunWorld, session: str) -> dict[str, str]:
    return {kind: canonical(w.history(session, kind)) for kind in ("formal", "execution")}


def _same_histories(before: dict[str, str], after: dict[str, str], when: str) -> None:
    for kind in ("formal", "execution"):
        expect(after[kind] == before[kind], "DEF-07",
               f"the committed {kind} history left as it is {when}",
               _first_difference(before[kind], after[kind]) if after[kind] != before[kind]
               else "")


def _first_difference(before: str, after: str) -> str:
    at = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
              min(len(before), len(after)))
    return (f"{len(before)} characters before, {len(after)} after; from character {at}: "
            f"before …{before[max(0, at - 40):at + 120]!r} / after "
            f"…{after[max(0, at - 40):at + 120]!r}")


def _tool_messages(w: RunWorld, agent: Agent) -> list[Any]:
    """The tool messages of the conversation's last request, in order."""
    sent = w.requests(agent)
    return [m for m in messages(sent[-1]) if m.get("role") == "tool"] if sent else []


def _without_budget(tools: Sequence[dict[str, Any]]) -> str:
    return canonical([{k: v for k, v in t.items() if k != BUDGET} for t in tools])


@property_check("DEF-07", cases=CASES, examples=((2048, 1000, 4096), (1024, 8000, 2048)),
                cap=5)
def test_token_budgets_migrate_once(ctx: CheckContext, case: Any) -> None:
    """A session's tool set is written back with a token budget and the target started on it:
    the tool set then has the 16,384-byte default, the version's runs and dry-runs use it, the
    session's histories (with a result projected under the old budget) are unchanged; after a
    plain restart nothing has moved, and a tool set published since keeps its own budget."""
    budget, tokens, later_budget = case
    w = world(ctx)
    _needs(w, "legacy_restart")  # "not applicable" before anything is built
    _needs(w, "restart")
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"page": 1})]),
                     Step(text="page one read"),
                     Step(tool_calls=[ToolCall(name=TOOL, arguments={"page": 2})]),
                     Step(text="page two read")], budget=budget)
    tool_set_id = _tool_set_id(w, agent)
    session = w.session(agent, w.wallet(FUNDS))
    first = _result("one", 3 * budget)
    w.answer_all(str(w.start(session, "Read page one").get("run_id")), first)
    entered = _tool_messages(w, agent)
    if len(entered) != 1 or oracle.canonically_equal(_parsed(entered[0].get("content")), first):
        raise NotTestable(f"not testable: the {oracle.size(first)}-byte result did not enter "
                          f"projected to its {budget}-byte budget: {str(entered)[:200]}")
    projected = entered[0]
    tools_before = _tools(w, tool_set_id)
    version_before = canonical(w.target.get_agent_version(agent.agent_version).json_or_none())
    histories = _histories(w, session)

    _step(w, "legacy_restart", [tool_set_id], tokens)
    tools = _tools(w, tool_set_id)
    budgets = [t.get(BUDGET) for t in tools]
    expect(budgets == [DEFAULT_BUDGET] * len(tools_before), "DEF-07",
           f"each tool stored with a budget of {tokens:,} tokens migrated to "
           f"max_result_context_bytes = {DEFAULT_BUDGET:,} (the default; not tokens x 4 = "
           f"{tokens * 4:,}, not its earlier {budget:,} bytes)",
           f"max_result_context_bytes {budgets} after the upgrade")
    stale = sorted({k for t in tools for k in t if k in ("max_result_tokens", "max_result_bytes")})
    expect(not stale and _without_budget(tools) == _without_budget(tools_before), "DEF-07",
           "the migrated tools otherwise as they were published, with no token setting left",
           lambda: f"before {_without_budget(tools_before)[:300]} / after "
                   f"{canonical(tools)[:300]}")
    expect(canonical(w.target.get_agent_version(agent.agent_version).json_or_none())
           == version_before, "DEF-07", "the agent version unchanged by the upgrade",
           version_before[:200])
    _same_histories(histories, _histories(w, session), "after the upgrade")

    second = _result("two", 2 * budget + 512)
    preview = _previewed(w, agent, second)
    expect(preview.get(BUDGET) == DEFAULT_BUDGET and preview.get("truncated") is False,
           "DEF-07", f"a dry-run of the pinned version previews at {DEFAULT_BUDGET:,} bytes: "
           f"the {oracle.size(second):,}-byte result untruncated",
           f"context_preview {canonical({k: preview.get(k) for k in (BUDGET, 'truncated')})}")
    w.answer_all(str(w.start(session, "Read page two").get("run_id")), second)
    sent = _tool_messages(w, agent)
    expect(len(sent) == 2 and canonical(sent[0]) == canonical(projected) and
           oracle.canonically_equal(_parsed(sent[1].get("content")), second), "DEF-07",
           f"the session's next request: the first result as projected before the upgrade, "
           f"the new {oracle.size(second):,}-byte result whole (its budget now "
           f"{DEFAULT_BUDGET:,})",
           lambda: " / ".join(canonical(m)[:160] for m in sent) or "no tool message")

    later = w.agent([Step(text="unused")], budget=later_budget)
    later_set = _tool_set_id(w, later)
    tools_now = canonical(_tools(w, tool_set_id))
    histories = _histories(w, session)
    _step(w, "restart")
    expect(canonical(_tools(w, tool_set_id)) == tools_now, "DEF-07",
           "the migrated tool set unchanged by a later start (migrated once)",
           lambda: canonical(_tools(w, tool_set_id))[:300])
    kept = [t.get(BUDGET) for t in _tools(w, later_set)]
    again = _previewed(w, later, second).get(BUDGET)
    expect(kept == [later_budget] and again == later_budget, "DEF-07",
           f"a tool set published after the upgrade with {later_budget:,} bytes keeps them "
           "across a later start (the migration does not run again)",
           f"read back {kept}, previewed at {again!r}")
    _same_histories(histories, _histories(w, session), "after a later start")


def _parsed(content: Any) -> Any:
    try:
        return json.loads(content) if isinstance(content, str) else None
    except ValueError:
        return None
