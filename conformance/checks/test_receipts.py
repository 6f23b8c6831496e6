"""EXE: receipts (SPEC §5): idempotent on `receipt_id`, one final per call, late receipts kept
out of a finished run, and the operations that look like a cancel kept apart. Driven through
the executor API of docs/executors.md; judged from its answers, the run's snapshot, its
histories and what the model was sent next."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hypothesis import strategies as st

from arck.conformance.checking import check, expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure, NotApplicable, NotTestable
from arck.conformance.runworld import (
    RunWorld,
    canonical,
    contains_equal,
    executor_world,
    only,
    world,
)
from arck.simulator.executor.rules import OUTCOME_MEMBERS, receipt_outcome
from arck.simulator.provider import SlowAnswer, Step
from arck.simulator.target import Exchange

FUNDS = 10**12
RESULTS = st.dictionaries(st.sampled_from(["status", "id", "rows", "note"]),
                          st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]),
                                  max_size=40), min_size=1, max_size=4)


def _ok(exchange: Exchange) -> bool:
    return 200 <= exchange.status < 300


def _state(w: RunWorld, run_id: str, session: str) -> str:
    """What a receipt must not move: the run's snapshot and both histories."""
    return w.state(run_id, session) or ""  # never None without only_ended


def _tool_results(w: RunWorld, session: str) -> list[Any]:
    return [m for m in w.history(session, "execution")
            if isinstance(m, dict) and m.get("role") == "tool"]


@property_check("EXE-08", cases=st.tuples(RESULTS, st.sampled_from(["accepted", "progress",
                                                                    "final"]),
                                          st.integers(min_value=1, max_value=3)))
def test_a_duplicate_receipt_is_replayed(ctx: CheckContext, case: Any) -> None:
    """The same receipt delivered again (after later ones, possibly) is answered as a
    replay with the first outcome and changes nothing: one tool result in the history, the
    run where the first delivery left it. A repeated progress receipt comes after a later
    one: a replay, not a sequence out of order. A first delivery is never answered as a
    replay (an executor told `replayed: true` would not do the work, EXE-10)."""
    result, which, copies = case
    w = executor_world(ctx)
    run_id, session, call_id = w.waiting_call({"q": "duplicate"})
    target, role = w.executors(), w.executor()
    claim = w.accept(call_id)
    accepted = {"receipt_id": f"arck-accept-{claim}", "claim_id": claim, "kind": "accepted"}
    progress: list[dict[str, Any]] = [
        {"receipt_id": f"arck-progress-{n}", "claim_id": claim, "kind": "progress",
         "sequence": n, "data": {"step": n}} for n in (1, 2)]
    if which == "progress":
        for step in progress:
            sent = target.submit_receipt(call_id, step, role=role)
            if not _ok(sent):
                raise NotTestable(f"not testable: progress {step['sequence']} was refused: "
                                  f"{sent.describe()}", exchange=sent)
    final = {"receipt_id": "arck-final", "claim_id": claim, "kind": "completed",
             "result": result}
    first = target.submit_receipt(call_id, final, role=role)
    if not _ok(first):
        raise NotTestable(f"not testable: the final receipt was refused: {first.describe()}",
                          exchange=first)
    news = [sent, first] if which == "progress" else [first]
    for answer in news:  # an executor told `replayed: true` would skip work never done
        expect((answer.json_or_none() or {}).get("replayed") is not True, "EXE-08",
               "a receipt's first delivery not answered as a replay (no `replayed: true`)",
               answer.describe)
    w.settle(run_id)
    before = _state(w, run_id, session)
    body: dict[str, Any] = {"accepted": accepted, "progress": progress[0], "final": final}[which]
    for n in range(copies):
        again = target.submit_receipt(call_id, body, role=role)
        data = again.json_or_none()
        expect(_ok(again), "EXE-08", f"copy {n + 1} of the {which} receipt answered as "
               "the first was", again.describe)
        if isinstance(data, dict) and "replayed" in data:
            expect(data.get("replayed") is True, "EXE-08",
                   f"copy {n + 1} of the {which} receipt answered replayed: true",
                   again.describe)
    w.settle(run_id)
    expect(_state(w, run_id, session) == before, "EXE-08", "nothing changed by the copies "
           "(run, formal and execution history)", lambda: _state(w, run_id, session)[:400])
    expect(len(_tool_results(w, session)) == 1, "EXE-08", "the result in the execution "
           "history once", lambda: canonical(_tool_results(w, session))[:400])


