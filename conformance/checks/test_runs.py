"""RUN: durable runs and histories (SPEC §6), black-box through the runs API and what the
simulated provider received; with the budget rules that wait for runs (BUD-15..17, DEF-05)."""

from __future__ import annotations

import functools
import itertools
import json
from typing import Any

import httpx
from hypothesis import assume
from hypothesis import strategies as st

from arck.conformance import oracle, runoracle
from arck.conformance.checking import check, expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure, NotApplicable, NotTestable
from arck.conformance.runworld import (
    TOOL,
    RunWorld,
    canonical,
    contains_equal,
    messages,
    only,
    world,
)
from arck.simulator.provider import (
    Fault,
    LostResponse,
    RateLimited,
    ServerError,
    SlowAnswer,
    Step,
    ToolCall,
    UsageDrift,
    UsageMissing,
)
from arck.simulator.target import Exchange, ExecutorTarget

FUNDS = 10**12
END_REASONS = ("completed", "input_required", "approval_required", "cancelled",
               "insufficient_balance", "model_timeout", "tool_timeout", "permission_changed",
               "cost_pending_reconciliation", "context_uncompactable")
WORDS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1,
                max_size=40)


@check("RUN-01", "BIL-02")
def test_admission_refuses_a_run_without_funds(ctx: CheckContext) -> None:
    """A wallet holding 1 micro-unit cannot cover any reservation: refused before sending."""
    w = world(ctx)
    agent = w.agent([Step(text="never sent")])
    wallet = w.wallet(1)
    session = w.session(agent, wallet)
    run = w.start(session, "Hello")
    if ctx.profile == "reference":
        expect(run.get("state") == "ended", "RUN-01",
               "the run refused at admission, in the answer that creates it (never queued)",
               str(run))
    if run.get("state") == "ended":  # an ended run never comes back, not even in a read
        read = w.snapshot(run["run_id"])
        expect(read.get("state") == "ended" and read.get("end_reason") == run.get("end_reason"),
               "RUN-01", "the run read back as its creation answered it: ended "
               f"{run.get('end_reason')!r}", str(read),
               hint=f"GET /v1/runs/{run['run_id']} right after creating it")
    snapshot, _ = w.settle(run["run_id"])
    kinds = [e.get("type") for e in w.events(run["run_id"])]
    expect("run.queued" not in kinds, "RUN-01", "no run.queued event for a run refused "
           "at admission", str(kinds))
    expect(snapshot.get("state") == "ended" and snapshot.get("end_reason") ==
           "insufficient_balance", ("RUN-01", "BIL-02"),
           "the run ended with insufficient_balance at admission", str(snapshot))
    expect(not w.requests(agent), ("RUN-01", "BIL-02"),
           "no model request sent for a run refused at admission",
           lambda: f"{len(w.requests(agent))} request(s) reached the provider")
    state = w.wallet_state(wallet)
    expect(state.get("balance") == 1 and state.get("reserved") == 0, "BIL-02",
           "the wallet untouched: balance 1, nothing reserved", str(state))


@property_check("RUN-08", "RUN-09", "DEF-05", cases=st.lists(
    st.tuples(WORDS, st.sampled_from(["text", "tool", "input"]),
              st.integers(min_value=0, max_value=3000)), min_size=2, max_size=5))
def test_requests_only_append(ctx: CheckContext, case: Any) -> None:
    """Turns of text, tool calls (results of random size) and input requests, over several
    runs of one session: each request's messages are the previous request's plus new ones."""
    w = world(ctx)
    steps: list[Step] = []
    for text, kind, _size in case:
        if kind == "tool":
            steps += [Step(tool_calls=[ToolCall(name=TOOL, arguments={"q": text})]),
                      Step(text=f"Found {text}")]
        elif kind == "input":
            steps.append(Step(request_input=text))
        else:
            steps.append(Step(text=text))
    agent = w.agent(steps, budget=2048)
    session = w.session(agent, w.wallet(FUNDS))
    for text, _kind, size in case:
        run = w.start(session, text)
        w.answer_all(run["run_id"], {"status": "ok", "data": "x" * size})
    sent = [messages(r) for r in w.requests(agent)]
    expect(bool(sent) and bool(sent[0]) and sent[0][0].get("role") == "system" and
           sent[0][0].get("content") == agent.system_prompt, "DEF-05",
           "the first message is the pinned version's system prompt",
           lambda: canonical(sent[0][:1]) if sent else "no request")
    for n, (before, after) in enumerate(itertools.pairwise(sent), start=2):
        kept = [canonical(m) for m in after[: len(before)]]
        expect(kept == [canonical(m) for m in before] and len(after) > len(before),
               ("RUN-08", "RUN-09"),
               f"request {n} = request {n - 1}'s {len(before)} messages, unchanged, plus new ones",
               functools.partial(_first_change, before, after))


