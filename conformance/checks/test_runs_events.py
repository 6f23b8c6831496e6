"""RUN-16 (RUN-15 for model calls): the run events of the reference profile, as its docs name
them (conformance/data/run_events.json), and the event stream that carries them.

A handful of runs through the public API and the simulated provider that together produce
every documented event type; each run's event list is judged against the catalogue and the
order the docs state (`conformance/runevents.py`), and each scenario must show the types it
exists for. The stream of an ended run must be the JSON list (same events, ids and canonical
data), resumed from `Last-Event-ID` exactly after it; a malformed `Last-Event-ID` is 422
(PRO-02). `SCENARIOS` says which check produces which types: our own suite asserts that
together they produce every type of the catalogue (tests/conformance/test_event_catalogue.py).
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from arck.conformance import runevents
from arck.conformance.checking import check, expect
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure, NotApplicable, NotTestable
from arck.conformance.runevents import Finding
from arck.conformance.runworld import (
    TOOL,
    Agent,
    ChannelSpec,
    RunWorld,
    canonical,
    needs_virtual_time,
    only,
    world,
)
from arck.simulator.errors import StepUnavailable
from arck.simulator.provider import (
    Fault,
    LostResponse,
    ServerError,
    SlowAnswer,
    SlowStart,
    Step,
    ToolCall,
)
from arck.simulator.provider import script_tag as tag
from arck.simulator.target import STREAM_MEDIA_TYPE as STREAM
from arck.simulator.target import Exchange

FUNDS = 10**12
ANSWER = "arck events: the order shipped"
IN_FLIGHT_S = 10.0  # a slow answer: well inside the channel's 30 s timeout
STILL_ANSWERING_S = 25.0  # after a 15 s lease lapses, before the 30 s timeout
TIMEOUT_S = 30.0  # the channel's timeout_ms (docs/runs.md, Channels)
EDGE_S = 0.01  # how close to the timeout the takeover's call is processed, either side
SENDING_S = 10.0  # real seconds an engine may take to send a call once its run is queued
CLAIM_LAPSE_S = 31.0  # a claim's lease is 30 s (docs/executors.md, Claim)
RECONCILE_STEP_S = 70.0  # a cost-pending call is looked up 60 s after a worker sees it
RECONCILE_STEPS = 4
BACKOFFS = [1.0, 2.0, 4.0]  # Refused calls: no retry-after → 1 s, 2 s, 4 s; 3 retries
CALLS = 4  # "at most 3 retries per step (4 calls for one request)"
LATE_REFUSAL_S = 45.0  # past the channel's 30 s timeout, before the first lookup
# Compaction on a window of min(4,000, 6,000 − 500) − 2,000 = 2,000 tokens: three tool
# exchanges of 1,024-byte projections after a 2,000-byte input reach 70% before the fourth
# call even after local compaction, so a summary is asked, and the summary model's answer
# holds tool-call syntax: refused (docs/runs.md, Compaction).
SMALL = ChannelSpec(input_capacity=4_000, total_capacity=6_000, output_capacity=500)
FORGED_SUMMARY = "Summary: the tool_calls were made and answered."
# Uncompactable: a budget of min(3,000, 4,000 − 500) − 2,000 = 1,000 tokens under an
# 8,000-byte input (at least 2,000 tokens by the raw estimate).
TINY = ChannelSpec(input_capacity=3_000, total_capacity=4_000, output_capacity=500)
TINY_BUDGET = 1_000
# Header values that are no decimal integer of at most 18 digits (docs/runs.md, Event stream).
MALFORMED = ("abc", "-1", "1.5", "", "+1", "1e3", "0x1f", "1 2", "9" * 19, "9" * 40)


@dataclass(frozen=True)
class Scenario:
    """A run a check drives, the documented types it must produce and the end it reaches."""

    name: str
    how: str
    produces: tuple[str, ...]
    end_reason: str


SCENARIOS: dict[str, tuple[Scenario, ...]] = {
    "test_run_events_follow_the_catalogue": (
        Scenario("tool call", "a tool call whose first claim lapses, accepted by another "
                 "executor, one progress receipt, then a submission; then text",
                 ("run.created", "run.queued", "run.started", "model_call.started",
                  "model_call.finished", "tool_plan.accepted", "tool_call.claimed",
                  "tool_call.claim_lapsed",
                  "tool_call.progress", "receipt.stored", "run.ended"), "completed"),
        Scenario("detach and cancel", "two tool calls: one claimed and detached, claimed "
                 "again, accepted and detached; the other accepted, its business task cancel "
                 "asked, then its cancelled receipt; then text",
                 ("tool_call.claimed", "tool_call.detached", "tool_call.accepted",
                  "tool_call.cancel_requested", "receipt.stored", "run.ended"), "completed"),
        Scenario("engine answers", "calls to a tool the version lacks and to "
                 "arck_chat_history, then text", ("tool_call.unknown", "chat_history.answered",
                                                  "run.queued", "run.ended"), "completed"),
        Scenario("cancelled", "cancelled while waiting for its tool call",
                 ("tool_plan.accepted", "run.ended"), "cancelled"),
        Scenario("refused at admission", "a wallet of 1 micro-unit",
                 ("run.created", "admission.refused", "run.ended"), "insufficient_balance"),
        Scenario("retries exhausted", f"the provider answers 503 to all {CALLS} calls",
                 ("model_call.retry_scheduled", "model_call.given_up", "run.ended"),
                 "model_timeout"),
        Scenario("answer lost", "the answer lost after the provider billed it, then "
                 f"{RECONCILE_STEPS} × {RECONCILE_STEP_S:.0f} s",
                 ("model_call.finished", "run.ended", "model_call.reconciled"),
                 "cost_pending_reconciliation"),
        Scenario("refused late", f"the provider's 503 comes {LATE_REFUSAL_S:.0f} s after the "
                 f"call, past its 30 s timeout, then {RECONCILE_STEPS} × "
                 f"{RECONCILE_STEP_S:.0f} s", ("model_call.finished", "run.ended",
                                                "model_call.reconciled"), "model_timeout"),
        Scenario("compaction", "three tool exchanges on a 2,000-token window, the summary "
                 "model answering tool-call syntax", ("compaction.applied",
                                                      "compaction.refused", "run.ended"),
                 "completed"),
        Scenario("uncompactable", f"an 8,000-byte input on a {TINY_BUDGET}-token window",
                 ("compaction.uncompactable", "run.ended"), "context_uncompactable"),
    ),
    "test_takeover_events": (
        Scenario("takeover", "restarted while its model call is in flight",
                 ("run.recovered", "model_call.reconciled", "run.ended"), "completed"),
        Scenario("takeover, still answering", "restarted while its model call is in flight, "
                 "the answer coming after the lease lapsed",
                 ("run.recovered", "model_call.reconciled", "run.ended"), "completed"),
    ),
    "test_input_events": (
        Scenario("input during a call", "input appended while its tool plan is in flight",
                 ("input.appended", "tool_plan.discarded", "input.applied", "run.queued"),
                 "completed"),
    ),
    "test_revocation_events": (
        Scenario("revoked during a call", "its tool revoked while its plan is in flight",
                 ("permission.revoked", "tool_plan.refused", "run.ended"),
                 "permission_changed"),
        Scenario("revoked while waiting", "its tool revoked while its call waits, then the "
                 "receipt", ("permission.revoked", "receipt.stored", "permission.enforced"),
                 "permission_changed"),
    ),
}
_BY_NAME = {s.name: s for group in SCENARIOS.values() for s in group}
Extra = Callable[[list[dict[str, Any]]], list[Finding]]


# -- judging one run -----------------------------------------------------------------------


def _judge(w: RunWorld, name: str, run_id: str, extra: Extra | None = None) -> None:
    """The run's events against the catalogue, the documented order and what its scenario
    must produce; the first finding fails the check, naming the others."""
    scenario = _BY_NAME[name]
    snapshot = w.snapshot(run_id)
    if snapshot.get("state") != "ended":
        raise NotTestable(f"not testable: run {run_id} ({scenario.name}: {scenario.how}) did "
                          f"not end: {snapshot}")
    exchange = w.target.run_events(run_id)
    events = w.ok(exchange, f"read the events of run {run_id}").get("events")
    if not isinstance(events, list):
        raise NotTestable(f"the events of run {run_id} are not a list", exchange=exchange)
    catalogue = runevents.load()
    found = runevents.judge(events, snapshot.get("end_reason"), catalogue)
    found += runevents.wallet_findings(events, _wallet_of(w, snapshot))
    kinds = [e.get("type") for e in events if isinstance(e, dict)]
    missing = [t for t in scenario.produces if t not in kinds]
    if missing:
        ids = sorted({r for t in missing for r in catalogue.events[t].requirements})
        found.insert(0, Finding(tuple(ids), f"events of type {', '.join(missing)}, which "
                                "such a run records (docs/runs.md)", f"types {kinds}"))
    if snapshot.get("end_reason") != scenario.end_reason:
        found.append(Finding(("RUN-16",), f"the run ended `{scenario.end_reason}`",
                             str(snapshot)))
    if extra is not None:
        found += extra([e for e in events if isinstance(e, dict)])
    if found:
        first, rest = found[0], found[1:]
        more = f" (and {len(rest)} more: " + "; ".join(
            f"{f.expected}: {f.seen[:160]}" for f in rest[:4]) + ")" if rest else ""
        raise CheckFailure(
            first.requirements, f"run {run_id} ({scenario.name}: {scenario.how}): "
            f"{first.expected}", first.seen + more,
            hint=f"Reproduce: {exchange.as_curl()} (docs/runs.md; the catalogue: "
            "conformance/data/run_events.json)")


def _wallet_of(w: RunWorld, snapshot: dict[str, Any]) -> dict[str, Any]:
    """The wallet of the run's session (each scenario's run has its own: `_run`)."""
    session_id = snapshot.get("session_id")
    session = w.ok(w.target.request("GET", f"/v1/sessions/{session_id}"),
                   f"read session {session_id}")
    return w.wallet_state(str(session.get("wallet_id")))


def _of(events: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e.get("data") or {} for e in events if e.get("type") == kind]


def _finding(condition: bool, expected: str, seen: Callable[[], str],
             requirements: tuple[str, ...] = ("RUN-16", "RUN-15")) -> list[Finding]:
    return [] if condition else [Finding(requirements, expected, seen())]


# -- the scenarios -------------------------------------------------------------------------


def _run(w: RunWorld, agent: Agent, text: str, funds: int = FUNDS) -> str:
    session = w.session(agent, w.wallet(funds))
    return str(w.start(session, text).get("run_id"))


def _waiting_call(w: RunWorld, run_id: str) -> str:
    snapshot, _ = w.settle(run_id)
    calls = [c for c in w.tool_calls(run_id) if c.get("state") == "dispatchable"]
    call = only(calls, f"dispatchable tool call of run {run_id}", f"run {snapshot}")
    return str(call.get("call_id"))


def _tool_call(w: RunWorld) -> None:
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"order": 7})]),
                     Step(text=ANSWER)])
    run_id = _run(w, agent, "Where is order 7?")
    call_id = _waiting_call(w, run_id)
    other = w.register_executor()
    w.ok(w.executors().claim(call_id, other), f"claim tool call {call_id}")
    w.idle(CLAIM_LAPSE_S)
    claim = w.accept(call_id)
    progress = {"receipt_id": f"arck-progress-{call_id}", "claim_id": claim, "kind": "progress",
                "sequence": 1, "data": {"done": 50}}
    w.ok(w.target.submit_receipt(call_id, progress, role=w.executor()),
         "send a progress receipt")
    w.ok(w.finish(call_id, claim, f"arck-final-{call_id}", {"task": "t-7"}, "submission"),
         "send a submission receipt")
    w.settle(run_id)

    def protected(events: list[dict[str, Any]]) -> list[Finding]:
        stored = _of(events, "receipt.stored")
        return _finding(any(s.get("kind") == "submission" and s.get("protected") is True
                            for s in stored),
                        "`receipt.stored` of the submission with `protected: true` "
                        "(docs/runs.md, Protected results)", lambda: str(stored),
                        ("RUN-16",))

    _judge(w, "tool call", run_id, protected)


def _detach_and_cancel(w: RunWorld) -> None:
    calls = [ToolCall(name=TOOL, arguments={"order": n}) for n in (12, 13)]
    agent = w.agent([Step(tool_calls=calls), Step(text=ANSWER)])
    run_id = _run(w, agent, "Where are orders 12 and 13?")
    w.settle(run_id)
    pending = [str(c.get("call_id")) for c in w.tool_calls(run_id)
               if c.get("state") == "dispatchable"]
    if len(pending) != 2:
        raise NotTestable(f"not testable: run {run_id} did not wait on two tool calls: "
                          f"{pending}")
    first, second = pending
    target, role = w.executors(), w.executor()
    claim = str(w.ok(target.claim(first, role), f"claim {first}").get("claim_id"))
    w.ok(target.detach(first, claim, role), f"detach {first} before acceptance")
    w.ok(target.detach(first, w.accept(first), w.executor()), f"detach {first} after acceptance")
    claim = w.accept(second)
    w.ok(target.request_tool_cancel(second), f"ask to cancel the business task of {second}")
    w.ok(w.finish(second, claim, f"arck-cancelled-{second}", None, "cancelled"),
         f"send the cancelled receipt of {second}")
    w.settle(run_id)

    def detached(events: list[dict[str, Any]]) -> list[Finding]:
        flags = [d.get("accepted") for d in _of(events, "tool_call.detached")]
        return _finding(flags == [False, True], "`tool_call.detached` twice: `accepted` false "
                        "for the detach before acceptance, true for the one after",
                        lambda: str(flags), ("RUN-16",))

    _judge(w, "detach and cancel", run_id, detached)


def _engine_answers(w: RunWorld) -> None:
    calls = [ToolCall(name="arck_no_such_tool", arguments={}),
             ToolCall(name="arck_chat_history", arguments={})]
    agent = w.agent([Step(tool_calls=calls), Step(text=ANSWER)])
    run_id = _run(w, agent, "Anything new?")
    w.settle(run_id)
    _judge(w, "engine answers", run_id)


def _cancelled(w: RunWorld) -> None:
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"order": 8})]),
                     Step(text="never sent")])
    run_id = _run(w, agent, "Cancel me")
    _waiting_call(w, run_id)
    w.ok(w.target.cancel_run(run_id), f"cancel run {run_id}")
    w.settle(run_id)
    _judge(w, "cancelled", run_id)


def _refused_run(w: RunWorld) -> str:
    agent = w.agent([Step(text="never sent")])
    run_id = _run(w, agent, "Hello", funds=1)
    w.settle(run_id)
    return run_id


def _refused(w: RunWorld) -> None:
    _judge(w, "refused at admission", _refused_run(w))


def _retries(w: RunWorld) -> None:
    agent = w.agent([Step(faults=[ServerError(status=503)])] * CALLS)
    with w.faults("server_error"):
        run_id = _run(w, agent, "Are you there?")
        w.settle(run_id)

    def counted(events: list[dict[str, Any]]) -> list[Finding]:
        started = [d for d in _of(events, "model_call.started") if d.get("purpose") == "main"]
        scheduled = _of(events, "model_call.retry_scheduled")
        given = _of(events, "model_call.given_up")
        retries = [d.get("retry") for d in started[1:]]
        want_retries = [{"attempt": n, "of": started[n - 1].get("call_id")}
                        for n in range(1, len(started))]
        return (
            _finding(len(given) == 1 and given[0].get("calls") == CALLS == len(started)
                     and given[0].get("why") == "retries exhausted"
                     and given[0].get("status") == 503,
                     f"one `model_call.given_up` with `calls` {CALLS} (= the {CALLS} model "
                     "calls started), `why` \"retries exhausted\", `status` 503",
                     lambda: f"given_up {given}; {len(started)} main call(s) started")
            + _finding([d.get("attempt") for d in scheduled] == [1, 2, 3]
                       and [d.get("delay") for d in scheduled] == BACKOFFS,
                       "`model_call.retry_scheduled` attempts 1, 2, 3 with delays 1, 2, 4 s "
                       "(no retry-after)", lambda: str(scheduled))
            + _finding(retries == want_retries, "each retry's `model_call.started` with "
                       "`retry` {attempt, of: the refused call it repeats}",
                       lambda: f"{retries}, expected {want_retries}"))

    _judge(w, "retries exhausted", run_id, counted)


def _lost_run(w: RunWorld) -> str:
    """A run whose answer was lost (cost pending), then time for its reconciliation."""
    agent = w.agent([Step(text=ANSWER, faults=[LostResponse()])])
    with w.faults("lost_response"):
        run_id = _run(w, agent, "Hello?")
        w.settle(run_id)
    _until_reconciled(w, run_id)
    return run_id


def _until_reconciled(w: RunWorld, run_id: str) -> None:
    """Time on, a step at a time, until the run's cost-pending call is reconciled."""
    for _ in range(RECONCILE_STEPS):
        if w.of_type(run_id, "model_call.reconciled"):
            break
        w.control.advance(RECONCILE_STEP_S)