@property_check("EXE-08", "EXE-17", cases=st.tuples(RESULTS, st.integers(min_value=2,
                                                                          max_value=5)),
                cap=20)
def test_duplicate_receipts_racing(ctx: CheckContext, case: Any) -> None:
    """The same final receipt sent several times at once: it is applied once. Each copy is
    answered 2xx as the first outcome (at most one of them not a replay) or refused as still
    in flight (profile: 409); none fails; one tool result enters the history."""
    result, copies = case
    w = executor_world(ctx)
    run_id, session, call_id = w.waiting_call({"q": "racing duplicates"})
    target, role = w.executors(), w.executor()
    claim = w.accept(call_id)
    final = {"receipt_id": "arck-racing-final", "claim_id": claim, "kind": "completed",
             "result": result}
    with ThreadPoolExecutor(max_workers=copies) as pool:
        answers = list(pool.map(lambda _: target.submit_receipt(call_id, final, role=role),
                                range(copies)))
    shown = "; ".join(f"{a.status} {a.body[:160]!r}" for a in answers)
    expect(all(a.status < 500 for a in answers) and any(_ok(a) for a in answers), "EXE-08",
           f"{copies} copies sent at once answered without a server error, one at least 2xx",
           shown)
    taken = [a.json_or_none() for a in answers if _ok(a)]
    outcomes = {receipt_outcome(d) for d in taken}
    expect(len(outcomes) == 1, "EXE-08", "every copy answered 2xx answered the same outcome "
           f"(its members {', '.join(OUTCOME_MEMBERS)})", shown)
    fresh = [d for d in taken if isinstance(d, dict) and d.get("replayed") is False]
    expect(len(fresh) <= 1, "EXE-08", "at most one copy answered as not a replay", shown)
    if ctx.profile == "reference":
        expect(all(a.status == 409 for a in answers if not _ok(a)), "EXE-17",
               "profile: a copy refused while the first is in flight answered 409", shown)
    w.settle(run_id)
    results = _tool_results(w, session)
    expect(len(results) == 1, "EXE-08", f"the result in the execution history once after "
           f"{copies} racing copies", lambda: canonical(results)[:400])
    formal = [item for item in w.history(session, "formal")
              if isinstance(item, dict) and contains_equal(item, result)]
    expect(len(formal) == 1, "EXE-08", "the receipt in the formal history once",
           lambda: canonical(formal)[:400])


@property_check("EXE-09", cases=st.tuples(RESULTS, RESULTS))
def test_a_receipt_id_never_changes_meaning(ctx: CheckContext, case: Any) -> None:
    """The same `receipt_id` with another body is refused, and the first body stays: the
    result the model sees is the first one's."""
    first_mark, second_mark = ctx.name("first-body"), ctx.name("second-body")
    first_result, second_result = {**case[0], "mark": first_mark}, {**case[1], "mark": second_mark}
    w = executor_world(ctx)
    run_id, session, call_id = w.waiting_call({"q": "meaning"})
    claim = w.accept(call_id)
    first = w.finish(call_id, claim, "arck-meaning", first_result)
    if not _ok(first):
        raise NotTestable(f"not testable: the final receipt was refused: {first.describe()}",
                          exchange=first)
    other = w.finish(call_id, claim, "arck-meaning", second_result)
    expect(not _ok(other), "EXE-09", "the same receipt_id with another result refused",
           other.describe)
    w.settle(run_id)
    for kind in ("execution", "formal"):
        seen = canonical(w.history(session, kind))
        expect(first_mark in seen and second_mark not in seen, "EXE-09",
               f"the {kind} history holding the first body, never the second", seen[:400])


