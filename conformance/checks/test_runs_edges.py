"""Runs at their edges: which end reason each cause gives (RUN-11, RUN-16), a batch of tool
calls waited for whole (RUN-06), admission at exactly the first reservation (BIL-01, BIL-02).

Each edge is one a plausible engine gets wrong while every ordinary run still looks right: the
end reasons of a timeout and of an answer without usage swapped, the run queued again when the
first call of a batch is answered, a wallet holding exactly the reservation refused.
"""

from __future__ import annotations

from typing import Any

from arck.conformance import runoracle
from arck.conformance.checking import check, expect
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotApplicable, NotTestable
from arck.conformance.runworld import TOOL, ChannelSpec, messages, needs_virtual_time, world
from arck.simulator.provider import (
    LostResponse,
    ServerError,
    SlowAnswer,
    SlowStart,
    Step,
    ToolCall,
    UsageMissing,
)

FUNDS = 10**12
TEXT = "arck edge answer"

# The cause, its script (one run's model calls), and the end reason the reference profile
# names for it (docs/runs.md, Decisions). The channel's timeout is 30 s.
CAUSES: tuple[tuple[str, list[Step], str], ...] = (
    ("a text answer", [Step(text=TEXT)], "completed"),
    ("a request for input", [Step(request_input="Which order?")], "input_required"),
    ("a request for approval", [Step(request_approval="May I refund?")], "approval_required"),
    ("an answer 45 s late, past the 30 s timeout",
     [Step(text=TEXT, faults=[SlowAnswer(seconds=45)])], "model_timeout"),
    ("a lost answer (transport error)", [Step(text=TEXT, faults=[LostResponse()])],
     "cost_pending_reconciliation"),
    ("an answer without usage", [Step(text=TEXT, faults=[UsageMissing()])],
     "cost_pending_reconciliation"),
    ("four 503 refusals (the retries exhausted)",
     [Step(faults=[ServerError(status=503)])] * 4, "model_timeout"),
)


def _replay(what: str) -> str:
    return (f"Reproduce: a version whose model answers with {what}, one run, then "
            "GET /v1/runs/{run_id} once it has ended (docs/runs.md, Decisions).")


@check("RUN-11", "RUN-16")
def test_each_cause_ends_the_run_with_its_reason(ctx: CheckContext) -> None:
    """Each cause on its own ends its run, within a bounded number of timers (core: with some
    reason recorded); the reference profile names the reason per cause: a timeout is
    `model_timeout` and an answer of unknown cost `cost_pending_reconciliation`, never each
    other's, nor `completed` for an answer the engine could not use."""
    w = world(ctx)
    seen: list[str] = []
    for what, steps, reason in CAUSES:
        if not w.control.virtual_time and any(step.faults for step in steps):
            continue  # a 45 s answer or backoffs cost real minutes without the test clock
        agent = w.agent(steps)
        run_id = str(w.start(w.session(agent, w.wallet(FUNDS)), f"Cause: {what}")["run_id"])
        snapshot, _ = w.settle(run_id)
        got = snapshot.get("end_reason")
        seen.append(f"{what}: {got!r}")
        expect(snapshot.get("state") == "ended" and isinstance(got, str) and bool(got),
               "RUN-11", f"the run after {what} ended with its reason recorded",
               str(snapshot), _replay(what))
        if ctx.profile == "reference":
            expect(got == reason, ("RUN-11", "RUN-16"),
                   f"the run after {what} ended {reason!r} (docs/runs.md)",
                   f"{got!r}; so far: {'; '.join(seen)}", _replay(what))