def _first_change(before: list[Any], after: list[Any]) -> str:
    for i, message in enumerate(before):
        if i >= len(after):
            return f"only {len(after)} messages; message {i} gone: {canonical(message)[:200]}"
        if canonical(after[i]) != canonical(message):
            return (f"message {i} was {canonical(message)[:200]} and became "
                    f"{canonical(after[i])[:200]}")
    return f"no new message after the {len(before)} earlier ones"


RESULTS = st.tuples(
    st.sampled_from([1024, 2048, 4096]),
    st.lists(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=300),
             min_size=1, max_size=60),
)


# Results within the budget but over half of it, and well over it, in 1- and 2-byte text.
SIZED_RESULTS = ((1024, ["x" * 300, "y" * 300]), (2048, ["é" * 400] * 8),
                 (4096, ["z" * 299] * 12))


@property_check("BUD-15", "BUD-16", "BUD-17", "RUN-07", cases=RESULTS, examples=SIZED_RESULTS)
def test_receipt_enters_once_projected_and_stays(ctx: CheckContext, case: Any) -> None:
    """A completed result of any size is accepted, kept in full in the formal history, and
    enters the execution history once, within its budget, identical in every later request."""
    budget, rows = case
    result = {"status": "done", "rows": rows}
    w = world(ctx)
    call = ToolCall(name=TOOL, arguments={})
    agent = w.agent([Step(tool_calls=[call]), Step(text="first"), Step(text="second")],
                    budget=budget)
    session = w.session(agent, w.wallet(FUNDS))
    first = w.start(session, "Look it up")
    snapshot, _ = w.settle(first["run_id"])
    if snapshot.get("state") != "waiting_tools":
        raise CheckFailure("RUN-06", "the run waiting for its tool call", str(snapshot))
    pending = only(w.tool_calls(first["run_id"]), f"tool call of run {first['run_id']}")
    exchange = w.answer(str(pending["call_id"]), result, "arck-big")
    expect(200 <= exchange.status < 300, "BUD-17",
           f"a receipt of {oracle.size(result)} bytes accepted (budget {budget})",
           exchange.describe)
    w.settle(first["run_id"])
    w.settle(w.start(session, "And again")["run_id"])
    tool_messages = [[m for m in messages(r) if m.get("role") == "tool"]
                     for r in w.requests(agent)]
    entered = [t for t in tool_messages if t]
    if len(entered) < 2:
        raise CheckFailure("BUD-15", "the tool result in the two requests after the receipt",
                           f"tool messages per request: {[len(t) for t in tool_messages]}")
    content = entered[0][0].get("content")
    original = oracle.size(result)
    if original <= budget:
        expect(isinstance(content, str) and _same_json(content, result), "BUD-15",
               "a result within its budget entering unchanged (BUD-06)", str(content)[:300])
    else:
        projected = _json(content)
        expect(projected is not None and oracle.size(projected) <= budget, "BUD-15",
               f"the {original}-byte result entering as JSON of at most {budget} bytes",
               lambda: f"{len(str(content).encode())} bytes: {str(content)[:200]}")
    expect(all(canonical(t[0]) == canonical(entered[0][0]) for t in entered), "BUD-15",
           "the same tool message, byte for byte, in every later request (projected once)",
           lambda: " / ".join(canonical(t[0])[:120] for t in entered))
    formal = [i for i in w.history(session, "formal") if _holds(i, "arck-big")]
    expect(bool(formal) and any(contains_equal(i, result) for i in formal), ("BUD-16",
           "RUN-07"), "the full receipt in the formal history, canonically equal",
           lambda: canonical(formal)[:300])