FINALS = ("completed", "failed", "cancelled", "submission", "reconciliation_required")


@property_check("EXE-14", cases=st.tuples(st.sampled_from(FINALS), st.sampled_from(FINALS)))
def test_one_final_receipt_per_call(ctx: CheckContext, case: Any) -> None:
    """After a call's final receipt, a different final receipt (another id, any kind) is
    refused and changes nothing: while the run still waits for the batch's other call, and
    after the run has ended."""
    first_kind, second_kind = case
    w = executor_world(ctx)
    run_id, session, [call_id, other] = w.waiting_calls({"q": "final"}, {"q": "other"})
    claim = w.accept(call_id)
    first = w.finish(call_id, claim, "arck-final-1", _payload(first_kind, 1), first_kind)
    if not _ok(first):
        raise NotTestable(f"not testable: a {first_kind} receipt was refused: "
                          f"{first.describe()}", exchange=first)
    for n, moment in enumerate(("while the run waits for its other call",
                                "after the run ended"), start=2):
        w.settle(run_id)
        before = _state(w, run_id, session)
        second = w.finish(call_id, claim, f"arck-final-{n}",
                          _payload(second_kind, 2), second_kind)
        expect(not _ok(second), "EXE-14", f"a {second_kind} receipt after the {first_kind} "
               f"one refused, {moment}", second.describe)
        w.settle(run_id)
        expect(_state(w, run_id, session) == before, "EXE-14", f"nothing changed by it, "
               f"{moment}", lambda: _state(w, run_id, session)[:400])
        if n == 2:
            w.ok(w.answer(other, {"arck": "other"}, "arck-other"), "answer the other call")


def _payload(kind: str, n: int) -> Any:
    if kind == "failed":
        return {"code": f"arck-failure-{n}", "message": "the business refused"}
    return {"arck": f"result-{n}"}


@property_check("EXE-13", cases=st.tuples(st.sampled_from(FINALS), RESULTS), cap=20)
def test_a_late_receipt_never_revives_a_run(ctx: CheckContext, case: Any) -> None:
    """A final receipt for a call whose run was cancelled meanwhile is answered (it is not
    lost), changes neither the run nor its histories, and enters no request to the model;
    the answer says the run has ended (profile: `run_ended: true`)."""
    kind, result = case
    w = executor_world(ctx)
    run_id, session, call_id = w.waiting_call({"q": "late"})
    claim = w.accept(call_id)
    w.ok(w.target.cancel_run(run_id), "cancel the run")
    snapshot, _ = w.settle(run_id)
    if snapshot.get("state") != "ended":
        raise CheckFailure("RUN-11", "the cancelled run ended", str(snapshot))
    before = _state(w, run_id, session)
    sent = len(w.provider.recorded())
    late = w.finish(call_id, claim, "arck-late", _payload(kind, 1) if kind == "failed"
                    else result, kind)
    expect(late.status < 500, "EXE-13", f"the late {kind} receipt answered, not a server "
           "error", late.describe)
    w.settle(run_id)
    expect(_state(w, run_id, session) == before, "EXE-13", "the ended run, its formal and "
           "its execution history unchanged by the late receipt",
           lambda: _state(w, run_id, session)[:400])
    expect(len(w.provider.recorded()) == sent, "EXE-13", "no model call after the late "
           "receipt", f"{len(w.provider.recorded()) - sent} more request(s)")
    if ctx.profile == "reference":
        data = late.json_or_none()
        expect(_ok(late) and isinstance(data, dict) and data.get("run_ended") is True,
               "EXE-13", "profile: 200 with run_ended: true", late.describe)