@check("RUN-06", "RUN-16")
def test_a_batch_is_waited_for_whole(ctx: CheckContext) -> None:
    """A turn of three tool calls is one batch: while any of them is not final the run stays
    `waiting_tools` and the model is not called again, however the others were answered
    (completed, failed); the last final queues it, and its next request carries a tool
    message for each of the three calls."""
    w = world(ctx)
    calls = [ToolCall(name=TOOL, arguments={"part": n}) for n in range(3)]
    agent = w.agent([Step(tool_calls=calls), Step(text=TEXT)])
    session = w.session(agent, w.wallet(FUNDS))
    run_id = str(w.start(session, "Use the tool three times")["run_id"])
    snapshot, _ = w.settle(run_id)
    pending = [str(c.get("call_id")) for c in w.tool_calls(run_id)
               if c.get("state") == "dispatchable"]
    if snapshot.get("state") != "waiting_tools" or len(pending) != 3:
        raise NotTestable(f"not testable: the run never waited for its 3 tool calls: "
                          f"{snapshot}; dispatchable {pending}")
    kinds = ("completed", "failed")
    for n, call_id in enumerate(pending[:2]):
        kind = kinds[n]
        result: Any = {"part": n} if kind == "completed" else \
            {"code": "arck_edge", "message": "the edge failed"}
        answer = w.answer(call_id, result, f"arck-edge-{call_id}", kind)
        expect(200 <= answer.status < 300, "RUN-06", f"the {kind} receipt of call {n + 1} of "
               "3 taken", answer.describe)
        snapshot, _ = w.settle(run_id)
        sent = len(w.requests(agent))
        expect(snapshot.get("state") == "waiting_tools" and sent == 1, ("RUN-06", "RUN-16"),
               f"the run still waiting for its batch after {n + 1} of its 3 calls were final, "
               "and no second model request",
               f"run {snapshot}; {sent} model request(s)", _batch_replay(run_id))
    w.answer(pending[2], {"part": 2}, f"arck-edge-{pending[2]}")
    snapshot, _ = w.settle(run_id)
    requests = w.requests(agent)
    expect(len(requests) == 2, ("RUN-06", "RUN-16"),
           "the model called again once the whole batch was final",
           lambda: f"{len(requests)} model request(s); run {snapshot}", _batch_replay(run_id))
    sent_messages = [m for m in messages(requests[1]) if isinstance(m, dict)]
    answered = {str(m.get("tool_call_id")) for m in sent_messages if m.get("role") == "tool"}
    ids = {str(c.get("id")) for c in _last_calls(sent_messages)}
    expect(ids <= answered and len(ids) == 3, "RUN-06",
           "the request after the batch answering each of its 3 tool calls with a tool message",
           f"tool calls {sorted(ids)}, tool messages for {sorted(answered)}",
           _batch_replay(run_id))


def _batch_replay(run_id: str) -> str:
    return (f"Reproduce: answer the calls of GET /v1/runs/{run_id}/tool-calls one at a "
            f"time and read GET /v1/runs/{run_id} after each (docs/runs.md, Receipts).")