def _lost(w: RunWorld) -> None:
    run_id = _lost_run(w)

    def settled(events: list[dict[str, Any]]) -> list[Finding]:
        found = _of(events, "model_call.reconciled")
        return _finding(len(found) == 1 and found[0].get("verdict") == "processed",
                        "one `model_call.reconciled` with `verdict` \"processed\" (the "
                        "provider billed the lost answer)", lambda: str(found))

    _judge(w, "answer lost", run_id, settled)


def _refused_late(w: RunWorld) -> None:
    """A call given up at its timeout whose provider answers 503 later: looked up, `refused`,
    nothing charged, the whole reservation released (docs/runs.md, Cost-pending calls)."""
    agent = w.agent([Step(faults=[SlowStart(seconds=LATE_REFUSAL_S),
                                  ServerError(status=503)])])
    with w.faults("slow_start", "server_error"):  # the 503 goes out after the run ended
        run_id = _run(w, agent, "Anyone?")
        w.settle(run_id)
        _until_reconciled(w, run_id)

    def released(events: list[dict[str, Any]]) -> list[Finding]:
        found = _of(events, "model_call.reconciled")
        return _finding(len(found) == 1 and found[0].get("verdict") == "refused",
                        "one `model_call.reconciled` with `verdict` \"refused\" (the "
                        "provider answered the call 503, after its timeout)",
                        lambda: str(found))

    _judge(w, "refused late", run_id, released)


