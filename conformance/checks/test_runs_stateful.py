"""RUN, CTX, BIL as one stateful check: random conversations on a small channel, invariants
after every step, and a failure's shrunk conversation written out as a scenario file.

A hypothesis state machine picks the provider's script up front (text, tool calls, input and
approval requests; usage drift or missing, a lost answer, an answer slower than the channel's
30 s timeout, 503, 429), then steps: start a run with an input of random size, answer the
waiting tool calls with results of random size, cancel, move time, wait for the run. After
every step (black box, through `RunWorld` and the provider's records):

* RUN-08, CTX-07: each request of the conversation extends the previous one, unless its
  `model_call.started` reports a compaction;
* RUN-12: no request body sent again after a sending that was not refused;
* BIL-04: balance >= 0, reserved <= balance, charged at most Σ reported usage × price (each
  call rounded up); once nothing is in flight, nothing reserved and at least Σ rounded down;
* RUN-11: a run still active has a timer that will move it, and a wait settles it within a
  bounded number of timers.

The program so far (`{"plan", "actions"}`) is the failure's example: `arck replay` runs it
again, and `scenario_text` turns it into a scenario (docs/scenarios.md) the session writes
beside the case file.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from arck.conformance import runoracle as money
from arck.conformance.checking import expect, stateful_check, step
from arck.conformance.context import TOOL_DESCRIPTION, CheckContext
from arck.conformance.errors import CheckFailure, NotTestable
from arck.conformance.runworld import (
    PROMPT,
    SETTLED,
    TOOL,
    ChannelSpec,
    RunWorld,
    messages,
    needs_virtual_time,
    world,
)
from arck.simulator.provider import ScriptError, Step, script_tag
from arck.simulator.scenario import seeded
from arck.simulator.scenario.loader import written_scenario

CHANNEL = ChannelSpec(input_capacity=9_000, total_capacity=12_000, output_capacity=500)
AMPLE = 10**9  # funds no conversation here can spend: charges are judged from below too
FILLER = [{"text": "Done."}] * 16  # after the drawn steps: every call is scripted
UNKNOWN_OUTCOME = frozenset({"lost_response", "usage_missing", "slow"})
DRAIN_STEPS = 500  # timers passed between conversations, at most
INPUT_WORDS = "tell me more "
RESULT_WORDS = "lorem ipsum dolor "

TEXT = st.builds(lambda n: {"text": f"Answer {n}."}, st.integers(0, 99))
TOOL_CALLS = st.builds(lambda k: {"tool_calls": [{"name": TOOL, "arguments": {"q": f"item {i}"}}
                                                 for i in range(k)]}, st.integers(1, 2))
FAULTS = st.one_of(
    st.builds(lambda f: {"text": "Drifted.", "faults": [{"kind": "usage_drift", "factor": f}]},
              st.sampled_from([0.5, 1.3, 2.0])),
    st.just({"text": "No usage.", "faults": [{"kind": "usage_missing"}]}),
    st.just({"text": "Lost.", "faults": [{"kind": "lost_response"}]}),
    st.just({"text": "Slow.", "faults": [{"kind": "slow", "seconds": 45}]}),
    st.just({"faults": [{"kind": "server_error", "status": 503}]}),
    st.builds(lambda s: {"faults": [{"kind": "rate_limit", "retry_after": s}]},
              st.sampled_from([1, 7])),
)
# Answers and tool calls weigh twice a fault: conversations go on long enough to compact.
STEPS = st.one_of(TEXT, TOOL_CALLS, TEXT, TOOL_CALLS, st.just({"request_input": "Which one?"}),
                  st.just({"request_approval": "May I?"}), FAULTS)
# Inputs up to 9,000 bytes (~2,250 estimated tokens of a 7,000-token budget), large ones often.
INPUT_SIZES = st.one_of(st.integers(1, 9_000), st.sampled_from([5_000, 8_000, 9_000]))
PLANS = st.fixed_dictionaries({
    "script": st.lists(STEPS, min_size=1, max_size=8),
    "budget": st.sampled_from([1024, 4096]),
    "funds": st.sampled_from([AMPLE, 120_000]),
})


def _filled(words: str, size: int) -> str:
    return (words * (size // len(words) + 1))[:size]


def _input(size: int) -> str:
    return _filled(INPUT_WORDS, size)


def _result(size: int) -> dict[str, Any]:
    return {"status": "ok", "data": _filled(RESULT_WORDS, size)}


class Conversation:
    """One session of one agent on the small channel, driven action by action."""

    def __init__(self, ctx: CheckContext, plan: dict[str, Any]) -> None:
        self.ctx, self.plan = ctx, plan
        self.w: RunWorld = world(ctx)
        needs_virtual_time(self.w, "a random conversation (45 s slow answers, backoffs, "
                           "advances of a minute)")
        self.drain()  # what earlier checks left running must not hold this one's workers
        self._first = len(self.w.provider.records())
        self.actions: list[list[Any]] = []
        self.runs: list[str | None] = []  # one per run action, None when not created
        self.receipts = 0
        self._started: dict[str, dict[str, Any]] = {}  # call id → model_call.started data
        self._done: set[str] = set()  # ended runs whose started events are all read
        self._bodies: dict[str, tuple[bytes, list[Any]]] = {}
        steps = [Step.model_validate(s) for s in [*plan["script"], *FILLER]]
        self.script = self._register(steps)
        w, target = self.w, self.w.target
        channel = w.channel(CHANNEL)
        tool = {**ctx.tool(plan["budget"]), "name": TOOL, "description": TOOL_DESCRIPTION}
        tools = w.ok(target.publish_tool_set({"name": ctx.name("tools"), "tools": [tool]}),
                     "publish a tool set")
        body = {"tool_set_id": tools.get("tool_set_id"), "channel_id": channel.channel_id,
                "system_prompt": f"{PROMPT} {script_tag(self.script)}"}
        version = w.ok(target.publish_agent_version(ctx.agent_id, body),
                       "publish an agent version with a channel").get("agent_version")
        self.wallet = w.wallet(plan["funds"])
        session = w.ok(target.create_session({"agent_version": version,
                                              "wallet_id": self.wallet}), "create a session")
        self.session = str(session.get("session_id"))

    def _register(self, steps: list[Step]) -> str:
        """A script name of 8 characters, as a scenario's (`sc` and six letters)."""
        for attempt in range(100):
            name = seeded.script_name(self.ctx.seed or 0, f"stateful:{self.ctx.name('s')}:"
                                      f"{attempt}")
            try:
                self.w.provider.add_script(name, steps)
            except ScriptError:
                continue
            return name
        raise NotTestable("setup could not register a provider script")

    def drain(self) -> None:
        """Move time until no timer is pending (bounded): every run settled, every answer
        and lookup in, so the next conversation starts on an idle target, as a scenario
        does, and a replayed program behaves as it did."""
        control = self.w.control
        for _ in range(DRAIN_STEPS):
            deadline = control.next_deadline()
            if deadline is None:
                return
            control.advance(max(0.0, deadline - control.now()))

    def close(self) -> None:
        """Cancel what is still active, then drain."""
        for run_id in [r for r in self.runs if r is not None]:
            if self.w.snapshot(run_id).get("state") not in SETTLED:
                self.w.target.cancel_run(run_id)
        self.drain()

    @property
    def current(self) -> str | None:
        """The run of the last run action (as a scenario's actions default to)."""
        return self.runs[-1] if self.runs else None

    def program(self) -> dict[str, Any]:
        return {"plan": copy.deepcopy(self.plan), "actions": copy.deepcopy(self.actions)}

    # -- actions (each as a scenario's action does it) ---------------------------------------

    def act(self, action: list[Any]) -> None:
        self.actions.append(action)
        kind, target, run_id = action[0], self.w.target, self.current
        if kind == "run":
            exchange = target.create_run(self.session, {"input": _input(action[1])})
            data = exchange.json_or_none() if 200 <= exchange.status < 300 else None
            found = data.get("run_id") if isinstance(data, dict) else None
            self.runs.append(found if isinstance(found, str) else None)
        elif kind == "advance":
            self.w.control.advance(action[1])
        elif run_id is None:
            return
        elif kind == "receipt":
            if self.w.snapshot(run_id).get("state") != "waiting_tools":
                return  # an ended run's calls are claimed by nobody (docs/executors.md)
            for call in [c for c in self.w.tool_calls(run_id)
                         if c.get("state") == "dispatchable"]:
                self.receipts += 1
                self.w.answer(str(call.get("call_id")), _result(action[1]),
                              f"{target.info.name_prefix}rc-{self.receipts}")
        elif kind == "cancel":
            target.cancel_run(run_id)
        elif kind == "wait":
            snapshot, passed = self.w.settle(run_id)
            expect(snapshot.get("state") in SETTLED, "RUN-11",
                   f"run {run_id} ended or waiting for tools within {passed} timers",
                   lambda: f"still {snapshot.get('state')!r}: {snapshot}")

    # -- invariants -----------------------------------------------------------------------

    def judge(self) -> None:
        states = self._states()
        ours = self._ours()
        self._judge_prefix(ours)
        self._judge_resend(ours)
        self._judge_wallet(ours, states)

    def _states(self) -> dict[str, Any]:
        """Each run's state; one still active must have a timer that will move it (RUN-11)."""
        states: dict[str, Any] = {}
        for run_id in [r for r in self.runs if r is not None]:
            snapshot = self.w.snapshot(run_id)
            states[run_id] = snapshot.get("state")
            if states[run_id] not in SETTLED:
                expect(self.w.control.next_deadline() is not None, "RUN-11",
                       f"run {run_id}, still {states[run_id]!r}, with a timer that will move it",
                       f"no timer pending: the run hangs ({snapshot})")
            if run_id not in self._done:
                for event in self.w.events(run_id):
                    data = event.get("data")
                    if event.get("type") == "model_call.started" and isinstance(data, dict):
                        self._started[str(data.get("call_id"))] = data
                if states[run_id] == "ended":
                    self._done.add(run_id)
        return states

    def _ours(self) -> list[Any]:
        """The provider's records of this conversation and of its runs' summary calls (the
        records of earlier conversations are skipped by position, never read again)."""
        records = self.w.provider.records()[self._first:]
        keys = set(self._started)
        return [r for r in records if r.conversation == self.script or
                r.idempotency_key in keys]

    def _sent(self, record: Any) -> tuple[bytes, list[Any]] | None:
        """A record's body as received and its messages (read once)."""
        if record.id not in self._bodies:
            recorded = self.w.provider.recorded_request(record.id)
            if recorded is None:
                return None
            self._bodies[record.id] = (recorded.body, messages(recorded))
        return self._bodies[record.id]

    def _judge_prefix(self, ours: list[Any]) -> None:
        previous: list[Any] | None = None
        sent = [r for r in ours if r.conversation == self.script]
        for n, record in enumerate(sent, start=1):
            found = self._sent(record)
            if found is None:
                continue
            current = found[1]
            decision = ((self._started.get(str(record.idempotency_key)) or {}).get(
                "compaction") or {}).get("decision", "none")
            if previous is not None and decision in ("none", "summary_refused"):
                expect(current[: len(previous)] == previous, ("RUN-08", "CTX-07"),
                       f"request {n} of the conversation extends request {n - 1} (its "
                       f"model_call.started reports no compaction: {decision!r})",
                       functools.partial(_first_difference, previous, current))
            previous = current

    def _judge_resend(self, ours: list[Any]) -> None:
        sent: dict[bytes, str] = {}
        for record in ours:
            found = self._sent(record)
            if found is None:
                continue
            body = found[0]
            if body in sent:
                expect(False, "RUN-12",
                       "no model request sent again after a sending that was not refused",
                       f"{record.id} (Idempotency-Key {record.idempotency_key}) resends the "
                       f"body of {sent[body]}: {body[:200]!r}")
            refused = (record.status_code or 0) >= 400 or record.outcome == "failed"
            # RUN-12 forbids resending a request whose result or cost is unknown. The engine's
            # own requests (summaries) answered with usage were known to it: asking the same
            # stretch again later (its candidate refused) is no resend. The conversation's
            # own requests stay strict: one sent again means its answer was dropped.
            known = record.outcome == "answered" and record.usage is not None
            if not refused and not (record.conversation != self.script and known):
                sent.setdefault(body, record.id)

    def _judge_wallet(self, ours: list[Any], states: dict[str, Any]) -> None:
        state = self.w.wallet_state(self.wallet)
        balance, reserved, charged = (state.get(k) for k in ("balance", "reserved", "charged"))
        expect(all(isinstance(v, int) for v in (balance, reserved, charged)), "BIL-04",
               "integer balance, reserved and charged", str(state))
        assert isinstance(balance, int)
        assert isinstance(reserved, int)
        assert isinstance(charged, int)
        expect(balance >= 0 and reserved <= balance, "BIL-04",
               "a balance never negative and never more reserved than it holds", str(state))
        costs = [money.cost(r.usage or r.true_usage, CHANNEL.input_price, CHANNEL.cached_price,
                            CHANNEL.output_price) for r in ours if r.billed]
        high = sum(math.ceil(c) for c in costs)
        expect(charged <= high, "BIL-04",
               f"at most Σ reported usage × price charged ({high} micro-units, each call "
               f"rounded up, over {len(costs)} billed calls)", str(state))
        quiet = all(s in SETTLED for s in states.values()) and not any(
            r.outcome == "received" or UNKNOWN_OUTCOME & set(r.faults) for r in ours)
        if not quiet:
            return
        expect(reserved == 0, "BIL-04", "nothing reserved once nothing is in flight (every "
               "run settled, every answer known)", str(state))
        if self.plan["funds"] >= AMPLE:
            low = sum(math.floor(c) for c in costs)
            expect(charged >= low, "BIL-04",
                   f"at least Σ reported usage × price charged once nothing is in flight "
                   f"({low} micro-units, each call rounded down)", str(state))


