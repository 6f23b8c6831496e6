"""RUN-03: the snapshot is the truth, and a dropped event stream cancels nothing; black-box
through the runs API, the target's optional step `drop_event_stream` and what the simulated
provider received."""

from __future__ import annotations

from collections.abc import Callable

from arck.conformance.checking import check, expect
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure, NotApplicable, NotTestable
from arck.conformance.runworld import SETTLED, TOOL, Agent, RunWorld, canonical, world
from arck.simulator.provider import SlowAnswer, Step, ToolCall
from arck.simulator.target import STREAM_MEDIA_TYPE as STREAM
from arck.simulator.target import Exchange, first_event_read

FUNDS = 10**12
IN_FLIGHT_S = 10.0  # each model answer is this late: well inside the channel's 30 s timeout
REACH_STEP_S, REACH_STEPS = 0.1, 40  # waiting for a model call to arrive: at most 4 s of it
ANSWER = "arck scripted answer: the order shipped"
# Where a run is when its stream is dropped: its first model call in flight, waiting for the
# tool call that call planned, its second (last) model call in flight.
PHASES = ("the first model call in flight", "waiting for its tool call",
          "the last model call in flight")
DROPS = 2  # in each phase: a client that reconnects and goes again


def _step(w: RunWorld, name: str, what: str) -> Callable[..., Exchange]:
    """The target's optional step `name`, or "not applicable" when it has none."""
    found = getattr(w.target, name, None)
    if not callable(found):
        raise NotApplicable(f"the target offers no {what} step (`{name}` in its adapter)")
    return found  # type: ignore[no-any-return]


def _available(exchange: Exchange) -> None:
    """An unknown route, or none of this `Accept`: the target has no stream to drop."""
    if exchange.status in (404, 405, 406, 501):
        raise NotApplicable(f"the target has no run event stream: {exchange.describe()}")


def _replay(exchange: Exchange, run_id: str) -> str:
    return (f"Reproduce: {exchange.as_curl()} -N -H 'Accept: {STREAM}', stop it "
            f"after the first event, then GET /v1/runs/{run_id} and wait for the run to end "
            "(docs/runs.md, How the checks judge runs).")


@check("RUN-03")
def test_dropped_stream_cancels_nothing(ctx: CheckContext) -> None:
    """A run whose event stream is dropped, twice (a client that reconnects and goes again)
    in each of its phases, each time after the stream's first event, goes on to the end its
    script gives it: the snapshot read right after each drop is not ended, the planned tool
    call is dispatchable and its receipt taken, the answer is in the formal history, and
    the run ends, not cancelled, after exactly its two model calls (profile: `completed`)."""
    w = world(ctx)
    drop = _step(w, "drop_event_stream", "drop-the-event-stream")
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"order": 1})],
                          faults=[SlowAnswer(seconds=IN_FLIGHT_S)]),
                     Step(text=ANSWER, faults=[SlowAnswer(seconds=IN_FLIGHT_S)])])
    session = w.session(agent, w.wallet(FUNDS))
    run_id = w.start(session, "Where is order 1?")["run_id"]

    _in_flight(w, agent, run_id, 1)
    _drop(w, drop, run_id, PHASES[0])
    snapshot, _ = w.settle(run_id)
    calls = [c for c in w.tool_calls(run_id) if c.get("state") == "dispatchable"]
    expect(snapshot.get("state") == "waiting_tools" and len(calls) == 1, "RUN-03",
           f"the run waiting for its scripted tool call after its stream was dropped "
           f"{DROPS} times with {PHASES[0]}", lambda: f"run {snapshot}; calls "
           f"{canonical(calls)[:300]}")
    _drop(w, drop, run_id, PHASES[1])
    call_id = str(calls[0].get("call_id"))
    receipt = w.answer(call_id, {"ok": True}, f"arck-stream-{call_id}")
    expect(200 <= receipt.status < 300, "RUN-03",
           "the tool call's receipt taken after the stream was dropped", receipt.describe)
    _in_flight(w, agent, run_id, 2)
    last = _drop(w, drop, run_id, PHASES[2])

    snapshot, _ = w.settle(run_id)
    formal = w.history(session, "formal")
    sent = len(w.requests(agent))
    expect(snapshot.get("state") == "ended" and snapshot.get("end_reason") != "cancelled"
           and sent == 2 and any(ANSWER in canonical(item) for item in formal), "RUN-03",
           "the run ended as scripted after its stream was dropped in every phase, not "
           "cancelled: both model calls answered, the answer in the formal history",
           lambda: f"run {snapshot}; {sent} model request(s); formal history "
           f"{canonical(formal)[-300:]}", _replay(last, run_id))
    if ctx.profile == "reference":
        expect(snapshot.get("end_reason") == "completed", "RUN-03",
               "profile: the run ended `completed`, as its last step answers text", str(snapshot))


def _drop(w: RunWorld, drop: Callable[..., Exchange], run_id: str, phase: str) -> Exchange:
    """Drop the run's stream DROPS times while it is `phase`, each time after the stream's
    first event; the last drop. The snapshot after each must not be ended: time has not
    moved, so nothing but the drop could have ended it."""
    before = w.snapshot(run_id)
    if before.get("state") not in ("queued", "running", "waiting_tools"):
        raise NotTestable(f"the run was not active when its stream was to be dropped "
                          f"({phase}): {before}")
    for n in range(1, DROPS + 1):
        exchange = drop(run_id)
        _available(exchange)
        expect(200 <= exchange.status < 300, "RUN-03",
               f"the run's event stream opened ({phase})", exchange.describe)
        kind = exchange.headers.get("content-type", "")
        if kind.split(";")[0].strip().lower() != STREAM:
            raise NotApplicable(f"the target answers no {STREAM} for a run's events: "
                                f"{exchange.describe()}")
        raw = [(k.encode(), v.encode()) for k, v in exchange.headers.items()]
        if not first_event_read(raw, exchange.body):
            raise NotTestable(f"the event stream sent no event before it was dropped "
                              f"({phase}): {exchange.describe()}", exchange=exchange)
        after = w.snapshot(run_id)
        if after.get("state") == "ended":
            raise CheckFailure(
                "RUN-03", f"the run still active right after its event stream was dropped "
                f"({phase}, drop {n} of {DROPS}); it was {before.get('state')} before",
                str(after), hint=_replay(exchange, run_id))
    return exchange


def _in_flight(w: RunWorld, agent: Agent, run_id: str, count: int) -> None:
    """The run's model call number `count` reached the provider and is not answered yet. A
    service calls its provider a moment after it was asked (on a loaded machine, a while):
    time moves in short steps meanwhile, up to well inside the answer's delay."""
    for _ in range(REACH_STEPS):
        if len(w.requests(agent)) >= count:
            break
        w.control.advance(REACH_STEP_S)
    sent = len(w.requests(agent))
    snapshot = w.snapshot(run_id)
    if snapshot.get("state") == "ended" and snapshot.get("end_reason") == "cancelled":
        raise CheckFailure("RUN-03", "the run going on after its event stream was dropped",
                           str(snapshot))
    if sent != count or snapshot.get("state") in SETTLED:
        raise NotTestable(f"the model call was not in flight: {sent} request(s) at the "
                          f"provider (expected {count}), run {snapshot}")