def _compaction(w: RunWorld) -> None:
    summary = w.channel(ChannelSpec(model=w.ctx.name("summary-model")))
    w.provider.add_model_script(summary.spec.model, [Step(text=FORGED_SUMMARY)] * 4)
    steps = [Step(tool_calls=[ToolCall(name=TOOL, arguments={"page": n})]) for n in range(3)]
    agent = w.agent([*steps, Step(text=ANSWER)], channel=w.channel(SMALL),
                    summary_channel=summary)
    run_id = _run(w, agent, "x" * 2_000)
    w.answer_all(run_id, {"status": "ok", "rows": "r" * 3_000})
    _judge(w, "compaction", run_id)


def _uncompactable(w: RunWorld) -> None:
    agent = w.agent([Step(text="never sent")], channel=w.channel(TINY))
    run_id = _run(w, agent, "y" * 8_000)
    w.settle(run_id)

    def budget(events: list[dict[str, Any]]) -> list[Finding]:
        found = _of(events, "compaction.uncompactable")
        return _finding([d.get("effective_budget") for d in found] == [TINY_BUDGET],
                        f"`compaction.uncompactable` with `effective_budget` {TINY_BUDGET} "
                        "(min(3,000, 4,000 − 500) − 2,000)", lambda: str(found), ("RUN-16",))

    _judge(w, "uncompactable", run_id, budget)


