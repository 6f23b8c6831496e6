"""EXE as one stateful check: arck's simulated executor (docs/executor-simulator.md) works
tool calls of several runs with faults drawn per call — duplicates, reordering, lost
confirmations, crashes before and after storing, detaches, late finals, handler errors,
concurrent claimers — while runs are cancelled, time moves and the executor restarts.
After every step, black box:

* EXE-01: no operation done twice in the business system (one claim wins, whatever the
  duplicates and restarts), and no claim granted on a call an executor already holds;
* EXE-08, EXE-09: a `receipt_id` keeps its meaning: every 2xx answer to it the same but for
  `replayed`, and a repeated delivery answered `replayed: true`;
* EXE-13: a run once ended never changes (snapshot and both histories);
* BUD-16: every final receipt the platform applied is in the formal history, canonically
  equal;
* RUN-11: every run ends or waits for tools within a bounded number of timers.

The program (`{"plan", "actions"}`) is the failure's example, replayed by `arck replay`.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from arck.conformance.checking import expect, stateful_check, step
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotTestable
from arck.conformance.runworld import SETTLED, TOOL, RunWorld, canonical, contains_equal, world
from arck.simulator.executor import (
    CallOutcome,
    ExecutorDead,
    PlanError,
    SimulatedExecutor,
    StepRefused,
    make_plan,
)
from arck.simulator.provider import Step, ToolCall

FUNDS = 10**12
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


def _plan(raw: dict[str, Any]) -> Any:
    """The plan as the executor takes it, or None when its faults cannot go together."""
    faults = [f for f in raw["faults"] if f["kind"] != "reorder" or raw["progress"] >= 2]
    if sum(f["kind"] in ENDING for f in faults) > 1:
        faults = [f for f in faults if f["kind"] not in ENDING][:1] + \
                 [f for f in faults if f["kind"] in ENDING][:1]
    try:
        return make_plan({**raw, "faults": faults})
    except PlanError:
        return None


class Floor:
    """Runs waiting for tool calls and one executor (restarted as a process would be)."""

    def __init__(self, ctx: CheckContext) -> None:
        self.ctx = ctx
        self.w: RunWorld = world(ctx)
        self.actions: list[list[Any]] = []
        self.calls: list[tuple[str, str, str]] = []  # (run, session, call)
        self.outcomes: list[CallOutcome] = []
        self.held: dict[int, CallOutcome] = {}  # call index → outcome with a held final
        self.granted: set[str] = set()  # calls some executor holds (a confirmed claim)
        self.ended: dict[str, str] = {}  # run → its state when first seen ended
        target = self.w.executors()
        try:
            self.executor = SimulatedExecutor.register(
                target, [ctx.binding_id()], name=ctx.name("executor"), seed=ctx.seed or 0,
                tally=getattr(self.w.control, "executor_faults", None))
        except StepRefused as exc:
            raise NotTestable(f"setup could not register an executor: {exc}") from None

    def program(self) -> dict[str, Any]:
        return {"plan": {}, "actions": copy.deepcopy(self.actions)}

    # -- actions ---------------------------------------------------------------------------

    def act(self, action: list[Any]) -> None:
        self.actions.append(action)
        kind = action[0]
        if kind == "call":
            self.calls.append(self._waiting(len(self.calls)))
        elif kind == "execute":
            self._execute(action[1] % len(self.calls), action[2])
        elif kind == "release":
            self._release(action[1])
        elif kind == "release_nth" and self.held:
            held = sorted(self.held)
            self._release(held[action[1] % len(held)])
        elif kind == "cancel":
            run_id, session, _ = self.calls[action[1] % len(self.calls)]
            self.w.target.cancel_run(run_id)
            self._ended_state(run_id, session)  # what must hold from now on (EXE-13)
        elif kind == "restart":
            self.executor = self.executor.restart()
            self.outcomes += list(self.executor.recovered.values())
        elif kind == "advance":
            self.w.control.advance(action[1])

    def _waiting(self, n: int) -> tuple[str, str, str]:
        agent = self.w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"n": n})]),
                              Step(text=f"done {n}")])
        session = self.w.session(agent, self.w.wallet(FUNDS))
        run_id = str(self.w.start(session, f"Use the tool ({n})").get("run_id"))
        self.w.settle(run_id)
        calls = self.w.tool_calls(run_id)
        call_id = str(calls[0].get("call_id")) if calls else "none"
        return run_id, session, call_id

    def _execute(self, index: int, raw: dict[str, Any]) -> None:
        plan = _plan(raw)
        run_id, _, call_id = self.calls[index]
        if plan is None or call_id == "none":
            return
        if not self.executor.alive:
            self.executor = self.executor.restart()
            self.outcomes += list(self.executor.recovered.values())
        held_before = call_id in self.granted
        try:
            outcome = self.executor.execute(call_id, plan)
        except ExecutorDead:
            return
        self.outcomes += [outcome, *outcome.rivals]
        won = [c for c in outcome.claims if 200 <= c.status < 300]
        expect(not (held_before and won), "EXE-01", f"no claim granted on call {call_id}, "
               "which an executor already holds with its acceptance confirmed",
               outcome.describe)
        if outcome.confirmed and outcome.detach is None:
            self.granted.add(call_id)
        if outcome.held:
            self.held[index] = outcome
        self.w.settle(run_id)

    def _release(self, index: int) -> None:
        if index not in self.held:
            return
        outcome = self.held.pop(index)
        if not self.executor.alive:
            self.executor = self.executor.restart()
        try:
            self.outcomes.append(self.executor.release(outcome.call_id))
        except ExecutorDead:
            return

    # -- invariants ------------------------------------------------------------------------

    def judge(self) -> None:
        business = self.executor.business
        expect(not business.repeated(), "EXE-01",
               "no operation done twice in the business system",
               lambda: f"done more than once: {business.repeated()}; "
                       f"{self._describe(business.repeated())}")
        self._judge_receipt_ids()
        self._judge_ended()
        self._judge_applied()

    def _describe(self, keys: Any) -> str:
        return "\n".join(o.describe() for o in self.outcomes if o.operation_key in keys)[:1500]

    def _judge_receipt_ids(self) -> None:
        first: dict[tuple[str, str], Any] = {}
        for outcome in self.outcomes:
            for delivery in outcome.deliveries:
                exchange = delivery.exchange
                if delivery.lost or not 200 <= exchange.status < 300:
                    continue
                answer = delivery.answer()
                shown = {k: v for k, v in answer.items() if k != "replayed"} \
                    if isinstance(answer, dict) else answer
                key = (outcome.call_id, delivery.receipt_id)
                if key in first:
                    was = canonical(first[key])
                    expect(canonical(shown) == was, ("EXE-08", "EXE-09"),
                           f"receipt {delivery.receipt_id} answered as it was the first time",
                           f"first {was[:200]}, now {exchange.describe()}")
                    if isinstance(answer, dict) and "replayed" in answer:
                        expect(answer.get("replayed") is True, "EXE-08",
                               f"the repeated receipt {delivery.receipt_id} answered "
                               "replayed: true", exchange.describe)
                else:
                    first[key] = shown

    def _ended_state(self, run_id: str, session: str) -> str | None:
        """The run's snapshot and histories once it has ended (the first seen is kept)."""
        snapshot = self.w.snapshot(run_id)
        if snapshot.get("state") != "ended":
            return None
        state = canonical([snapshot, self.w.history(session, "formal"),
                           self.w.history(session, "execution")])
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

    def _judge_applied(self) -> None:
        sessions = {call: session for _, session, call in self.calls}
        for outcome in self.outcomes:
            for delivery in outcome.of_kind("final"):
                answer = delivery.answer()
                if delivery.lost or not isinstance(answer, dict) or \
                        not 200 <= delivery.exchange.status < 300 or \
                        answer.get("run_ended") or answer.get("applied") is False:
                    continue
                session = sessions.get(outcome.call_id)
                body = _json(delivery.body)
                result = body.get("result") if isinstance(body, dict) else None
                if session is None or result is None:
                    continue
                formal = self.w.history(session, "formal")
                expect(contains_equal(formal, result), "BUD-16",
                       f"the {delivery.kind} result of {outcome.call_id} in the formal "
                       "history, canonically equal", canonical(formal)[:400])

    def settle_all(self) -> None:
        for run_id, _, _ in self.calls:
            snapshot, passed = self.w.settle(run_id)
            expect(snapshot.get("state") in SETTLED, "RUN-11",
                   f"run {run_id} ended or waiting for tools within {passed} timers",
                   str(snapshot))


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


class ExecutorFloor(RuleBasedStateMachine):
    def __init__(self, ctx: CheckContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.floor: Floor | None = None

    def _step(self, action: list[Any]) -> None:
        floor = self.floor
        assert floor is not None
        floor.actions.append(action)
        program = floor.program()
        floor.actions.pop()
        step(lambda _ctx: floor.act(action), self.ctx, program)

    @initialize()
    def setup(self) -> None:
        self.floor = Floor(self.ctx)
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


@stateful_check("EXE-01", "EXE-08", "EXE-09", "EXE-13", "BUD-16",
                machine=ExecutorFloor, steps=12, cap=20)
def test_executor_protocol_under_faults(ctx: CheckContext, case: Any) -> None:
    """Replays a program of the state machine: the same calls, plans and faults, in order."""
    floor = Floor(ctx)
    for action in case["actions"]:
        floor.act(action)
        floor.judge()
    floor.settle_all()
