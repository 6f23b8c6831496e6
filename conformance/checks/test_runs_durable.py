"""RUN-02: a run outlives its worker. The target is killed and started again (its `restart`
step) while a model call is in flight or while the run waits for tools; the run must go on
to the same end from its stored state, with no paid model call made twice."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import strategies as st

from arck.conformance import runoracle
from arck.conformance.checking import check, expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure, NotApplicable, NotTestable
from arck.conformance.runworld import (
    TOOL,
    Agent,
    ChannelSpec,
    RunWorld,
    canonical,
    messages,
    needs_virtual_time,
    world,
)
from arck.simulator.errors import StepUnavailable
from arck.simulator.provider import LostResponse, ServerError, SlowAnswer, Step, ToolCall

FUNDS = 10**12
IN_FLIGHT_S = 10.0  # each answer takes this long: well inside the channel's 30 s timeout
LOOK_S = 0.5  # how far time moves while waiting for a call to be sent
LOOKS = 8  # at most 4 s of waiting: the answer (10 s) is still in flight
POINTS = ("first call in flight", "waiting for tools", "second call in flight")


def _restart(w: RunWorld) -> None:
    restart = getattr(w.target, "restart", None)
    if not callable(restart):
        raise NotApplicable("the target offers no restart step (`restart` in its adapter)")
    try:
        restart()
    except StepUnavailable as exc:
        w.settle_all()  # a run left in flight would keep a worker from every later check
        raise NotApplicable(str(exc)) from None


def _in_flight(w: RunWorld, agent: Agent, calls: int) -> bool:
    """Wait (a few seconds at most) until the provider holds call `calls` unanswered."""
    for _ in range(LOOKS):
        records = [r for r in w.provider.records() if r.conversation == agent.script]
        if len(records) >= calls and records[calls - 1].outcome == "received":
            return True
        if len(records) >= calls:
            return False  # already answered: the moment has passed
        w.control.advance(LOOK_S)
    return False


def _kept(w: RunWorld, run_id: str, session: str, point: str) -> None:
    """Restart now; what was stored before must all be there after."""
    formal, execution = w.history(session, "formal"), w.history(session, "execution")
    calls = sorted(str(c.get("call_id")) for c in w.tool_calls(run_id))
    _restart(w)
    snapshot = w.snapshot(run_id)
    expect(snapshot.get("state") != "ended", "RUN-02",
           f"the run still going right after a restart ({point})", str(snapshot))
    for kind, before in (("formal", formal), ("execution", execution)):
        after = w.history(session, kind)
        expect(canonical(after) == canonical(before), "RUN-02",
               f"the {kind} history kept whole across a restart ({point})",
               f"before {canonical(before)[:300]} / after {canonical(after)[:300]}")
    now = sorted(str(c.get("call_id")) for c in w.tool_calls(run_id))
    expect(now == calls, "RUN-02", f"the same tool calls after a restart ({point})",
           f"before {calls}, after {now}")


def _cut_calls(w: RunWorld, agent: Agent, run_id: str, session: str, call: int,
               times: int) -> int:
    """Restart up to `times` times while model call `call` is in flight: how many did."""
    point = POINTS[0] if call == 1 else POINTS[2]
    for done in range(times):
        if not _in_flight(w, agent, call):
            return done
        _kept(w, run_id, session, point)
    return times


@property_check("RUN-02", cases=st.lists(st.sampled_from(POINTS), min_size=1, max_size=4),
                examples=(list(POINTS), [POINTS[0], POINTS[0]], [POINTS[1]]), cap=15)
def test_a_run_survives_restarts(ctx: CheckContext, case: Any) -> None:
    """Killed and started again at the chosen moments, the run goes on from its stored state:
    the tool call it waits for stays the one to answer, the answer in flight is not paid
    twice, and the run ends with the model's last answer in its formal history once (core
    also allows `cost_pending_reconciliation` after a restart that cut a call in flight, for
    a target that cannot look the call up; never a resend)."""
    points = Counter(case)
    w = world(ctx)
    needs_virtual_time(w, "waiting for a lapsed lease after a restart")
    slow = [SlowAnswer(seconds=IN_FLIGHT_S)]
    final = f"arck-final-{ctx.name('answer')}"
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"q": "lookup"})],
                          faults=slow), Step(text=final, faults=slow)])
    wallet = w.wallet(FUNDS)
    session = w.session(agent, wallet)
    text = "Look it up, then answer"
    run_id = str(w.start(session, text).get("run_id"))
    cut = _cut_calls(w, agent, run_id, session, 1, points[POINTS[0]])
    done = cut  # all restarts; `cut`, those that cut a call in flight
    snapshot, _ = w.settle(run_id)
    if snapshot.get("state") == "waiting_tools":
        for _ in range(points[POINTS[1]]):
            _kept(w, run_id, session, POINTS[1])
            done += 1
        pending = [c for c in w.tool_calls(run_id) if c.get("state") == "dispatchable"]
        expect(len(pending) == 1, "RUN-02", "one dispatchable tool call to answer",
               lambda: canonical(w.tool_calls(run_id))[:400])
        w.ok(w.answer(str(pending[0].get("call_id")), {"found": "arck-found"},
                      f"arck-r-{run_id}-1"), "send a completed receipt")
        second = _cut_calls(w, agent, run_id, session, 2, points[POINTS[2]])
        cut, done = cut + second, done + second
        snapshot, _ = w.settle(run_id)
    elif snapshot.get("state") != "ended":
        raise CheckFailure("RUN-02", "the run taken over after the restart and settled",
                           f"{snapshot} (restarts: {case})")
    if not done:
        raise NotTestable(f"not testable: none of the restart moments {case} came (no model "
                          "call in flight, or no wait for tools)")
    _judge(w, agent, session, run_id, snapshot, case, cut=cut > 0, final=final, text=text)


def _judge(
    w: RunWorld, agent: Agent, session: str, run_id: str, snapshot: dict[str, Any],
    case: list[str], *, cut: bool, final: str, text: str,
) -> None:
    reason = snapshot.get("end_reason")
    allowed = {"completed"}
    if cut and w.ctx.profile != "reference":
        allowed.add("cost_pending_reconciliation")
    expect(snapshot.get("state") == "ended" and reason in allowed, "RUN-02",
           f"the run continued to its end after restarts at {case} (end reason "
           f"{' or '.join(sorted(allowed))})", str(snapshot))
    billed = [r for r in w.provider.records() if r.conversation == agent.script and r.billed]
    sent = {r.id: r for r in w.requests(agent)}
    bodies = Counter(canonical(messages(sent[r.id])) for r in billed if r.id in sent)
    twice = [body for body, n in bodies.items() if n > 1]
    expect(not twice, "RUN-02", "no paid model call made twice (each request body billed "
           "once)", lambda: f"{len(twice)} body billed more than once: {twice[0][:300]}")
    expect(len(billed) <= 2, "RUN-02", "at most the script's two paid calls",
           f"{len(billed)} billed calls")
    if reason != "completed":
        return
    formal = w.history(session, "formal")
    finals = [i for i in formal if final in canonical(i)]
    inputs = [i for i in formal if text in canonical(i)]
    expect(len(finals) == 1 and len(inputs) == 1, "RUN-02",
           "the formal history holding the input once and the model's last answer once",
           lambda: canonical(formal)[:600])
    calls = w.tool_calls(run_id)
    expect(len(calls) == 1, "RUN-02", "one tool call for the one planned (none planned "
           "again after a restart)", lambda: canonical(calls)[:400])




SMALL = ChannelSpec(input_capacity=9_000, total_capacity=12_000, output_capacity=500)
SUMMARY_TEXT = "arck summary: the user asked about orders, nothing else of note"
TURNS = 10  # text turns of 3,500 bytes: a summary is due within the first five or six
IDLE_S = 4_000  # past every lookup the profile schedules for a cost-pending call (60 s..1 h)


def _summary_in_flight(w: RunWorld, model: str, run_id: str) -> bool:
    """Move time a little at a time until a summary request is at the provider, unanswered,
    while the run has not settled: the moment to restart."""
    for _ in range(LOOKS):
        records = [r for r in w.provider.records() if r.conversation == f"model:{model}"]
        if records and records[-1].outcome == "received":
            return True
        if w.snapshot(run_id).get("state") in ("ended", "waiting_tools"):
            return False
        w.control.advance(LOOK_S)
    return False


@check("RUN-02", "RUN-11", "RUN-12", "BIL-03")
def test_a_takeover_of_a_summary_call(ctx: CheckContext) -> None:
    """Killed while a compaction's summary call is in flight, the engine's next holder of the
    run checks that call, never resends it, never takes the summary for the model's answer,
    and the run ends, or goes on, within a bounded number of timers (it never loops on the
    call). The money of the summary is settled once: after an idle hour nothing is held,
    and no more than the provider billed is charged. Profile: the run ends
    `cost_pending_reconciliation` (docs/runs.md, Leases and recovery)."""
    w = world(ctx)
    needs_virtual_time(w, "waiting for a lapsed lease after a restart")
    summary = w.channel(ChannelSpec(model=w.ctx.name("summary-model")))
    slow = [SlowAnswer(seconds=IN_FLIGHT_S)]
    w.provider.add_model_script(summary.spec.model, [Step(text=SUMMARY_TEXT, faults=slow)] * 8)
    agent = w.agent([Step(text="noted")] * (TURNS + 2), channel=w.channel(SMALL),
                    summary_channel=summary)
    wallet = w.wallet(FUNDS)
    session = w.session(agent, wallet)
    run_id = ""
    for turn in range(TURNS):
        run_id = str(w.start(session, f"turn {turn}: " + "tell me more " * 269)["run_id"])
        if _summary_in_flight(w, summary.spec.model, run_id):
            break
        w.settle(run_id)
    else:
        raise NotTestable(f"not testable: no summary call was in flight in {TURNS} turns")
    _restart(w)
    snapshot, passed = w.settle(run_id)
    expect(snapshot.get("state") in ("ended", "waiting_tools"), "RUN-11",
           "the run taken over at its summary call settled within a bounded number of timers "
           "(never looping on the call)", f"after {passed} timers: {snapshot}")
    if ctx.profile == "reference":
        expect(snapshot.get("end_reason") == "cost_pending_reconciliation", "RUN-02",
               "profile: the run ended cost_pending_reconciliation (a summary call found sent "
               "is neither applied nor resent)", str(snapshot))
    bodies = Counter(canonical(messages(r)) for r in w.provider.recorded()
                     if r.conversation == f"model:{summary.spec.model}")
    expect(all(n == 1 for n in bodies.values()), "RUN-12",
           "the summary request found in flight never sent again",
           f"{sum(bodies.values())} summary request(s), {len(bodies)} distinct")
    formal = w.history(session, "formal")
    applied = [i for i in formal if SUMMARY_TEXT in canonical(i)]
    expect(not applied, "RUN-02", "the summary never entered the formal history as the "
           "model's answer", lambda: canonical(applied)[:300])
    w.idle(IDLE_S)
    state = w.wallet_state(wallet)
    billed = [r for r in w.provider.records()
              if r.billed and r.conversation in (agent.script, f"model:{summary.spec.model}")]
    spec = SMALL
    most = sum(runoracle.profile_charge(r.usage or r.true_usage, spec.input_price,
                                        spec.cached_price, spec.output_price) for r in billed)
    expect(isinstance(state.get("charged"), int) and state["charged"] <= most, "BIL-03",
           f"at most what the provider billed charged ({most} micro-units, each call "
           "rounded up)", str(state))
    if ctx.profile == "reference":
        expect(state.get("reserved") == 0, "BIL-03", "profile: nothing held an hour after "
               "the run ended (the summary call reconciled and settled)", str(state))


@check("RUN-02", "BIL-03")
def test_a_cost_pending_call_survives_a_restart(ctx: CheckContext) -> None:
    """A call whose answer was lost after the provider billed it leaves its reservation held
    (core: until reconciled, never charged twice); the service is killed and started again
    before the call is reconciled; an idle hour later the call was looked up and settled
    once, from the store, not from memory. Profile: nothing held, and charged = what the
    provider billed for it (docs/runs.md, Cost-pending calls: looked up 60 s on, then 120 s,
    ... at most an hour)."""
    w = world(ctx)
    needs_virtual_time(w, "waiting an hour for a cost-pending call's lookups")
    spec = ChannelSpec()
    agent = w.agent([Step(text="an answer lost on its way", faults=[LostResponse()])],
                    channel=w.channel(spec))
    wallet = w.wallet(FUNDS)
    with w.faults("lost_response"):
        run_id = str(w.start(w.session(agent, wallet), "Answer, then lose it")["run_id"])
        snapshot, _ = w.settle(run_id)
    held = w.wallet_state(wallet)
    expect(snapshot.get("state") == "ended" and held.get("reserved", 0) > 0, "BIL-03",
           "the run ended with the lost call's reservation held (cost unknown)",
           f"run {snapshot}; wallet {held}")
    _restart(w)
    after = w.snapshot(run_id)  # read as a client would after the restart: still ended
    expect(after.get("state") == "ended", "RUN-02", "the ended run still ended after the "
           "restart (a late result never revives it)", str(after))
    w.idle(IDLE_S)
    state = w.wallet_state(wallet)
    billed = [r for r in w.provider.records() if r.conversation == agent.script and r.billed]
    cost = sum(runoracle.profile_charge(r.usage or r.true_usage, spec.input_price,
                                        spec.cached_price, spec.output_price) for r in billed)
    charged = state.get("charged")
    expect(isinstance(charged, int) and charged <= cost, "BIL-03",
           f"at most the lost call's billed cost charged ({cost} micro-units), once",
           str(state))
    if ctx.profile == "reference":
        expect(state.get("reserved") == 0 and charged == cost, "BIL-03",
               f"profile: an hour after a restart the call was reconciled from the store: "
               f"nothing held, {cost} charged", str(state),
               f"Reproduce: a lost answer, a restart, then an idle hour; GET "
               f"/v1/wallets/{wallet} and GET /v1/runs/{run_id}/events (model_call.reconciled).")


@check("RUN-02", "RUN-11")
def test_a_restart_during_a_retry_backoff(ctx: CheckContext) -> None:
    """A call refused 503 waits out its backoff before it is sent again; the service is
    killed and started again during that wait. The run still ends (core). Profile: the
    schedule lives in the store, so neither the count nor the backoff is lost: 4 calls in
    all (3 retries), the run ends `model_timeout` after `model_call.given_up` with `calls` 4
    (docs/runs.md, Refused calls), and the takeover looks nothing up (no call was in flight).
    """
    w = world(ctx)
    needs_virtual_time(w, "a restart inside a backoff of one second")
    agent = w.agent([Step(faults=[ServerError(status=503)])] * 6)
    with w.faults("server_error"):
        run_id = str(w.start(w.session(agent, w.wallet(FUNDS)), "Answer, please")["run_id"])
        waiting: list[dict[str, Any]] = []
        for _ in range(LOOKS):  # time stands still: a slow service gets the moment it needs
            waiting = [e for e in w.events(run_id)
                       if e.get("type") == "model_call.retry_scheduled"]
            if waiting:
                break
            w.control.advance(0.0)
        if not waiting or w.snapshot(run_id).get("state") == "ended":
            raise NotTestable(f"not testable: no retry was waiting after the first refusal "
                              f"(events {canonical(w.events(run_id))[:300]})")
        _restart(w)
        snapshot, passed = w.settle(run_id)
    expect(snapshot.get("state") == "ended", "RUN-11", "the run refused again and again "
           "ended, a restart in its backoff notwithstanding", f"after {passed} timers: "
           f"{snapshot}")
    if ctx.profile != "reference":
        return
    sent = len(w.requests(agent))
    given_up = [e.get("data", {}) for e in w.events(run_id)
                if e.get("type") == "model_call.given_up"]
    expect(sent == 4 and snapshot.get("end_reason") == "model_timeout"
           and [g.get("calls") for g in given_up] == [4], ("RUN-02", "RUN-11"),
           "profile: 4 calls in all across the restart (the retry count kept in the store), "
           "then model_timeout after model_call.given_up with calls 4",
           f"{sent} call(s); run {snapshot}; given_up {canonical(given_up)}")
    checked = [e.get("data", {}) for e in w.events(run_id)
               if e.get("type") == "model_call.reconciled"]
    expect(not checked, "RUN-02", "profile: no `model_call.reconciled` at the takeover: the "
           "refused call was not in flight (only a call `sent`, its outcome unknown, is looked "
           "up: docs/runs.md, Check before continuing)", canonical(checked)[:300])