@check("RUN-16", "RUN-15")
def test_run_events_follow_the_catalogue(ctx: CheckContext) -> None:
    """Runs that complete after a tool call (a lapsed claim, progress, a protected result) or
    after two (detached before and after acceptance; a business cancel), meet tools the
    engine answers, are cancelled, refused at admission, give up after three
    retries, lose an answer then reconcile it, have a late refusal looked up, compact and
    refuse a summary, or cannot
    compact: every event of each has its documented members and types, ids count 1, 2, ...,
    `run.ended` is recorded once with the snapshot's reason and only a model call's
    settlement follows it, and each run shows the types its scenario exists for."""
    w = world(ctx)
    needs_virtual_time(w, "retry backoffs, a lapsed claim and a reconciliation a minute on")
    for scenario in (_tool_call, _detach_and_cancel, _engine_answers, _cancelled, _refused,
                     _retries, _lost, _refused_late, _compaction, _uncompactable):
        scenario(w)


@check("RUN-16", "RUN-15")
def test_takeover_events(ctx: CheckContext) -> None:
    """A run restarted while its model call is in flight is taken over: `run.recovered` with
    the new and the previous worker and when the lease lapsed, then `model_call.reconciled`
    (the provider processed the call: not resent) before the run completes. Once with the
    answer billed before the lease lapses, once with the provider still working on it (it
    processes the call 25 s after it came, inside the channel's 30 s timeout): the new holder
    looks it up until it is processed, and takes the run over once."""
    w = world(ctx)
    needs_virtual_time(w, "waiting for a lapsed lease after a restart")
    restart = getattr(w.target, "restart", None)
    if not callable(restart):
        raise NotApplicable("the target offers no restart step (`restart` in its adapter)")
    _judge(w, "takeover", _restarted(w, restart, SlowAnswer(seconds=IN_FLIGHT_S)),
           _recovered)
    with w.faults("slow_start"):
        still = _restarted(w, restart, SlowStart(seconds=STILL_ANSWERING_S))
    _judge(w, "takeover, still answering", still, _recovered)