PROTECTED_KINDS = ("submission", "reconciliation_required")


@property_check("BUD-18", cases=st.tuples(st.sampled_from(PROTECTED_KINDS), RESULTS),
                examples=tuple((kind, sized) for kind in PROTECTED_KINDS
                               for sized in SIZED_RESULTS[1:]))
def test_protected_results_are_never_projected(ctx: CheckContext, case: Any) -> None:
    """A submission's result, or an unknown business outcome's, enters the model's context
    whole, however far over the tool's budget: the request after it carries the result,
    JSON-equal (it may also be found only in the execution history, if the target stops
    the run there)."""
    kind, (budget, rows) = case
    result = {"status": "submitted" if kind == "submission" else "unknown",
              "task": "arck-task-1", "rows": rows}
    w = world(ctx)
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={})]),
                     Step(text="noted")], budget=budget)
    session = w.session(agent, w.wallet(FUNDS))
    run_id = w.start(session, "Hand it off")["run_id"]
    snapshot, _ = w.settle(run_id)
    pending = [c for c in w.tool_calls(run_id) if c.get("state") == "dispatchable"]
    if snapshot.get("state") != "waiting_tools" or not pending:
        raise NotTestable(f"not testable: the run never waited for its tool call: {snapshot}")
    exchange = w.answer(str(pending[0].get("call_id")), result, f"arck-{kind}", kind=kind)
    expect(200 <= exchange.status < 300, "BUD-18",
           f"a {kind} receipt of {oracle.size(result)} bytes accepted (budget {budget})",
           exchange.describe)
    w.settle(run_id)
    sent = [m for r in w.requests(agent)[1:] for m in messages(r) if m.get("role") == "tool"]
    stored = [m for m in w.history(session, "execution")
              if isinstance(m, dict) and m.get("role") == "tool"] if not sent else []
    seen = sent or stored
    if not seen:
        raise NotTestable(f"not testable: the {kind} result reached neither a request nor "
                          "the execution history as a tool message")
    expect(all(_same_json(str(m.get("content")), result) for m in seen), "BUD-18",
           f"the {kind} result of {oracle.size(result)} bytes entering whole, never "
           f"projected to the {budget}-byte budget",
           lambda: f"{len(str(seen[0].get('content')).encode())} bytes: "
                   f"{str(seen[0].get('content'))[:200]}")


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _same_json(text: str, value: Any) -> bool:
    parsed = _json(text)
    return parsed is not None and canonical(parsed) == canonical(value)


def _holds(item: Any, needle: str) -> bool:
    return needle in canonical(item)


FAULTS: dict[str, Fault] = {
    "lost_response": LostResponse(),
    "usage_missing": UsageMissing(),
    "slow": SlowAnswer(seconds=120),
}
# The connection broken while the request is sent, before the provider processed it (a
# respx-style side effect): the caller cannot tell this from a lost answer, but the
# provider's lookup says "not processed", so a resend after that check is allowed (RUN-12).
RESET = "reset_before_processing"
RECONCILE_STEP_S = 70.0  # a cost-pending call is looked up 60 s after a worker sees it
RECONCILE_STEPS = 4


def _unknown_step(i: int, kind: str, at: int) -> Step:
    if i != at:
        return Step(text=f"turn {i}")
    if kind == RESET:
        return Step(text=f"turn {i}", side_effect=httpx.RemoteProtocolError)
    return Step(text=f"turn {i}", faults=[FAULTS[kind]])


@property_check("RUN-12", "BIL-03", cases=st.tuples(
    st.sampled_from([*sorted(FAULTS), RESET]), st.integers(min_value=0, max_value=2)))