def _last_calls(sent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of the last assistant turn that made any."""
    calls: list[dict[str, Any]] = []
    for m in sent:
        if m.get("role") == "assistant" and isinstance(m.get("tool_calls"), list):
            calls = [c for c in m["tool_calls"] if isinstance(c, dict)]  # the last turn's
    return calls


# A channel whose reservation is not a whole number of micro-units: 13,000.037 exactly.
ODD = ChannelSpec(input_capacity=10_000, total_capacity=12_000, output_capacity=1_000,
                  input_price=1_000_003, output_price=3_000_007)


@check("BIL-01", "BIL-02")
def test_admission_at_exactly_the_reservation(ctx: CheckContext) -> None:
    """A wallet holding the first call's reservation exactly (capacity × price, rounded up to
    a micro-unit) covers it: the run is admitted and answered. Core: one micro-unit less than
    the unrounded figure's floor cannot cover any honest reservation (refused before any
    request); profile: the reservation is rounded up, so one micro-unit less is refused."""
    w = world(ctx)
    exact = runoracle.profile_reservation(ODD.input_capacity, ODD.output_capacity,
                                          ODD.input_price, ODD.output_price)
    channel = w.channel(ODD)
    profile = ctx.profile == "reference"
    cases = [(exact, True), (exact - 2, False)] + ([(exact - 1, False)] if profile else [])
    for funds, admitted in cases:
        agent = w.agent([Step(text=TEXT)], channel=channel)
        run_id = str(w.start(w.session(agent, w.wallet(funds)), "Hello")["run_id"])
        snapshot, _ = w.settle(run_id)
        sent = len(w.requests(agent))
        if admitted:
            expect(sent == 1 and snapshot.get("end_reason") != "insufficient_balance",
                   ("BIL-01", "BIL-02"),
                   f"a run on a wallet of {funds} micro-units (the reservation of "
                   f"{_figure()}, rounded up) admitted and its model called",
                   f"{sent} model request(s); run {snapshot}", _admission_replay(funds))
        else:
            expect(sent == 0 and snapshot.get("end_reason") == "insufficient_balance",
                   "BIL-02", f"a run on a wallet of {funds} micro-units (below the "
                   f"reservation of {_figure()}) ended insufficient_balance before sending",
                   f"{sent} model request(s); run {snapshot}", _admission_replay(funds))


def _figure() -> str:
    return (f"{ODD.input_capacity} × {ODD.input_price} + {ODD.output_capacity} × "
            f"{ODD.output_price} per million = 13,000.037")


def _admission_replay(funds: int) -> str:
    return (f"Reproduce: a channel {ODD.body('c')}, a wallet with a deposit of {funds}, a "
            "session and one run (docs/runs.md, Admission and Billing).")



@check("RUN-11", "RUN-16")
def test_the_model_timeout_fires_on_time(ctx: CheckContext) -> None:
    """Profile: a channel's `timeout_ms` (30 s) bounds the wait on the injected clock: an
    answer 29.5 s late is used, one 30.5 s late is abandoned, and the run ends
    `model_timeout` exactly 30 s after its call started (not at some later tick)."""
    if ctx.profile != "reference":
        raise NotApplicable("the channel's timeout_ms is the reference profile's wire")
    w = world(ctx)
    needs_virtual_time(w, "timing a model timeout to the second")
    for late, reason in ((29.5, "completed"), (30.5, "model_timeout")):
        agent = w.agent([Step(text=TEXT, faults=[SlowAnswer(seconds=late)])])
        run_id = str(w.start(w.session(agent, w.wallet(FUNDS)), f"{late} s")["run_id"])
        snapshot, _ = w.settle(run_id)
        expect(snapshot.get("end_reason") == reason, ("RUN-11", "RUN-16"),
               f"profile: an answer {late} s late on a 30 s channel ends the run {reason!r}",
               str(snapshot))
        if reason != "model_timeout":
            continue
        events = w.events(run_id)
        started = [e["at"] for e in events if e.get("type") == "model_call.started"
                   and isinstance(e.get("at"), int | float)]
        ended = [e["at"] for e in events if e.get("type") == "run.ended"
                 and isinstance(e.get("at"), int | float)]
        gap = float(ended[0]) - float(started[0]) if started and ended else None
        expect(gap is not None and abs(gap - 30.0) < 1e-6, ("RUN-11", "RUN-16"),
               "profile: the run ended model_timeout 30 s after its call started",
               f"model_call.started at {started}, run.ended at {ended}")


LATE_PROCESSING_S = 100.0  # the provider processes the timed-out call at 100 s
LOOKUPS = (60.0, 120.0, 240.0)  # docs/runs.md, Cost-pending calls: 60 s, then 120 s, 240 s


@check("BIL-03", "RUN-16")
def test_cost_pending_lookups_keep_their_schedule(ctx: CheckContext) -> None:
    """Profile: a call abandoned at its 30 s timeout is still being processed by the
    provider (`slow_start` 100 s): the lookup 60 s after the timeout finds it in progress,
    the next, 120 s later, finds it processed and settles it: `model_call.reconciled`
    exactly 180 s after the timeout (docs/runs.md, Cost-pending calls: 60 s, then 120 s,
    240 s, ...). Those two are the call's only lookups: an hour on, a settled call is not
    looked up again."""
    if ctx.profile != "reference":
        raise NotApplicable("the lookups' schedule is the reference profile's")
    w = world(ctx)
    needs_virtual_time(w, "timing cost-pending lookups to the second")
    agent = w.agent([Step(text=TEXT, faults=[SlowStart(seconds=LATE_PROCESSING_S)])])
    with w.faults("slow_start"):
        run_id = str(w.start(w.session(agent, w.wallet(FUNDS)), "late")["run_id"])
        snapshot, _ = w.settle(run_id)
    if snapshot.get("end_reason") != "model_timeout":
        raise NotTestable(f"not testable: the run did not end model_timeout: {snapshot}")
    settled = sum(LOOKUPS[:2])
    for _ in range(int((settled + LOOKUPS[2]) // 10) + 2):
        if w.of_type(run_id, "model_call.reconciled"):
            break
        w.control.advance(10.0)
    events = w.events(run_id)
    timed_out = [e["at"] for e in events if e.get("type") == "model_call.finished"
                 and isinstance(e.get("at"), int | float)]
    checked = [e for e in events if e.get("type") == "model_call.reconciled"]
    gap = float(checked[0]["at"]) - float(timed_out[0]) if timed_out and checked \
        and isinstance(checked[0].get("at"), int | float) else None
    expect(gap is not None and abs(gap - settled) < 1e-6
           and (checked[0].get("data") or {}).get("verdict") == "processed",
           ("BIL-03", "RUN-16"), f"profile: `model_call.reconciled` (processed) {settled:.0f} s "
           "after the timeout: in progress at the lookup 60 s after it, processed at the next, "
           "120 s later", f"model_call.finished at {timed_out}, reconciled "
           f"{[(e.get('at'), (e.get('data') or {}).get('verdict')) for e in checked]}")
    w.idle(3600.0)
    keys = {r.idempotency_key for r in w.provider.records() if r.conversation == agent.script}
    asked = sorted(t - float(timed_out[0]) for k in keys if k for t in w.provider.lookups(k))
    # The provider stamps what a service's timer sends at most one step (1 s) off over HTTP.
    due = (LOOKUPS[0], settled)
    expect(len(asked) == len(due)
           and all(abs(a - b) <= 1.0 for a, b in zip(asked, due, strict=True)),
           ("BIL-03", "RUN-16"),
           f"profile: the call looked up {LOOKUPS[0]:.0f} s and {settled:.0f} s after its "
           "timeout, and never again once settled (an hour on)",
           f"looked up at {[f'{a:g}' for a in asked]} s after the timeout",
           f"Reproduce: a call that times out while the provider is still processing it; "
           f"count GET /v1/arck/requests?idempotency_key=... at the provider for run {run_id}.")


@check("RUN-09", "RUN-13")
def test_the_session_goes_on_after_a_cancel_with_calls_open(ctx: CheckContext) -> None:
    """A run cancelled while its tool call waits leaves the call as it is (RUN-13), and the
    session's next run reuses the history (RUN-09) in a request the model can answer: one that
    answers every tool call it holds (a provider refuses a request with a call left
    unanswered, as this one does). The next run's model request is accepted, and under the
    reference profile the run ends `completed` (docs/runs.md, Cancelling a run with open tool
    calls)."""
    w = world(ctx)
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"order": 9})]),
                     Step(text=TEXT)])
    session = w.session(agent, w.wallet(FUNDS))
    first = str(w.start(session, "Look order 9 up")["run_id"])
    snapshot, _ = w.settle(first)
    if snapshot.get("state") != "waiting_tools":
        raise NotTestable(f"not testable: the run never waited for its tool call: {snapshot}")
    w.ok(w.target.cancel_run(first), f"cancel run {first}")
    before = len(w.requests(agent))
    then = str(w.start(session, "Never mind the order; just answer")["run_id"])
    snapshot, _ = w.settle(then)
    none_reached = "none: no request of the next run reached the model"
    statuses = {r.id: r.status_code for r in w.provider.records()}
    # a request the provider refuses as invalid (a call left unanswered) never reaches its
    # ledger: no status is recorded for it
    answers = [statuses.get(r.id) or "refused as invalid" for r in w.requests(agent)[before:]]
    replay = (f"Reproduce: a version whose model calls {TOOL} and then answers text; run 1 "
              "waits for its call and is cancelled (POST /v1/runs/{run_id}/cancel); run 2 on "
              "the same session: its model request must answer the cancelled run's call.")
    expect(bool(answers) and all(status == 200 for status in answers), ("RUN-09", "RUN-13"),
           "the next run's model request(s) accepted by the provider (every tool call of the "
           "history answered)", lambda: f"provider statuses {answers or none_reached}; "
           f"run 2 {snapshot}; "
           f"last request {w.requests(agent)[-1].body[-600:]!r}", replay)
    if ctx.profile == "reference":
        expect(snapshot.get("end_reason") == "completed", "RUN-13",
               "profile: the next run ended `completed`", str(snapshot), replay)


@check("RUN-11", "BIL-02")
def test_a_wallet_drained_mid_run_ends_the_run(ctx: CheckContext) -> None:
    """A wallet holding exactly the first call's reservation: the run is admitted, its first
    call charged (its usage × price, above zero), and the call after the tool's result can no
    longer be covered. That call is never sent (BIL-02), and the run ends by itself rather
    than waiting for money (RUN-11); under the reference profile `insufficient_balance`."""
    w = world(ctx)
    exact = runoracle.profile_reservation(ODD.input_capacity, ODD.output_capacity,
                                          ODD.input_price, ODD.output_price)
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"order": 4})]),
                     Step(text=TEXT)], channel=w.channel(ODD))
    run_id = str(w.start(w.session(agent, w.wallet(exact)), "Look order 4 up")["run_id"])
    snapshot, _ = w.settle(run_id)
    calls = [c for c in w.tool_calls(run_id) if c.get("state") == "dispatchable"]
    if snapshot.get("state") != "waiting_tools" or len(calls) != 1:
        raise NotTestable(f"not testable: the run never waited for its tool call: {snapshot}")
    w.ok(w.answer(str(calls[0].get("call_id")), {"order": 4}, f"arck-drained-{run_id}"),
         "send the tool call's receipt")
    snapshot, _ = w.settle(run_id)
    sent = len(w.requests(agent))
    replay = (f"Reproduce: a wallet of {exact} micro-units (the reservation of "
              f"{_figure()}), a version that calls {TOOL} then answers text; answer the call "
              "and read the run (docs/runs.md, Decisions).")
    expect(sent == 1, "BIL-02", "no second model request: the wallet cannot cover its "
           "reservation after the first call's charge", f"{sent} model request(s); {snapshot}",
           replay)
    expect(snapshot.get("state") == "ended" and bool(snapshot.get("end_reason")), "RUN-11",
           "the run ended, with its reason, once its next call could not be covered",
           str(snapshot), replay)
    if ctx.profile == "reference":
        expect(snapshot.get("end_reason") == "insufficient_balance", "RUN-11",
               "profile: the run ended `insufficient_balance`", str(snapshot), replay)


UNWATCHED_RUNS = 4  # more than a small pool of workers takes at once
UNWATCHED_ANSWER_S = 5.0  # each run's answer takes this long
UNWATCHED_S = 60.0  # three times what one worker needs to take the four in turn
ENGINE_TURNS = 120  # turns the engine answers itself: each one a new claim of the run
CHAT_HISTORY = "arck_chat_history"  # the reference profile's reserved tool (docs/runs.md)


@check("RUN-03", "RUN-11")
def test_runs_go_on_with_nobody_asking(ctx: CheckContext) -> None:
    """Runs started and then left alone (no read, no stream, no request of any kind, as when
    every client closed its page) still end by themselves: four runs whose answers each take
    5 s all ended a minute later, before anyone asked. Profile: a run of 120 turns that the
    engine answers itself (`arck_chat_history`: each turn queues the run again, so each is a
    new claim by some worker) has ended too. An engine that moves runs only while someone
    asks (workers that end with the run they held and start again on the next request)
    leaves queued what its remaining workers did not take, however many there are."""
    w = world(ctx)
    needs_virtual_time(w, "a minute in which nobody asks the service anything")
    wallet = w.wallet(FUNDS)
    runs = []
    for n in range(UNWATCHED_RUNS):
        agent = w.agent([Step(text=f"{TEXT} {n}",
                              faults=[SlowAnswer(seconds=UNWATCHED_ANSWER_S)])])
        runs.append(str(w.start(w.session(agent, wallet), f"Answer {n}, slowly")["run_id"]))
    if ctx.profile == "reference":
        looked = [Step(tool_calls=[ToolCall(name=CHAT_HISTORY, arguments={})])] * ENGINE_TURNS
        agent = w.agent([*looked, Step(text=TEXT)])
        runs.append(str(w.start(w.session(agent, wallet), "Look back, often")["run_id"]))
    w.control.advance(UNWATCHED_S)  # the clock moves; the service hears nothing else
    states = {run_id: w.snapshot(run_id).get("state") for run_id in runs}
    waiting = {run_id: state for run_id, state in states.items() if state != "ended"}
    expect(not waiting, ("RUN-03", "RUN-11"),
           f"all {len(runs)} runs ended within {UNWATCHED_S:g} s with no request (each "
           f"answer takes {UNWATCHED_ANSWER_S:g} s; profile: one run of {ENGINE_TURNS} turns "
           "the engine answers itself)", f"not ended: {waiting}",
           f"Reproduce: start runs whose model answers after {UNWATCHED_ANSWER_S:g} s (and "
           f"one of {ENGINE_TURNS} {CHAT_HISTORY} calls), send nothing for "
           f"{UNWATCHED_S:g} s, then GET each run.")