@check("RUN-11", "RUN-16")
def test_a_takeover_keeps_the_model_timeout(ctx: CheckContext) -> None:
    """Profile: a worker that takes over a run whose model call is in flight looks the call up
    until the channel's 30 s timeout from when the call started, no shorter: a call the
    provider processes 10 ms before the timeout is used (the run completes, not resent), one
    it processes 10 ms after ends the run `model_timeout` exactly 30 s after the call
    started."""
    if ctx.profile != "reference":
        raise NotApplicable("the channel's timeout_ms and the lookups' schedule are the "
                            "reference profile's")
    w = world(ctx)
    needs_virtual_time(w, "timing a takeover's lookups to the millisecond")
    restart = getattr(w.target, "restart", None)
    if not callable(restart):
        raise NotApplicable("the target offers no restart step (`restart` in its adapter)")
    for late, reason in ((TIMEOUT_S - EDGE_S, "completed"), (TIMEOUT_S + EDGE_S, "model_timeout")):
        with w.faults("slow_start"):
            run_id = _restarted(w, restart, SlowStart(seconds=late))
        events = w.events(run_id)
        ended = w.snapshot(run_id).get("end_reason")
        hint = f"the run's events: GET /v1/runs/{run_id}/events"
        expect(ended == reason, ("RUN-11", "RUN-16"),
               f"profile: a call the provider processes {late} s after it came, taken over "
               f"after a restart, ends the run {reason!r} (lookups go on until the "
               f"{TIMEOUT_S:g} s timeout from the call's start)",
               f"end {ended!r}; events {[e.get('type') for e in events]}", hint=hint)
        if reason != "model_timeout":
            continue
        started = [e["at"] for e in events if e.get("type") == "model_call.started"
                   and isinstance(e.get("at"), int | float)]
        finished = [e["at"] for e in events if e.get("type") == "run.ended"
                    and isinstance(e.get("at"), int | float)]
        gap = float(finished[0]) - float(started[0]) if started and finished else None
        expect(gap is not None and abs(gap - TIMEOUT_S) < 1e-6, ("RUN-11", "RUN-16"),
               f"profile: after a takeover, the run ended model_timeout {TIMEOUT_S:g} s after "
               "its call started", f"model_call.started at {started}, run.ended at {finished}",
               hint=hint)


def _restarted(w: RunWorld, restart: Callable[[], None], fault: Fault) -> str:
    """A run restarted while its one model call is in flight (the provider's `fault` holding
    it), settled."""
    agent = w.agent([Step(text=ANSWER, faults=[fault])])
    run_id = _run(w, agent, "Take your time")
    _in_flight(w, agent, run_id)
    try:
        restart()
    except StepUnavailable as exc:
        w.settle_all()  # a run left in flight would keep a worker from every later check
        raise NotApplicable(str(exc)) from None
    w.settle(run_id)
    return run_id


def _recovered(events: list[dict[str, Any]]) -> list[Finding]:
    found = [e for e in events if e.get("type") == "run.recovered"]
    data = [e.get("data") or {} for e in found]
    reconciled = _of(events, "model_call.reconciled")
    return (
        _finding(len(found) == 1 and data[0].get("worker") != data[0].get("previous_worker")
                 and isinstance(data[0].get("lease_expired_at"), int | float)
                 and isinstance(found[0].get("at"), int | float)
                 and data[0]["lease_expired_at"] <= found[0]["at"],
                 "one `run.recovered`: a new `worker`, the `previous_worker`, and "
                 "`lease_expired_at` no later than the takeover", lambda: str(found),
                 ("RUN-16",))
        + _finding(len(reconciled) == 1 and reconciled[0].get("verdict") == "processed"
                   and reconciled[0].get("resent") is False,
                   "one `model_call.reconciled`: `verdict` \"processed\", `resent` false",
                   lambda: str(reconciled)))