def test_unknown_outcome_never_resent(ctx: CheckContext, case: Any) -> None:
    """A call whose answer or cost is unknown (lost, no usage, slower than the channel's
    30 s timeout) is never sent again, and its cost is never charged twice; one broken off
    before the provider processed it is charged nothing, and sent again at most once the
    provider was asked."""
    kind, at = case
    w = world(ctx)
    # On real time a 120 s answer would take 120 s: such inputs are left out there.
    assume(kind != "slow" or w.control.virtual_time)
    steps = [_unknown_step(i, kind, at) for i in range(3)]
    agent = w.agent(steps)
    wallet = w.wallet(FUNDS)
    session = w.session(agent, wallet)
    with w.faults("side_effect" if kind == RESET else kind):
        for i in range(3):
            exchange = w.target.create_run(session, {"input": f"message {i}"})
            if exchange.status == 409:  # the session is held while the unknown call is open
                break
            run = w.ok(exchange, "create a run")
            snapshot, _ = w.settle(run["run_id"])
            expect(snapshot.get("state") == "ended" and bool(snapshot.get("end_reason")),
                   "RUN-11", "every run ending with a recorded reason", str(snapshot))
    records = [r for r in w.provider.records() if r.conversation == agent.script]
    processed = {r.id for r in records if r.billed}
    sent = [canonical(messages(r)) for r in w.requests(agent)
            if kind != RESET or r.id in processed]
    repeats = sorted({m for m in sent if sent.count(m) > 1})
    expect(not repeats, "RUN-12", "no model request sent twice" if kind != RESET else
           "no model request the provider processed sent again",
           lambda: f"{len(repeats)} request(s) sent more than once; first: {repeats[0][:300]}")
    true_cost = sum(_cost(w, r.true_usage) for r in records if r.billed)
    state = w.wallet_state(wallet)
    charged = state.get("charged")
    expect(isinstance(charged, int) and charged <= true_cost + len(records), "BIL-03",
           f"at most the provider's true cost charged ({true_cost} micro-units, "
           f"+1 rounding a call)", str(state))
    if ctx.profile == "reference" and w.control.virtual_time:
        _reconciled(w, wallet, kind)


def _reconciled(w: RunWorld, wallet: str, kind: str) -> None:
    """Profile (docs/runs.md, Cost-pending calls): a cost-pending call is looked up 60 s
    after a worker sees it and settled by what the provider says (processed: charged; never
    processed: released), so after a few minutes nothing stays reserved."""
    state: dict[str, Any] = {}
    for _ in range(RECONCILE_STEPS):
        state = w.wallet_state(wallet)
        if state.get("reserved") == 0:
            return
        w.control.advance(RECONCILE_STEP_S)
    state = w.wallet_state(wallet)
    expect(state.get("reserved") == 0, "BIL-03", f"profile: every cost-pending call ({kind}) "
           f"reconciled within {RECONCILE_STEPS} × {RECONCILE_STEP_S:.0f} s, nothing left "
           "reserved", str(state))


def _cost(w: RunWorld, usage: Any) -> int:
    spec = w.channel().spec
    return runoracle.profile_charge(usage, spec.input_price, spec.cached_price,
                                    spec.output_price)


ENDINGS = st.lists(st.one_of(
    st.builds(lambda t: Step(text=t), WORDS),
    st.builds(lambda t: Step(request_input=t), WORDS),
    st.builds(lambda t: Step(request_approval=t), WORDS),
    st.just(Step(tool_calls=[ToolCall(name=TOOL, arguments={})])),
    st.just(Step(faults=[ServerError(status=503)])),
    st.just(Step(faults=[RateLimited(retry_after=1)])),
    st.just(Step(faults=[LostResponse()])),
    st.just(Step(faults=[UsageMissing()])),
    st.just(Step(faults=[SlowAnswer(seconds=45)])),
), min_size=1, max_size=6)


@property_check("RUN-11", "RUN-16", cases=ENDINGS)
def test_every_run_ends_with_a_reason(ctx: CheckContext, case: Any) -> None:
    """Whatever the model answers or the provider does, each run ends, within a bounded
    number of timers, with its reason recorded (core: a reason; profile: RUN-16's names)."""
    w = world(ctx)
    # On real time slow answers and backoffs would take minutes: left out there.
    assume(w.control.virtual_time or not any(step.faults for step in case))
    agent = w.agent(case)
    session = w.session(agent, w.wallet(FUNDS))
    for i in range(len(case)):
        exchange = w.target.create_run(session, {"input": f"turn {i}"})
        if exchange.status == 409:
            break
        run = w.ok(exchange, "create a run")
        snapshot = w.answer_all(run["run_id"], {"ok": True})
        reason = snapshot.get("end_reason")
        expect(snapshot.get("state") == "ended" and isinstance(reason, str) and bool(reason),
               "RUN-11", "the run ended with its reason recorded, with no timer left to wait on",
               str(snapshot))
        if ctx.profile == "reference":
            expect(reason in END_REASONS, ("RUN-11", "RUN-16"),
                   f"an end reason of RUN-16: {', '.join(END_REASONS)}", repr(reason))


