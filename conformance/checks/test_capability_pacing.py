"""CAP-08: an operation's dispatches paced by its declared `rate_limit`, judged on the
injected clock from what an executor of the operation can claim (docs/capabilities.md,
"Pacing"). Bursts of calls of one operation, each from a run of its own session, arrive at
random offsets from the window's edges; the oracle is `pacing_oracle`, never the reference."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from arck.conformance import capability_steps as steps
from arck.conformance import pacing_oracle as oracle
from arck.conformance.checking import expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotTestable
from arck.conformance.judge import answer
from arck.conformance.runworld import RunWorld, needs_virtual_time, world
from arck.simulator.provider import Step, ToolCall

WINDOWS = {"500ms": 500, "10s": 10_000, "1m": 60_000}
# Offsets before a burst, in windows: the edges themselves, just inside and outside them.
_GAPS = st.one_of(st.sampled_from([0.0, 0.5, 0.999, 1.0, 1.001, 2.0]),
                  st.floats(0, 2.5, allow_nan=False))
_STEPS_PER_BURST = 12  # answer rounds and timers a burst may take before it is judged


def _cases() -> st.SearchStrategy[Any]:
    bursts = st.lists(st.tuples(st.integers(1, 5), _GAPS), min_size=2, max_size=5)
    return st.tuples(st.integers(1, 3), st.sampled_from(sorted(WINDOWS)), bursts)


@property_check("CAP-08", "CAP-14", cases=_cases(), cap=20, examples=(
    (1, "10s", [(3, 0.0), (3, 1.0), (3, 1.0)]),  # one window's edge after another
    (2, "1m", [(2, 0.0), (2, 0.999), (2, 0.001)]),
    (1, "10s", [(3, 0.0), (3, 0.0), (3, 0.0)]),  # three sessions at one instant
    (1, "1m", [(2, 0.0), (2, 0.5), (2, 0.5)]),  # half a window apart: 3 within one window
))
def test_dispatches_are_paced(ctx: CheckContext, case: Any) -> None:
    """No interval of k × window sees more than (k + 1) × count dispatches (core). Under the
    profile: a sliding window per operation and tenant, exactly: each burst dispatches what
    the window has room for, and the rest is refused before dispatch (event
    `tool_call.paced` with the milliseconds until the window has room)."""
    count, window_name, bursts = case
    window = WINDOWS[window_name]
    w = world(ctx)
    needs_virtual_time(w, "pacing across windows of up to a minute")
    binding = steps.kept(ctx, steps.declare(ctx, {
        "version": 1, "enabled": True, "scope": steps.scope(ctx, "paced"),
        "execution": {"rate_limit": {"count": count, "window": window_name}}}), judged=False)
    tool = {**ctx.tool(None), "name": "paced_op", "binding_id": binding["binding_id"]}
    published = steps.target(ctx).publish_tool_set({"name": ctx.name("tools"), "tools": [tool]})
    script: list[Step] = []
    for calls, _gap in bursts:
        script += [Step(tool_calls=[ToolCall(name="paced_op", arguments={"n": n})
                                   for n in range(calls)]), Step(text="done")]
    agent = w.agent_on(str(answer(published, "CAP-08").get("tool_set_id")), script)
    wallet = w.wallet(10**12)
    role = w.register_executor(bindings=[str(binding["binding_id"])])
    dispatched: list[int] = []  # ms on the target's clock when each call was claimable
    story: list[str] = []
    profile_wrong: tuple[str, str] | None = None
    for calls, gap in bursts:
        w.idle(round(gap * window) / 1000)
        at = round(w.control.now() * 1000)
        run_id = str(w.start(w.session(agent, wallet), "burst").get("run_id"))
        seen = _drive(w, run_id, role)
        paced = [e.get("data", {}) for e in w.events(run_id) if e.get("type") == "tool_call.paced"]
        story.append(f"{run_id} at {at} ms: {calls} asked, dispatched at {seen}, "
                     f"{len(paced)} paced")
        before, dispatched = dispatched, [*dispatched, *seen]
        found = oracle.over_core_bound(dispatched, count, window)
        if found is not None:
            start, k, held = found
            expect(False, "CAP-08",
                   f"no interval of k × {window_name} holding more than (k + 1) × {count} "
                   "dispatches of the operation",
                   f"[{start}, {start + k * window}] ms (k = {k}) held {held}; bursts: "
                   f"{'; '.join(story)}")
        if ctx.profile == "reference" and profile_wrong is None:
            profile_wrong = _profile_wrong(count, window, before, at, calls, seen, paced)
    if profile_wrong is not None:  # judged once the core bound held over every burst
        expected, saw = profile_wrong
        expect(False, "CAP-14", expected, f"{saw}; bursts: {'; '.join(story)}")


def _drive(w: RunWorld, run_id: str, role: str) -> list[int]:
    """Answer the run's calls as each becomes claimable, moving time to the next timer when
    none is: the times (ms) at which they were claimable."""
    seen: dict[str, int] = {}
    w.ok(w.executors().heartbeat(role), "send an executor heartbeat")
    for _ in range(_STEPS_PER_BURST):
        snapshot, _ = w.settle(run_id)
        if snapshot.get("state") == "ended":
            return sorted(seen.values())
        fresh = [c for c in w.tool_calls(run_id)
                 if c.get("state") == "dispatchable" and str(c.get("call_id")) not in seen]
        for call in fresh:
            call_id = str(call.get("call_id"))
            seen[call_id] = round(w.control.now() * 1000)
            w.ok(w.answer(call_id, {"ok": True}, f"arck-paced-{call_id}", role=role),
                 "send a completed receipt")
        if not fresh:
            deadline = w.control.next_deadline()
            if deadline is None:
                raise NotTestable(f"run {run_id} waits for tool calls none of which is "
                                  f"claimable, and no timer will move it: {snapshot}")
            w.control.advance(max(0.0, deadline - w.control.now()))
    raise NotTestable(f"run {run_id} did not end within {_STEPS_PER_BURST} rounds of "
                      "answers and timers")


def _profile_wrong(count: int, window: int, before: list[int], at: int, calls: int,
                   seen: list[int], paced: list[dict[str, Any]]) -> tuple[str, str] | None:
    """Profile: the burst's calls were dispatched at once, as many as the sliding window had
    room for; the others paced, told when the window has room again. (expected, seen), or
    None when the burst was paced exactly so."""
    admits = min(calls, oracle.room(before, at, count, window))
    if seen != [at] * admits or len(paced) != calls - admits:
        return (f"profile: {admits} of {calls} dispatched at {at} ms (a sliding window per "
                f"operation and tenant had room for {admits}), {calls - admits} paced",
                f"dispatched at {seen}, {len(paced)} paced")
    wait = oracle.retry_after_ms([*before, *seen], at, count, window)
    if any(p.get("retry_after_ms") != wait for p in paced):
        return (f"profile: each paced call told the window has room in {wait} ms",
                f"paced: {paced}")
    return None