def _optional(w: RunWorld, name: str, what: str) -> Callable[..., Exchange]:
    found = getattr(w.target, name, None)
    if not callable(found):
        raise NotApplicable(f"the target offers no {what} step (`{name}` in its adapter)")
    return found  # type: ignore[no-any-return]


def _answered(exchange: Exchange, what: str) -> None:
    if exchange.status in (404, 405, 501):
        raise NotApplicable(f"the target has no {what}: {exchange.describe()}")
    if not 200 <= exchange.status < 300:
        raise NotTestable(f"setup could not {what}: {exchange.describe()}", exchange=exchange)


def _in_flight(w: RunWorld, agent: Agent, run_id: str) -> None:
    """Wait until the provider holds the run's first call unanswered: 4 s of virtual time in
    0.5 s steps, then up to SENDING_S real seconds with the clock standing still (an engine on
    a loaded machine may take longer to send the call than the clock requests take)."""
    patience = time.monotonic() + SENDING_S
    steps = 0
    while True:
        records = [r for r in w.provider.records() if r.conversation == agent.script]
        if records and records[0].outcome == "received":
            return
        if records or (steps >= 8 and time.monotonic() > patience):
            break
        w.control.advance(0.5 if steps < 8 else 0.0)
        steps += 1
        if steps > 8:
            time.sleep(0.05)
    seen = f"already {records[0].outcome}" if records else "never sent"
    raise NotTestable(f"not testable: the first model call of run {run_id} was not in flight "
                      f"({seen}): {w.snapshot(run_id)}")


@check("RUN-16")
def test_input_events(ctx: CheckContext) -> None:
    """Input appended while a tool plan is in flight: `input.appended`, the plan discarded
    (`tool_plan.discarded` naming the input), `input.applied`, the run queued again with a
    `why`, and completed."""
    w = world(ctx)
    append = _optional(w, "append_input", "appended-input")
    slow = [SlowAnswer(seconds=IN_FLIGHT_S)]
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"n": 1})], faults=slow),
                     Step(text=ANSWER)])
    run_id = _run(w, agent, "Look it up")
    _in_flight(w, agent, run_id)
    appended = append(run_id, "arck events: and the invoice too")
    _answered(appended, "appended-input step")
    input_id = (appended.json_or_none() or {}).get("input_id")
    w.settle(run_id)

    def discarded(events: list[dict[str, Any]]) -> list[Finding]:
        found = _of(events, "tool_plan.discarded")
        queued = [d for d in _of(events, "run.queued") if "why" in d]
        return _finding(len(found) == 1 and input_id in (found[0].get("input_ids") or [])
                        and bool(queued), "one `tool_plan.discarded` naming the input "
                        f"{input_id!r}, and `run.queued` with `why`",
                        lambda: f"discarded {found}; queued with why {queued}", ("RUN-16",))

    _judge(w, "input during a call", run_id, discarded)