@check("RUN-13")
def test_cancel_leaves_accepted_calls_dispatchable(ctx: CheckContext) -> None:
    """A run cancelled while an executor works on its tool call (acceptance confirmed): the
    business task is not cancelled, and its final receipt is still taken."""
    w = world(ctx)
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"n": 1})])])
    session = w.session(agent, w.wallet(FUNDS))
    run = w.start(session, "Do it")
    snapshot, _ = w.settle(run["run_id"])
    if snapshot.get("state") != "waiting_tools":
        raise CheckFailure("RUN-06", "the run waiting for its accepted tool call", str(snapshot))
    pending = only(w.tool_calls(run["run_id"]), f"tool call of run {run['run_id']}")
    claim = w.accept(str(pending["call_id"]))
    w.ok(w.target.cancel_run(run["run_id"]), "cancel the run")
    snapshot = w.snapshot(run["run_id"])
    expect(snapshot.get("state") == "ended" and snapshot.get("end_reason") == "cancelled",
           "RUN-11", "the run ended cancelled", str(snapshot))
    calls = w.tool_calls(run["run_id"])
    expect(len(calls) == 1 and "cancel" not in str(calls[0].get("state")), "RUN-13",
           "the accepted call still listed, not cancelled", str(calls))
    exchange = w.finish(str(calls[0]["call_id"]), claim, "arck-after-cancel", {"done": 1})
    expect(200 <= exchange.status < 300, "RUN-13",
           "the business task's receipt still accepted after the cancel", exchange.describe)
    expect(w.snapshot(run["run_id"]).get("state") == "ended", "RUN-13",
           "the cancelled run stays ended after the receipt", str(w.snapshot(run["run_id"])))


@check("DEF-04", "DEF-05")
def test_session_stays_on_its_version(ctx: CheckContext) -> None:
    """A newer version of the agent changes nothing for a session created before it."""
    w = world(ctx)
    old = w.agent([Step(text="old"), Step(text="old again")])
    session = w.session(old, w.wallet(FUNDS))
    w.settle(w.start(session, "first")["run_id"])
    newer = w.agent([Step(text="new")])  # same agent id, a new version and system prompt
    w.settle(w.start(session, "second")["run_id"])
    sent = w.requests(old)
    expect(len(sent) == 2 and messages(sent[1])[:1] == [
        {"role": "system", "content": old.system_prompt}], ("DEF-04", "DEF-05"),
        "the session's second request still carries its pinned version's system prompt",
        lambda: f"{len(sent)} request(s) on the old script; "
                f"{len(w.requests(newer))} on the newer version's")


@property_check("DRY-03", "DRY-04", cases=RESULTS, examples=SIZED_RESULTS)
def test_dry_run_previews_what_a_run_stores(ctx: CheckContext, case: Any) -> None:
    """The dry-run's context_preview.result is what a real run puts in the execution history
    for the same result and version; the dry-run itself calls no model."""
    budget, rows = case
    result = {"status": "done", "rows": rows}
    w = world(ctx)
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={})]), Step(text="ok")],
                    budget=budget)
    body = {"agent_version": agent.agent_version, "tool_name": agent.tool_name,
            "arguments": {}, "mock_receipts": [
                {"receipt_id": "arck-dry", "kind": "completed", "result": result}]}
    preview = w.ok(w.target.dry_run(body), "dry-run the tool").get("context_preview")
    expect(not w.requests(agent), "DRY-04", "no model call from a dry-run",
           f"{len(w.requests(agent))} request(s) at the provider")
    if not isinstance(preview, dict) or "result" not in preview:
        raise CheckFailure("DRY-01", "a context_preview with its result", str(preview)[:300])
    session = w.session(agent, w.wallet(FUNDS))
    run = w.start(session, "Look it up")
    w.answer_all(run["run_id"], result)
    stored = [m.get("content") for r in w.requests(agent) for m in messages(r)
              if m.get("role") == "tool"]
    expect(bool(stored) and _json(stored[0]) is not None and
           canonical(_json(stored[0])) == canonical(preview["result"]), "DRY-03",
           "the run's tool message = the dry-run's context_preview.result, canonically",
           lambda: f"run: {str(stored[:1])[:200]} / dry-run: {canonical(preview['result'])[:200]}")


