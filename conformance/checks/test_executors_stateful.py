"""EXE as one stateful check: arck's simulated executor (docs/executor-simulator.md) works
tool calls of several runs with faults drawn per call — duplicates, reordering, lost
confirmations, crashes before and after storing, detaches, late finals, handler errors,
concurrent claimers, a stall past the claim's lease with a peer claiming meanwhile, and a
faulty executor's second final or rebound receipt id — while
runs are cancelled, time moves and the executor restarts. After every step, black box:

* EXE-01: no operation done twice in the business system (one claim wins, whatever the
  duplicates and restarts), and no claim granted on a call an executor already holds;
* EXE-08, EXE-09: a `receipt_id` keeps its meaning: once answered 2xx, every answer to it
  2xx with the same outcome, a repeat answered `replayed: true`, another body refused;
* EXE-14: a second final of a call refused;
* EXE-13: a run once ended never changes (snapshot and both histories);
* BUD-16: every final receipt the platform applied is in the formal history, canonically
  equal;
* RUN-11: every run ends or waits for tools within a bounded number of timers.

The program (`{"plan", "actions"}`) records what was done; it is the failure's example,
replayed by `arck replay`, and is also written as a scenario (`scenario_text`).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from arck.conformance.checking import check, expect, stateful_check, step
from arck.conformance.context import TOOL_DESCRIPTION, CheckContext
from arck.conformance.errors import CheckFailure, NotTestable
from arck.conformance.runworld import (
    PROMPT,
    SETTLED,
    TOOL,
    ChannelSpec,
    RunWorld,
    world,
)
from arck.simulator.executor import (
    CallOutcome,
    CallPlan,
    PlanError,
    SimulatedExecutor,
    StepRefused,
    make_plan,
)
from arck.simulator.executor.rules import (
    claims_on_held_calls,
    finals_not_in_history,
    receipt_ids_changed,
    second_finals_taken,
)
from arck.simulator.provider import Step, ToolCall
from arck.simulator.scenario.loader import written_scenario

FUNDS = 10**12
ASK = Step(tool_calls=[ToolCall(name=TOOL, arguments={"q": "rows"})])
SCRIPT_STEPS = 100  # model calls a program of 12 steps cannot exceed
WRITABLE = ("call", "execute", "release", "cancel", "restart", "advance")  # resolved kinds
FINAL_KINDS = ("completed", "failed", "cancelled", "submission", "reconciliation_required")
ENDING = ("crash_after_effect", "crash_after_store", "detach_before", "detach_after")
FAULT = st.one_of(
    st.builds(lambda r: {"kind": "duplicate", "receipt": r},
              st.sampled_from(["accepted", "progress", "final"])),
    st.just({"kind": "reorder"}),
    st.just({"kind": "late"}),
    st.just({"kind": "lost_confirmation"}),
    st.just({"kind": "crash_after_effect"}),
    st.builds(lambda r: {"kind": "crash_after_store", "receipt": r},
              st.sampled_from(["accepted", "progress", "final"])),
    st.just({"kind": "detach_before"}),
    st.just({"kind": "detach_after"}),
    st.builds(lambda e: {"kind": "handler_error", "effect": e}, st.booleans()),
    st.builds(lambda c: {"kind": "concurrent_claimers", "claimers": c}, st.integers(2, 3)),
    st.just({"kind": "second_final"}),
    st.just({"kind": "rebind"}),
    st.builds(lambda s: {"kind": "stall", "seconds": s}, st.sampled_from([31, 61])),
)
PLANS = st.builds(
    lambda final, progress, faults: {"final": final, "progress": progress, "faults": faults},
    st.sampled_from(FINAL_KINDS), st.integers(0, 3),
    st.lists(FAULT, max_size=2, unique_by=lambda f: f["kind"]),
)

FAULTY_PLANS = st.builds(
    lambda final, progress, faults: {"final": final, "progress": progress, "faults": faults},
    st.sampled_from(FINAL_KINDS), st.integers(0, 3),
    st.lists(FAULT, min_size=1, max_size=2, unique_by=lambda f: f["kind"]),
)


def _plan(raw: dict[str, Any]) -> CallPlan | None:
    """The plan as the executor takes it, or None when its faults cannot go together (a
    resolved program's plans, defaults left out, come through unchanged)."""
    progress = raw.get("progress", 0)
    faults = [f for f in raw.get("faults", ()) if f["kind"] != "reorder" or progress >= 2]
    if any(f["kind"] == "stall" for f in faults):  # it brings its own rival
        faults = [f for f in faults if f["kind"] != "concurrent_claimers"]
    if sum(f["kind"] in ENDING for f in faults) > 1:
        faults = [f for f in faults if f["kind"] not in ENDING][:1] + \
                 [f for f in faults if f["kind"] in ENDING][:1]
    try:
        return make_plan({**raw, "faults": faults})
    except PlanError:
        return None


class Floor:
    """Runs waiting for tool calls and one executor (restarted as a process would be), shaped
    as a scenario is: one agent whose every model answer asks for one tool call, one wallet,
    a session per run. So a worked call's run asks again and goes on (its re-claims meet a
    live run), the order in which runs take the script's steps does not matter, and a
    failing program is written as a scenario that does what the check did."""

    def __init__(self, ctx: CheckContext) -> None:
        self.ctx = ctx
        self.w: RunWorld = world(ctx)
        self.actions: list[list[Any]] = []
        self.calls: list[tuple[str, str, str]] = []  # (run, session, its first call)
        self.outcomes: list[CallOutcome] = []  # in the order worked, rivals and recoveries too
        self.held: dict[int, CallOutcome] = {}  # call index → outcome with a held final
        self.ended: dict[str, str] = {}  # run → its state when first seen ended
        self.agent = self.w.agent([ASK] * SCRIPT_STEPS)
        self.wallet = self.w.wallet(FUNDS)
        target = self.w.executors()
        try:
            self.executor = SimulatedExecutor.register(
                target, [ctx.binding_id()], name=ctx.name("executor"), seed=ctx.seed or 0,
                tally=getattr(self.w.control, "executor_faults", None))
        except StepRefused as exc:
            self.w.executor_api(exc.exchange)
            raise NotTestable(f"setup could not register an executor: {exc}",
                              exchange=exc.exchange) from None

    def program(self) -> dict[str, Any]:
        return {"plan": {}, "actions": copy.deepcopy(self.actions)}

    # -- actions ---------------------------------------------------------------------------

    def resolve(self, action: list[Any]) -> list[Any] | None:
        """The action as it will be done, in the program's terms: the call it works by its
        index, the plan as the executor takes it, the held final it releases; None when it
        would do nothing. Rules draw without looking at the target (hypothesis needs the
        same draws whatever it answers); the program records what was done."""
        kind = action[0]
        if kind in ("execute", "cancel") and not self.calls:
            return None
        if kind == "execute":
            index = action[1] % len(self.calls)
            plan = _plan(action[2])
            if plan is None or self.calls[index][2] == "none":
                return None
            return ["execute", index, plan.model_dump(mode="json", exclude_none=True)]
        if kind == "cancel":
            return ["cancel", action[1] % len(self.calls)]
        if kind == "release_nth":
            held = sorted(self.held)
            return ["release", held[action[1] % len(held)]] if held else None
        if kind == "release":
            return action if action[1] in self.held else None
        return action

    def act(self, drawn: list[Any]) -> None:
        action = self.resolve(drawn)
        if action is None:
            return
        self.actions.append(action)
        kind = action[0]
        if kind == "call":
            self.calls.append(self._waiting(len(self.calls)))
        elif kind == "execute":
            self._execute(action[1], action[2])
        elif kind == "release":
            self._release(action[1])
        elif kind == "cancel":
            run_id, session, _ = self.calls[action[1]]
            self.w.target.cancel_run(run_id)
            self._ended_state(run_id, session)  # what must hold from now on (EXE-13)
        elif kind == "restart":
            self._restart()
        elif kind == "advance":
            self.w.control.advance(action[1])

    def _waiting(self, n: int) -> tuple[str, str, str]:
        session = self.w.session(self.agent, self.wallet)
        run_id = str(self.w.start(session, _input(n)).get("run_id"))
        self.w.settle(run_id)
        calls = self.w.tool_calls(run_id)
        call_id = str(calls[0].get("call_id")) if calls else "none"
        return run_id, session, call_id

    def _restart(self) -> None:
        self.executor = self.executor.restart()
        self.outcomes += list(self.executor.recovered.values())

    def _execute(self, index: int, plan: dict[str, Any]) -> None:
        run_id, _, call_id = self.calls[index]
        if not self.executor.alive:  # as its supervisor would (and a scenario's runner does)
            self._restart()
        outcome = self.executor.execute(call_id, plan)
        self.outcomes += [outcome, *outcome.rivals]
        if outcome.held:
            self.held[index] = outcome
        self.w.settle(run_id)

    def _release(self, index: int) -> None:
        outcome = self.held.pop(index)
        if not self.executor.alive:
            self._restart()
        try:
            self.outcomes.append(self.executor.release(outcome.call_id))
        except PlanError:  # nothing held back any more: nothing to send
            return

    # -- invariants ------------------------------------------------------------------------

    def judge(self) -> None:
        business = self.executor.business
        expect(not business.repeated(), "EXE-01",
               "no operation done twice in the business system",
               lambda: f"done more than once: {business.repeated()}; "
                       f"{self._describe(business.repeated())}")
        broken = claims_on_held_calls(self.outcomes)
        expect(not broken, "EXE-01", "no claim granted on a call an executor already holds "
               "with its acceptance confirmed", lambda: "\n".join(broken)[:1500])
        broken = receipt_ids_changed(self.outcomes)
        expect(not broken, ("EXE-08", "EXE-09"), "every receipt id answered as it was the "
               "first time, a repeat as replayed: true, another body under it refused",
               lambda: "\n".join(broken)[:1500])
        broken = second_finals_taken(self.outcomes)
        expect(not broken, "EXE-14", "a second final of a call refused",
               lambda: "\n".join(broken)[:1500])
        self._judge_ended()
        sessions = {call: session for _, session, call in self.calls}
        broken = finals_not_in_history(
            self.outcomes, lambda call: self.w.history(sessions[call], "formal")
            if call in sessions else None)
        expect(not broken, "BUD-16", "every final result the platform applied in the formal "
               "history, canonically equal", lambda: "\n".join(broken)[:1500])

    def _describe(self, keys: Any) -> str:
        return "\n".join(o.describe() for o in self.outcomes if o.operation_key in keys)[:1500]

    def _ended_state(self, run_id: str, session: str) -> str | None:
        """The run's snapshot and histories once it has ended (the first seen is kept)."""
        state = self.w.state(run_id, session, only_ended=True)
        if state is None:
            return None
        self.ended.setdefault(run_id, state)
        return state

    def _judge_ended(self) -> None:
        for run_id, session, _ in self.calls:
            state = self._ended_state(run_id, session)
            if state is None:
                continue
            seen = self.ended[run_id]
            expect(state == seen, "EXE-13", f"run {run_id}, ended, never changed since",
                   f"was {seen[:300]}, now {state[:300]}")

    def settle_all(self) -> None:
        for run_id, _, _ in self.calls:
            snapshot, passed = self.w.settle(run_id)
            expect(snapshot.get("state") in SETTLED, "RUN-11",
                   f"run {run_id} ended or waiting for tools within {passed} timers",
                   str(snapshot))


def _input(n: int) -> str:
    return f"Use the tool ({n})"


class ExecutorFloor(RuleBasedStateMachine):
    def __init__(self, ctx: CheckContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.floor: Floor | None = None

    def _step(self, drawn: list[Any]) -> None:
        floor = self.floor
        assert floor is not None
        action = floor.resolve(drawn)
        if action is None:
            return
        floor.actions.append(action)
        program = floor.program()
        floor.actions.pop()
        step(lambda _ctx: floor.act(action), self.ctx, program)

    @initialize()
    def setup(self) -> None:
        # Through `step`: a target without runs or executors ends the check "not
        # applicable" at once.
        step(lambda ctx: setattr(self, "floor", Floor(ctx)), self.ctx,
             {"plan": {}, "actions": []})
        self._step(["call"])

    @rule()
    def new_call(self) -> None:
        self._step(["call"])

    @rule(index=st.integers(0, 7), plan=PLANS)
    def execute(self, index: int, plan: dict[str, Any]) -> None:
        self._step(["execute", index, plan])

    @rule(plan=FAULTY_PLANS)
    def execute_a_new_call(self, plan: dict[str, Any]) -> None:
        """Most of the program: a fresh call worked with at least one fault."""
        floor = self.floor
        assert floor is not None
        self._step(["call"])
        self._step(["execute", len(floor.calls) - 1, plan])

    @rule(final=st.sampled_from(FINAL_KINDS))
    def late_final_after_cancel(self, final: str) -> None:
        """The classic late receipt: a final held back, the run cancelled, then the final."""
        floor = self.floor
        assert floor is not None
        self._step(["call"])
        index = len(floor.calls) - 1
        self._step(["execute", index, {"final": final, "progress": 0,
                                       "faults": [{"kind": "late"}]}])
        self._step(["cancel", index])
        self._step(["release", index])

    @rule(final=st.sampled_from(FINAL_KINDS), receipt=st.sampled_from(["accepted", "final"]))
    def duplicate_delivery(self, final: str, receipt: str) -> None:
        """A receipt delivered twice, byte-identical: the second must be a replay."""
        floor = self.floor
        assert floor is not None
        self._step(["call"])
        self._step(["execute", len(floor.calls) - 1, {
            "final": final, "progress": 1,
            "faults": [{"kind": "duplicate", "receipt": receipt}]}])

    @rule(final=st.sampled_from(FINAL_KINDS), fault=st.sampled_from(["second_final", "rebind"]))
    def faulty_final(self, final: str, fault: str) -> None:
        """A faulty executor: after its final, a second final, or the final's receipt_id
        with another body. Both must be refused."""
        floor = self.floor
        assert floor is not None
        self._step(["call"])
        self._step(["execute", len(floor.calls) - 1, {
            "final": final, "progress": 0, "faults": [{"kind": fault}]}])

    @rule(nth=st.integers(0, 7))
    def release(self, nth: int) -> None:
        """Send the nth held final, if any (no precondition: which finals are held depends on
        the target, and the rules drawn must not)."""
        self._step(["release_nth", nth])

    @rule(index=st.integers(0, 7))
    def cancel(self, index: int) -> None:
        self._step(["cancel", index])

    @rule()
    def restart(self) -> None:
        self._step(["restart"])

    @rule(seconds=st.sampled_from([1, 20, 61]))
    def advance(self, seconds: int) -> None:
        self._step(["advance", seconds])

    @invariant()
    def holds(self) -> None:
        floor = self.floor
        if floor is not None:
            step(lambda _ctx: floor.judge(), self.ctx, floor.program())

    def teardown(self) -> None:
        floor = self.floor
        if floor is not None:
            step(lambda _ctx: floor.settle_all(), self.ctx, floor.program())


# -- the failure as a scenario file --------------------------------------------------------

_INVARIANT_OF = (
    (("EXE-01",), "one_claim_wins"),
    (("EXE-08", "EXE-09"), "receipt_ids_keep_meaning"),
    (("EXE-14",), "one_final_per_call"),
    (("EXE-13",), "ended_runs_unchanged"),
    (("BUD-16",), "applied_finals_in_history"),
    (("RUN-11",), "runs_settle"),
)


def _written(action: list[Any]) -> list[dict[str, Any]]:
    """One action of a resolved program as the scenario actions that do the same (a run is
    `r<index + 1>` in its own session; the check settles a run after creating it and after
    working its call, and so does the scenario)."""
    kind = action[0]
    if kind == "execute":
        run = f"r{action[1] + 1}"
        return [{"execute": {"run": run, "call": 0, "plan": action[2]}}, {"wait": {"run": run}}]
    if kind == "release":
        return [{"release": {"run": f"r{action[1] + 1}", "call": 0}}]
    if kind == "cancel":
        return [{"cancel": {"run": f"r{action[1] + 1}"}}]
    if kind == "restart":
        return [{"restart_executor": {}}]
    return [{"advance": {"seconds": action[1]}}]


def _steps(actions: list[list[Any]]) -> int:
    """Script steps enough for the program: a run asks once when created and once after each
    final applied; finals come from executes, releases and a restart's recoveries (one per
    run at most). Doubled, for a target that applies a final twice."""
    runs = finals = 0
    for action in actions:
        runs += action[0] == "call"
        finals += 1 if action[0] in ("execute", "release") else runs if action[0] == "restart" \
            else 0
    return 2 * (runs + finals) + 2


def scenario_text(case: Any, failure: CheckFailure) -> str | None:
    """The failing program as a scenario (docs/scenarios.md), its expectation the invariant
    that broke, judged at the end; None when the program is not one this check resolved."""
    actions = case.get("actions") if isinstance(case, dict) else None
    broke = [name for ids, name in _INVARIANT_OF if set(ids) & set(failure.requirements)]
    if not actions or not broke or any(a[0] not in WRITABLE for a in actions):
        return None
    written: list[dict[str, Any]] = []
    for action in actions:
        if action[0] == "call":
            n = sum(1 for w in written if "run" in w)
            written += [{"run": {"input": _input(n), "session": f"s{n + 1}"}}, {"wait": {}}]
        else:
            written += _written(action)
    runs = sum(1 for w in written if "run" in w)
    if "runs_settle" in broke:
        written += [{"wait": {"run": f"r{n}"}} for n in range(1, runs + 1)]
    channel = {k: v for k, v in ChannelSpec().body("").items() if k != "name"}
    ids = ", ".join(failure.requirements)
    return written_scenario({
        "name": "stateful-" + "-".join(r.lower() for r in failure.requirements)[:50],
        "description": (
            f"Executor work on which a target broke {ids}, shrunk by the stateful check "
            f"executors_stateful/test_executor_protocol_under_faults: expected "
            f"{failure.expected}; saw {failure.seen[:300]}. Judged at the end by the "
            f"invariant it broke: {', '.join(broke)}."),
        "agent": {"system_prompt": PROMPT, "tools": [{
            "name": TOOL, "description": TOOL_DESCRIPTION, "max_result_context_bytes": 1024}]},
        "channels": {"main": channel},
        "wallet": {"funds": FUNDS},
        "script": [ASK.model_dump(mode="json", exclude_defaults=True)] * _steps(actions),
        "actions": written,
        "expect": {"invariants": broke},
    })


@stateful_check("EXE-01", "EXE-08", "EXE-09", "EXE-13", "EXE-14", "BUD-16",
                machine=ExecutorFloor, steps=12, cap=20, scenario=scenario_text)
def test_executor_protocol_under_faults(ctx: CheckContext, case: Any) -> None:
    """Replays a program of the state machine: the same calls, plans and faults, in order."""
    floor = Floor(ctx)
    for action in case["actions"]:
        floor.act(action)
        floor.judge()
    floor.settle_all()


# -- every fault once, in one fixed program ------------------------------------------------

# One fresh call per fault kind of the simulated executor, each worked with that fault
# alone (a held final released at once). The random programs above draw faults by chance;
# this one makes sure every kind is tried on every run of the suite, whatever the seed.
TOUR_FAULTS: tuple[dict[str, Any], ...] = (
    {"kind": "duplicate", "receipt": "final"},
    {"kind": "reorder"},
    {"kind": "late"},
    {"kind": "lost_confirmation"},
    {"kind": "crash_after_effect"},
    {"kind": "crash_after_store", "receipt": "final"},
    {"kind": "detach_before"},
    {"kind": "detach_after"},
    {"kind": "handler_error", "effect": True},
    {"kind": "slow", "seconds": 5},
    {"kind": "concurrent_claimers", "claimers": 3},
    {"kind": "stall", "seconds": 31},
    {"kind": "second_final"},
    {"kind": "rebind"},
)


def _tour() -> list[list[Any]]:
    actions: list[list[Any]] = []
    for index, fault in enumerate(TOUR_FAULTS):
        plan = _plan({"final": "completed", "progress": 2 if fault["kind"] == "reorder" else 1,
                      "faults": [fault]})
        assert plan is not None, fault
        actions += [["call"], ["execute", index, plan.model_dump(mode="json", exclude_none=True)]]
        if fault["kind"] == "late":
            actions.append(["release", index])
    return actions


@check("EXE-01", "EXE-08", "EXE-09", "EXE-13", "EXE-14", "BUD-16")
def test_every_executor_fault_once(ctx: CheckContext) -> None:
    """Every fault kind the simulated executor knows, once each on a call of its own, judged
    by the invariants of the random programs after every step; a kind that did not fire
    means the check tested less than it says, and it is "not testable"."""
    floor = Floor(ctx)
    before = dict(floor.executor.fault_counts())
    program = _tour()
    for action in program:
        resolved = floor.resolve(action)
        if resolved is None:
            continue
        floor.act(resolved)
        floor.judge()
    floor.settle_all()
    after = floor.executor.fault_counts()
    silent = sorted(f["kind"] for f in TOUR_FAULTS if after.get(f["kind"], 0) <= before.get(
        f["kind"], 0))
    if silent:
        raise NotTestable(f"not testable: fault never fired: {', '.join(silent)}")