def _own_agent(w: RunWorld, steps: Callable[[str], list[Step]]) -> Agent:
    """A version whose one tool has a name of this check's own (a revocation is for good and
    reaches every version of the agent: no other check's runs may use the name), following
    `steps(name)`."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", w.ctx.name("events-revocable"))[:64]
    script = w.ctx.name("script")
    w.provider.add_script(script, steps(name))
    tool_set = w.target.publish_tool_set({"name": w.ctx.name("tools"),
                                          "tools": [{**w.ctx.tool(1024), "name": name}]})
    prompt = f"You are an arck conformance agent. {tag(script)}"
    channel = w.channel()
    body = {"tool_set_id": w.ok(tool_set, "publish a tool set").get("tool_set_id"),
            "system_prompt": prompt, "channel_id": channel.channel_id}
    version = w.ok(w.target.publish_agent_version(w.ctx.agent_id, body),
                   "publish an agent version with a channel").get("agent_version")
    if not isinstance(version, str):
        raise NotTestable("setup could not publish an agent version: no agent_version")
    return Agent(version, script, prompt, name, channel, None)


@check("RUN-16")
def test_revocation_events(ctx: CheckContext) -> None:
    """A tool revoked while the plan naming it is in flight: `permission.revoked`, then
    `tool_plan.refused`, and the run ends `permission_changed`. Revoked while a call of it
    waits: `permission.revoked`, the receipt taken, then `permission.enforced` at the next
    step and `permission_changed`."""
    w = world(ctx)
    revoke = _optional(w, "revoke", "permission-revocation")
    slow = [SlowAnswer(seconds=IN_FLIGHT_S)]
    agent = _own_agent(w, lambda name: [
        Step(tool_calls=[ToolCall(name=name, arguments={"n": 2})], faults=slow),
        Step(text=ANSWER)])
    run_id = _run(w, agent, "Look it up")
    _in_flight(w, agent, run_id)
    _answered(revoke(w.ctx.agent_id, agent.tool_name), "permission-revocation step")
    w.settle(run_id)
    _judge(w, "revoked during a call", run_id)

    agent = _own_agent(w, lambda name: [
        Step(tool_calls=[ToolCall(name=name, arguments={"n": 3})]), Step(text=ANSWER)])
    run_id = _run(w, agent, "Look it up again")
    call_id = _waiting_call(w, run_id)
    _answered(revoke(w.ctx.agent_id, agent.tool_name), "permission-revocation step")
    w.ok(w.answer(call_id, {"ok": True}, f"arck-final-{call_id}"), "send a completed receipt")
    w.settle(run_id)
    _judge(w, "revoked while waiting", run_id)


# -- the event stream ----------------------------------------------------------------------


def _reader(w: RunWorld) -> Callable[..., Exchange]:
    return _optional(w, "read_event_stream", "read-the-event-stream")


def _curl(exchange: Exchange, last_event_id: str | None) -> str:
    line = f"{exchange.as_curl()} -N -H {shlex.quote('Accept: ' + STREAM)}"
    if last_event_id is not None:
        line += f" -H {shlex.quote('Last-Event-ID: ' + last_event_id)}"
    return f"Reproduce: {line} (docs/runs.md, Event stream)"


def _stream(w: RunWorld, run_id: str, last_event_id: str | None = None,
            until_id: int | None = None) -> tuple[Exchange, list[dict[str, str]]]:
    """The stream's messages (200 `text/event-stream`, or "not applicable" for a target with
    no stream; anything else fails RUN-16)."""
    exchange = _reader(w)(run_id, last_event_id, until_id=until_id)
    if exchange.status in (404, 405, 406, 501):
        raise NotApplicable(f"the target has no run event stream: {exchange.describe()}")
    kind = exchange.headers.get("content-type", "").split(";")[0].strip().lower()
    if last_event_id is None and exchange.status == 200 and kind != STREAM:
        # As RUN-03's check: a service answering a run's events only as JSON has no stream.
        raise NotApplicable(f"the target answers no {STREAM} for a run's events: "
                            f"{exchange.describe()}")
    expect(exchange.status == 200 and kind == STREAM, "RUN-16",
           f"200 {STREAM} for a stream resuming after {last_event_id!r}",
           exchange.describe, _curl(exchange, last_event_id))
    messages, _rest = runevents.parse_sse(exchange.body)
    return exchange, messages


def _same_events(w: RunWorld, run_id: str, listed: list[dict[str, Any]], after: int,
                 last_event_id: str | None, until_id: int | None = None) -> None:
    """The stream resuming after `last_event_id` carries exactly the listed events with ids
    above `after`, in order, each `id`, `event` and `data` (the event's canonical JSON)."""
    exchange, messages = _stream(w, run_id, last_event_id, until_id)
    want = [e for e in listed if isinstance(e.get("id"), int) and e["id"] > after]
    seen = [(m.get("id"), m.get("event"), m.get("data")) for m in messages]
    expected = [(str(e["id"]), e.get("type"), canonical(e)) for e in want]
    if seen != expected:
        diverged = next((n for n, (a, b) in enumerate(zip(seen, expected, strict=False))
                         if a != b), min(len(seen), len(expected)))
        raise CheckFailure(
            "RUN-16", f"the stream of run {run_id} after Last-Event-ID {last_event_id!r}: the "
            f"JSON list's {len(expected)} event(s) with ids above {after}, in order, each "
            "`id`, `event` = its type and `data` = the event as canonical JSON",
            f"{len(seen)} message(s); first difference at message {diverged}: "
            f"{str(seen[diverged:diverged + 1])[:300]} where the list gives "
            f"{str(expected[diverged:diverged + 1])[:300]}", hint=_curl(exchange,
                                                                        last_event_id))


def _resumes(w: RunWorld, run_id: str) -> None:
    """The whole stream of an ended run, then the stream resumed after every id (and past
    the last), against the JSON list read around them."""
    listed = w.events(run_id)
    last = len(listed)
    _same_events(w, run_id, listed, 0, None)
    for after in (*range(last + 1), last + 5):
        _same_events(w, run_id, listed, after, str(after))
    expect(w.events(run_id) == listed, "RUN-16", f"the events of ended run {run_id} "
           "unchanged while its stream was read", lambda: str(w.events(run_id))[:300])


@check("RUN-16")
def test_event_stream_is_the_list(ctx: CheckContext) -> None:
    """`GET /v1/runs/{id}/events` as `text/event-stream` carries the JSON list's events: of a
    run waiting for its tool call, every event stored so far, promptly (it does not wait for
    the end); of ended runs (one with a tool call, one whose lost answer was reconciled after
    `run.ended`), exactly the list, in order, with the same ids and canonical data; resumed
    with `Last-Event-ID: k`, exactly the events after k (none past the last)."""
    w = world(ctx)
    _reader(w)
    needs_virtual_time(w, "a reconciliation a minute after the run ended")
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"order": 9})]),
                     Step(text=ANSWER)])
    run_id = _run(w, agent, "Where is order 9?")
    call_id = _waiting_call(w, run_id)
    waiting = w.events(run_id)
    last = len(waiting)
    _same_events(w, run_id, waiting, 0, None, until_id=last)
    _same_events(w, run_id, waiting, 1, "1", until_id=last)
    w.ok(w.answer(call_id, {"shipped": True}, f"arck-final-{call_id}"),
         "send a completed receipt")
    w.settle(run_id)
    _resumes(w, run_id)

    _resumes(w, _lost_run(w))