@check("EXE-11")
def test_reconciliation_required_is_never_retried(ctx: CheckContext) -> None:
    """The platform's part of EXE-11 (the executor's, an exception becoming
    `reconciliation_required`, is arck's executor's duty): a call whose final says a business
    result may exist is never dispatched again, now or after any lease would have lapsed.
    The run waits for the batch's other call, so a refusal cannot come from an ended run; a
    claim of that other call by the same executor shows the refusals are about the call."""
    w = executor_world(ctx)
    target = w.executors()
    _, _, [call_id, other] = w.waiting_calls({"q": "unknown outcome"}, {"q": "control"})
    claim = w.accept(call_id)
    final = w.finish(call_id, claim, "arck-unknown-outcome",
                     {"status": "unknown", "note": "the handler raised"},
                     "reconciliation_required")
    if not _ok(final):
        raise NotTestable(f"not testable: the reconciliation_required receipt was refused: "
                          f"{final.describe()}", exchange=final)
    # Nothing the check judges needs the provider meanwhile (the run waits for tools): an
    # hour is one long step over HTTP, not 3,600 (RunWorld.idle). In real time (no
    # test-clock) an hour cannot be waited: the check judges the first two moments only.
    for waited in (0, 31, 3_600) if w.control.virtual_time else (0, 31):
        w.idle(waited)
        role = w.register_executor()  # online now, whatever time did to the others
        control = target.claim(other, role)
        if not _ok(control):
            raise NotTestable(f"not testable: a claim of the batch's other call was refused "
                              f"{waited} s on: {control.describe()}", exchange=control)
        listed = target.candidates(role)
        expect(call_id not in listed.body.decode("utf-8", "replace"), "EXE-11",
               f"the call answered reconciliation_required not among the candidates "
               f"{waited} s after", listed.describe)
        again = target.claim(call_id, role)
        expect(not _ok(again), "EXE-11", f"the call answered reconciliation_required never "
               f"claimed again ({waited} s after; the batch's other call was claimable)",
               again.describe)


@check("EXE-15")
def test_run_cancel_detach_and_business_cancel_stay_apart(ctx: CheckContext) -> None:
    """A run cancel asks no business cancel; a detach after acceptance never puts the call
    back to be claimed again; a business cancel request ends neither the call nor the
    run."""
    w = executor_world(ctx)
    target = w.executors()
    run_id, _, call_id = w.waiting_call({"q": "business"})
    claim = w.accept(call_id)
    asked = target.request_tool_cancel(call_id)
    expect(_ok(asked), "EXE-15", "a business cancel request taken", asked.describe)
    snapshot = w.snapshot(run_id)
    expect(snapshot.get("state") == "waiting_tools", "EXE-15", "the run still waiting after "
           "a business cancel request (only the product ends the task)", str(snapshot))
    w.ok(target.detach(call_id, claim, w.executor()), "detach after acceptance")
    for waited in (0, 31):  # and not once a lease would have lapsed either
        w.control.advance(waited)
        again = target.claim(call_id, w.register_executor())
        expect(not _ok(again), "EXE-15", f"a call detached after acceptance never claimed "
               f"again ({waited} s after)", again.describe)
        listed = target.candidates(w.executor())
        expect(call_id not in listed.body.decode("utf-8", "replace"), "EXE-15",
               f"the detached call not among the candidates ({waited} s after)",
               listed.describe)
    run2, _, call2 = w.waiting_call({"q": "run cancel"})
    w.accept(call2)
    w.ok(target.cancel_run(run2), "cancel the run")
    view = only([c for c in w.tool_calls(run2) if c.get("call_id") == call2],
                f"entry for tool call {call2} in the tool calls of run {run2}")
    expect(view.get("cancel_requested") in (None, False) and "cancel" not in str(
        view.get("state")), "EXE-15", "a run cancel asking no business cancel of its "
        "accepted call", canonical(view))