@check("RUN-04")
def test_no_quota_stops_a_long_run(ctx: CheckContext) -> None:
    """A run of 30 tool rounds, each model call reported 40 times larger than it was, goes on
    to its end: no quota on calls, steps, tool calls or tokens stops it."""
    case = 30
    w = world(ctx)
    steps = [Step(tool_calls=[ToolCall(name=TOOL, arguments={"page": i})],
                  faults=[UsageDrift(factor=40.0)]) for i in range(case)]
    agent = w.agent([*steps, Step(text="All pages read.")])
    session = w.session(agent, w.wallet(FUNDS))
    run = w.start(session, "Read every page")
    snapshot = w.drive(run["run_id"], lambda n: {"page": "text " * 50},
                       lambda n: f"arck-page-{n}", rounds=case + 1)
    expect(snapshot.get("state") == "ended" and snapshot.get("end_reason") == "completed",
           "RUN-04", f"the run completed after {case} tool rounds and {case + 1} model calls",
           lambda: f"{snapshot} after {len(w.requests(agent))} model request(s)")


@check("AUTH-03")
def test_runs_of_a_tenant_stay_its_own(ctx: CheckContext) -> None:
    """Another tenant can neither read nor change a tenant's sessions, runs, histories,
    events, tool calls and wallets: each is unknown to it (profile: 404), and nothing moves."""
    w = world(ctx)
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"secret": "s3"})])])
    wallet = w.wallet(FUNDS)
    session = w.session(agent, wallet)
    run = w.start(session, "tenant secret")
    before, _ = w.settle(run["run_id"])
    call = only(w.tool_calls(run["run_id"]), f"tool call of run {run['run_id']}")
    t, role = w.target, "other_tenant"
    attempts = {
        "read the session's formal history": t.history(session, "formal", role=role),
        "read the execution history": t.history(session, "execution", role=role),
        "read the run": t.get_run(run["run_id"], role=role),
        "read the run's events": t.run_events(run["run_id"], role=role),
        "list the run's tool calls": t.tool_calls(run["run_id"], role=role),
        "read the wallet": t.get_wallet(wallet, role=role),
        "start a run in the session": t.create_run(session, {"input": "x"}, role=role),
        "cancel the run": t.cancel_run(run["run_id"], role=role),
    }
    claimed = _foreign_claim(w, str(call["call_id"]), role)
    if claimed is not None:
        attempts["claim the run's tool call"] = claimed
    for what, exchange in attempts.items():
        expect(not 200 <= exchange.status < 300, "AUTH-03",
               f"another tenant cannot {what}", exchange.describe)
        if ctx.profile == "reference":
            expect(exchange.status == 404, "AUTH-03",
                   f"another tenant's attempt to {what} answered 404 (unknown to it)",
                   exchange.describe)
    expect(w.snapshot(run["run_id"]) == before, "AUTH-03",
           "the run unchanged by the other tenant's attempts", str(w.snapshot(run["run_id"])))


def _foreign_claim(w: RunWorld, call_id: str, role: str) -> Exchange | None:
    """Another tenant's executor, online and scoped to a binding of its own, claiming the
    call: what a leaked call id lets it try (None: the target has no executor API)."""
    t = w.target
    if not isinstance(t, ExecutorTarget):
        return None
    binding = w.ok(t.create_binding(w.ctx.name("binding"), role=role),
                   "register another tenant's binding").get("binding_id")
    body = {"name": w.ctx.name("executor"), "bindings": [binding]}
    registered = t.register_executor(body, role=role)
    try:
        w.executor_api(registered)
    except NotApplicable:
        return None  # the other attempts still judge the runs' boundary
    executor = w.ok(registered, "register another tenant's executor").get("executor_id")
    executor_role = t.executor_role(str(executor))
    w.ok(t.heartbeat(executor_role), "send the other tenant's executor heartbeat")
    return t.claim(call_id, executor_role)