@check("RUN-16")
def test_event_stream_carries_events_as_stored(ctx: CheckContext) -> None:
    """A stream held open from before a run resumes to its end carries every event as it is
    stored, with time standing still (docs/runs.md, Event stream: "sends new events as they
    are stored"; a keep-alive tick is no wake-up): opened while the run waits for its tool
    call, it sends what is stored, then, while it stays open, the receipt is sent and the
    run completes; the stream carries every event of the JSON list, in order, through
    `run.ended`, and ends."""
    w = world(ctx)
    watch = _optional(w, "watch_event_stream", "watch-the-event-stream")
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"order": 11})]),
                     Step(text=ANSWER)])
    run_id = _run(w, agent, "Where is order 11?")
    call_id = _waiting_call(w, run_id)
    w.executor()  # registered before the stream opens: a target without one is told at once
    stored = len(w.events(run_id))
    answered: list[Exchange] = []
    exchange = watch(run_id, stored, lambda: answered.append(
        w.answer(call_id, {"shipped": True}, f"arck-live-{call_id}")))
    kind = exchange.headers.get("content-type", "").split(";")[0].strip().lower()
    if exchange.status in (404, 405, 406, 501) or (exchange.status == 200 and kind != STREAM):
        raise NotApplicable(f"the target has no run event stream: {exchange.describe()}")
    for receipt in answered:
        w.ok(receipt, "send a completed receipt while the stream is open")
    snapshot, _ = w.settle(run_id)
    if snapshot.get("state") != "ended":
        raise NotTestable(f"not testable: run {run_id} did not end after its receipt: "
                          f"{snapshot}")
    listed = w.events(run_id)
    messages, _rest = runevents.parse_sse(exchange.body)
    seen = [(m.get("id"), m.get("event"), m.get("data")) for m in messages]
    expected = [(str(e.get("id")), e.get("type"), canonical(e)) for e in listed]
    # A started call settled after run.ended is read by reconnecting: the list may go on.
    ended = next((n for n, e in enumerate(listed) if e.get("type") == "run.ended"), None)
    through = expected[:ended + 1] if ended is not None else expected
    expect(seen[:len(through)] == through and len(seen) <= len(expected), "RUN-16",
           f"the stream of run {run_id}, open from event {stored} on while its receipt was "
           f"sent (time standing still), carrying the JSON list's {len(through)} event(s) "
           "through run.ended as they were stored, in order, with the same ids and data",
           lambda: f"{len(seen)} message(s), the last "
           f"{str(seen[-1:])[:200]}; the list's {len(listed)} event(s) end with "
           f"{str(expected[-1:])[:200]}",
           f"{_curl(exchange, None)} while it runs, POST the receipt of {call_id}: the "
           "events after it must arrive without waiting for a keep-alive")


@check("PRO-02", "PRO-03")
def test_malformed_last_event_id(ctx: CheckContext) -> None:
    """A `Last-Event-ID` that is no decimal integer of at most 18 digits (letters, a sign, a
    fraction, empty, an exponent, hex, two numbers, 19 and 40 digits) is 422 before any
    stream starts, the error naming the header; never a 5xx. One of exactly 18 digits (the
    bound, past every event) is well-formed: 200, the stream."""
    w = world(ctx)
    run_id = _refused_run(w)
    valid = _reader(w)(run_id, "0")
    if valid.status in (404, 405, 406, 501):
        raise NotApplicable(f"the target has no run event stream: {valid.describe()}")
    if valid.status != 200:
        raise NotTestable(f"not testable: the stream after a well-formed Last-Event-ID 0 was "
                          f"not 200: {valid.describe()}", exchange=valid)
    if valid.headers.get("content-type", "").split(";")[0].strip().lower() != STREAM:
        raise NotApplicable(f"the target answers no {STREAM} for a run's events, so it reads "
                            f"no Last-Event-ID: {valid.describe()}")
    at_bound = "9" * 18
    exchange = _reader(w)(run_id, at_bound)
    expect(exchange.status == 200, "PRO-02", "200 for Last-Event-ID of 18 digits (at the "
           "bound: a decimal integer of at most 18 digits, docs/runs.md, Event stream)",
           exchange.describe, _curl(exchange, at_bound))
    for value in MALFORMED:
        exchange = _reader(w)(run_id, value)
        expect(exchange.status < 500, "PRO-02", f"no 5xx for Last-Event-ID {value!r} (422)",
               exchange.describe, _curl(exchange, value))
        expect(exchange.status == 422, "PRO-02", f"422 for Last-Event-ID {value!r}: not a "
               "decimal integer of at most 18 digits (docs/runs.md, Event stream)",
               exchange.describe, _curl(exchange, value))
        error = (exchange.json_or_none() or {}).get("error")
        expect(isinstance(error, dict) and error.get("path") == "Last-Event-ID"
               and isinstance(error.get("code"), str) and isinstance(error.get("message"), str),
               "PRO-03", f'the 422 for Last-Event-ID {value!r} as {{"error": {{"code", '
               '"message", "path": "Last-Event-ID"}}}}', exchange.describe,
               _curl(exchange, value))