@check("EXE-16")
def test_runs_waiting_on_tools_hold_no_worker(ctx: CheckContext) -> None:
    """Many runs waiting on tool calls do not stop another run from being answered."""
    w = world(ctx)
    for n in range(8):
        w.waiting_call({"q": f"waiting {n}"})
    agent = w.agent([Step(text="still served", faults=[SlowAnswer(seconds=1)])])
    run_id = str(w.start(w.session(agent, w.wallet(FUNDS)), "Hello").get("run_id"))
    snapshot, _ = w.settle(run_id)
    expect(snapshot.get("state") == "ended" and snapshot.get("end_reason") == "completed",
           "EXE-16", "a ninth run answered while eight wait on tools", str(snapshot))


@check("EXE-17")
def test_claim_leases_and_acceptance(ctx: CheckContext) -> None:
    """Profile: a claim not accepted within its 30 s lapses; the call is claimed again under
    a new claim_id and acceptance under the old one is refused; a claim's receipts come from
    the executor that won it, and none but `accepted` before acceptance; a detach before
    acceptance reopens the call; acceptance is refused once the run has ended; progress sequences
    only increase."""
    if ctx.profile != "reference":
        raise NotApplicable("claim leases, detach and progress numbering are the reference "
                            "profile's rules (EXE-17)")
    w = executor_world(ctx)
    target = w.executors()
    _, _, call_id = w.waiting_call({"q": "lease"})
    first_role = w.executor()
    first = w.ok(target.claim(call_id, first_role), "claim the call").get("claim_id")
    w.control.advance(31)
    second_role = w.register_executor()
    second = target.claim(call_id, second_role)
    data = second.json_or_none() or {}
    expect(_ok(second) and data.get("claim_id") not in (None, first), "EXE-17",
           "the call claimed again, under a new claim_id, after the lease lapsed",
           second.describe)
    stale = target.submit_receipt(call_id, {"receipt_id": "arck-stale", "claim_id": first,
                                            "kind": "accepted"}, role=w.executor())
    expect(stale.status == 409, "EXE-17", "acceptance under the lapsed claim refused 409",
           stale.describe)
    claim = str(data.get("claim_id"))
    w.ok(target.detach(call_id, claim, second_role), "detach before acceptance")
    reopened = target.claim(call_id, w.executor())
    expect(_ok(reopened), "EXE-17", "a call detached before acceptance claimable again",
           reopened.describe)
    claim = str((reopened.json_or_none() or {}).get("claim_id"))
    for early in ({"kind": "progress", "sequence": 1}, {"kind": "completed", "result": {}}):
        report = {"receipt_id": f"arck-early-{early['kind']}", "claim_id": claim, **early}
        answer = target.submit_receipt(call_id, report, role=w.executor())
        expect(answer.status == 409, "EXE-17", f"a {early['kind']} receipt under a claim not "
               "accepted yet refused 409 (nothing is reported before `accepted` is "
               "confirmed; docs/executors.md, Receipts)", answer.describe)
    other = target.submit_receipt(call_id, {"receipt_id": "arck-not-mine", "claim_id": claim,
                                            "kind": "accepted"}, role=w.register_executor())
    expect(other.status == 409, "EXE-17", "acceptance under the current claim refused 409 "
           "when another executor sends it (a claim is its winner's)", other.describe)
    for sequence, status in ((None, 200), (1, 200), (1, 409), (3, 200), (2, 409)):
        body: dict[str, Any] = {"receipt_id": f"arck-p-{sequence}-{status}", "claim_id": claim,
                                "kind": "accepted" if sequence is None else "progress"}
        if sequence is not None:
            body["sequence"] = sequence
        answer = target.submit_receipt(call_id, body, role=w.executor())
        expect(answer.status == status, "EXE-17", f"{body['kind']} {sequence or ''} "
               f"answered {status}", answer.describe)
    run2, _, call2 = w.waiting_call({"q": "ended"})
    claim2 = w.ok(target.claim(call2, w.executor()), "claim the call").get("claim_id")
    w.ok(target.cancel_run(run2), "cancel the run")
    refused = target.submit_receipt(call2, {"receipt_id": "arck-ended", "claim_id": claim2,
                                            "kind": "accepted"}, role=w.executor())
    expect(refused.status == 409, "EXE-17", "acceptance refused 409 once the run ended",
           refused.describe)