def _first_difference(before: list[Any], after: list[Any]) -> str:
    for i, message in enumerate(before):
        if i >= len(after) or after[i] != message:
            shown = json.dumps(after[i], ensure_ascii=False)[:200] if i < len(after) else "gone"
            return (f"message {i} was {json.dumps(message, ensure_ascii=False)[:200]} and "
                    f"became {shown}")
    return "no difference"


class Conversations(RuleBasedStateMachine):
    """Random conversations: the script drawn first, then up to `steps` actions."""

    def __init__(self, ctx: CheckContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.convo: Conversation | None = None

    def _step(self, action: list[Any]) -> None:
        convo = self.convo
        assert convo is not None
        convo.actions.append(action)
        program = convo.program()
        convo.actions.pop()
        step(lambda _ctx: convo.act(action), self.ctx, program)

    @initialize(plan=PLANS)
    def setup(self, plan: dict[str, Any]) -> None:
        # Through `step`: a target without runs ends the check "not applicable" at once.
        step(lambda ctx: setattr(self, "convo", Conversation(ctx, plan)), self.ctx,
             {"plan": plan, "actions": []})

    @rule(size=INPUT_SIZES)
    def start_run(self, size: int) -> None:
        self._step(["run", size])

    @precondition(lambda self: self.convo is not None and bool(self.convo.runs))
    @rule(size=st.integers(0, 6_000))
    def answer_tools(self, size: int) -> None:
        self._step(["receipt", size])

    @precondition(lambda self: self.convo is not None and bool(self.convo.runs))
    @rule()
    def cancel(self) -> None:
        self._step(["cancel"])

    @rule(seconds=st.sampled_from([1, 10, 31, 61]))
    def advance_time(self, seconds: int) -> None:
        self._step(["advance", seconds])

    @precondition(lambda self: self.convo is not None and bool(self.convo.runs))
    @rule()
    def wait(self) -> None:
        self._step(["wait"])

    def teardown(self) -> None:
        if self.convo is not None:
            self.convo.close()

    @invariant()
    def invariants_hold(self) -> None:
        if self.convo is not None:
            convo = self.convo
            step(lambda _ctx: convo.judge(), self.ctx, convo.program())


# -- the failure as a scenario file --------------------------------------------------------

_INVARIANT_OF = (
    (("RUN-08", "CTX-07"), "extends_unless_compacted"),
    (("RUN-12",), "never_resent"),
    (("BIL-04",), "money_conserved"),
    (("RUN-11",), "runs_settle"),
)


def scenario_text(case: Any, failure: CheckFailure) -> str | None:
    """The failing program as a scenario (docs/scenarios.md), its expectation the invariant
    that broke; None when the program has no action a scenario can hold."""
    plan, actions = case.get("plan"), case.get("actions") or []
    broke = [name for ids, name in _INVARIANT_OF if set(ids) & set(failure.requirements)]
    if not isinstance(plan, dict) or not actions or not broke:
        return None
    written: list[dict[str, Any]] = []
    runs = 0
    for action in actions:
        kind = action[0]
        if kind == "run":
            runs += 1
            written.append({"run": {"input": _input(action[1])}})
        elif kind == "receipt":
            written.append({"receipt": {"result": _result(action[1])}})
        elif kind == "advance":
            written.append({"advance": {"seconds": action[1]}})
        else:
            written.append({kind: {}})
    if "runs_settle" in broke:
        written += [{"wait": {"run": f"r{n}"}} for n in range(1, runs + 1)]
    ids = ", ".join(failure.requirements)
    doc = {
        "name": "stateful-" + "-".join(r.lower() for r in failure.requirements)[:50],
        "description": (
            f"A conversation on which a target broke {ids}, shrunk by the stateful check "
            f"runs_stateful/test_random_conversations: expected {failure.expected}; saw "
            f"{failure.seen[:300]}. Judged at the end by the invariant it broke: "
            f"{', '.join(broke)}."),
        "agent": {"system_prompt": PROMPT, "tools": [{
            "name": TOOL, "description": TOOL_DESCRIPTION,
            "max_result_context_bytes": plan["budget"]}]},
        "channels": {"main": {
            "model": CHANNEL.model, "input_capacity": CHANNEL.input_capacity,
            "total_capacity": CHANNEL.total_capacity,
            "output_capacity": CHANNEL.output_capacity, "timeout_ms": CHANNEL.timeout_ms,
            "prices": {"input": CHANNEL.input_price, "cached_input": CHANNEL.cached_price,
                       "output": CHANNEL.output_price}}},
        "wallet": {"funds": plan["funds"]},
        "script": [*plan["script"], *FILLER],
        "actions": written,
        "expect": {"invariants": broke},
    }
    return written_scenario(doc)


@stateful_check("RUN-08", "RUN-11", "RUN-12", "CTX-07", "BIL-04", machine=Conversations,
                steps=12, scenario=scenario_text)
def test_random_conversations(ctx: CheckContext, case: Any) -> None:
    """Random conversations with faults on a channel small enough to compact: requests only
    extend unless a compaction is reported, nothing processed is sent twice, the wallet
    stays within reported usage × price, and every run settles."""
    convo = Conversation(ctx, case["plan"])
    convo.judge()
    for action in case["actions"]:
        convo.act(action)
        convo.judge()
    convo.close()
