"""RUN turns: input appended while a run is active (RUN-06), a permission revoked during a run
(RUN-14) and the chat-history tool (RUN-10); black-box through the runs API, the target's
optional steps (`append_input`, `revoke`) and what the simulated provider received."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st

from arck.conformance.checking import check, expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure, NotApplicable, NotTestable
from arck.conformance.runworld import (
    SETTLED,
    TOOL,
    Agent,
    RunWorld,
    canonical,
    messages,
    only,
    world,
)
from arck.simulator.provider import SlowAnswer, Step, ToolCall, script_tag
from arck.simulator.target import Exchange, ExecutorTarget

FUNDS = 10**12
IN_FLIGHT_S = 10.0  # the delayed answer: well inside the channel's 30 s timeout
CHAT_HISTORY = "arck_chat_history"  # the reference profile's reserved name (docs/runs.md)


def _step(w: RunWorld, name: str, what: str) -> Callable[..., Exchange]:
    """The target's optional step `name`, or "not applicable" when it has none."""
    found = getattr(w.target, name, None)
    if not callable(found):
        raise NotApplicable(f"the target offers no {what} step (`{name}` in its adapter)")
    return found  # type: ignore[no-any-return]


def _available(exchange: Exchange, what: str) -> None:
    """An unknown route answers the step: the target has no such operation."""
    if exchange.status in (404, 405, 501):
        raise NotApplicable(f"the target has no {what}: {exchange.describe()}")


def _agent(w: RunWorld, steps: Sequence[Step], tool_name: str) -> Agent:
    """As `RunWorld.agent`, with a tool name of the check's own (a revocation reaches no
    other check's runs)."""
    ctx = w.ctx
    channel = w.channel()
    script = ctx.name("script")
    w.provider.add_script(script, list(steps))
    tool = {**ctx.tool(1024), "name": tool_name}
    published = w.target.publish_tool_set({"name": ctx.name("tools"), "tools": [tool]})
    tool_set_id = w.ok(published, "publish a tool set").get("tool_set_id")
    prompt = f"You are an arck conformance agent. {script_tag(script)}"
    body = {"tool_set_id": tool_set_id, "system_prompt": prompt,
            "channel_id": channel.channel_id}
    answer = w.ok(w.target.publish_agent_version(ctx.agent_id, body),
                  "publish an agent version with a channel")
    version = answer.get("agent_version")
    if not isinstance(version, str):
        raise NotTestable(f"setup could not publish an agent version: {answer}")
    return Agent(version, script, prompt, tool_name, channel, None)


def _own_tool(ctx: CheckContext) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", ctx.name("revocable"))[:64]


def _in_flight(w: RunWorld, agent: Agent, run_id: str, count: int) -> None:
    """The run's model call number `count` reached the provider and is not answered yet."""
    sent = len(w.requests(agent))
    snapshot = w.snapshot(run_id)
    if sent != count or snapshot.get("state") in SETTLED:
        raise NotTestable(f"the model call was not in flight: {sent} request(s) at the "
                          f"provider (expected {count}), run {snapshot}")


def _receipt(w: RunWorld, call_id: str, tag: str, result: Any = None) -> Exchange:
    """The call answered by the world's executor: claimed, accepted, completed."""
    return w.answer(call_id, {"ok": True} if result is None else result,
                    f"arck-{tag}-{call_id}")


def _dispatchable(w: RunWorld, run_id: str) -> list[dict[str, Any]]:
    return [c for c in w.tool_calls(run_id) if c.get("state") == "dispatchable"]


def _index(items: list[Any], test: Callable[[Any], bool]) -> int | None:
    return next((i for i, m in enumerate(items) if isinstance(m, dict) and test(m)), None)


# -- RUN-06: appended input -----------------------------------------------------------------------


@check("RUN-06")
def test_appended_input_and_tool_plans(ctx: CheckContext) -> None:
    """Input appended while an accepted batch waits never revokes it: the call stays
    dispatchable, its receipt is taken, and the input follows the result in the next request.
    Input appended while the model call is in flight may discard the plan it answers: then
    none of its calls is ever dispatchable; either way the input reaches the model."""
    w = world(ctx)
    append = _step(w, "append_input", "appended-input")
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"n": 1})]),
                     Step(text="Done.")])
    session = w.session(agent, w.wallet(FUNDS))
    run_id = w.start(session, "Look it up")["run_id"]
    snapshot, _ = w.settle(run_id)
    if snapshot.get("state") != "waiting_tools":
        raise CheckFailure("RUN-06", "the run waiting for its accepted tool call", str(snapshot))
    call = only(w.tool_calls(run_id), f"tool call of run {run_id}")
    later = "arck later input: also check the invoice"
    exchange = append(run_id, later)
    _available(exchange, "appended-input step")
    expect(200 <= exchange.status < 300, "RUN-06",
           "input appended to a run waiting for its accepted tool batch", exchange.describe)
    after = w.tool_calls(run_id)
    expect([c.get("call_id") for c in _dispatchable(w, run_id)] == [call.get("call_id")],
           "RUN-06", "the accepted call still dispatchable after the input (a batch already "
           "accepted is never revoked by later input)", lambda: canonical(after)[:400])
    receipt = _receipt(w, str(call.get("call_id")), "batch")
    expect(200 <= receipt.status < 300, "RUN-06",
           "the accepted call's receipt taken after the input", receipt.describe)
    snapshot, _ = w.settle(run_id)
    sent = [messages(r) for r in w.requests(agent)]
    expect(len(sent) == 2, "RUN-06", "one more model request, after the batch's result",
           f"{len(sent)} request(s); run {snapshot}")
    last = sent[-1]
    tool_at = _index(last, lambda m: m.get("role") == "tool")
    input_at = _index(last, lambda m: m.get("role") == "user" and m.get("content") == later)
    expect(tool_at is not None and input_at is not None and tool_at < input_at, "RUN-06",
           "the next request holds the batch's result, then the appended input after it",
           lambda: f"tool message at {tool_at}, input at {input_at}: {canonical(last)[:400]}")
    if ctx.profile == "reference":
        expect(snapshot.get("end_reason") == "completed" and last[:len(sent[0])] == sent[0]
               and [m.get("role") for m in last[len(sent[0]):]] == ["assistant", "tool", "user"],
               "RUN-06", "profile: the run completed; request 2 = request 1 + the plan, its "
               "result and the input", lambda: f"run {snapshot}; new messages "
               f"{canonical(last[len(sent[0]):])[:400]}")
    _input_during_the_call(ctx, w, append)
    if ctx.profile == "reference":
        for answer in ("text", "request_input"):
            _input_during_another_answer(w, append, answer)


def _input_during_another_answer(
    w: RunWorld, append: Callable[..., Exchange], answer: str
) -> None:
    """Profile (docs/runs.md, Appended input): input appended while the call in flight
    answers with text, or with a request for input, keeps the run going: text is applied and
    the input follows it; a request for input is answered by the input (its `tool`
    message). Request 2 = request 1 + the answer + the input, in either case."""
    first = Step(text="Here it is.", faults=[SlowAnswer(seconds=IN_FLIGHT_S)]) \
        if answer == "text" else \
        Step(request_input="Which order?", faults=[SlowAnswer(seconds=IN_FLIGHT_S)])
    agent = w.agent([first, Step(text="Done, with your input.")])
    session = w.session(agent, w.wallet(FUNDS))
    run_id = w.start(session, f"Look it up ({answer})")["run_id"]
    _in_flight(w, agent, run_id, 1)
    early = f"arck input during a {answer} answer: order 7"
    exchange = append(run_id, early)
    expect(200 <= exchange.status < 300, "RUN-06",
           f"input appended while a call answering {answer} is in flight", exchange.describe)
    snapshot, _ = w.settle(run_id)
    sent = [messages(r) for r in w.requests(agent)]
    new = sent[1][len(sent[0]):] if len(sent) == 2 else []
    roles = [m.get("role") for m in new if isinstance(m, dict)]
    carried = any(isinstance(m, dict) and early in str(m.get("content")) for m in new)
    role = "user" if answer == "text" else "tool"
    expect(snapshot.get("end_reason") == "completed" and roles == ["assistant", role]
           and carried, "RUN-06",
           f"profile: the run went on after its {answer} answer, request 2 = request 1 + the "
           f"answer + the input (as a {role} message), then completed",
           lambda: f"{len(sent)} request(s); new messages "
           f"{canonical(new)[:400]}; run {snapshot}")


def _input_during_the_call(ctx: CheckContext, w: RunWorld, append: Callable[..., Exchange]) -> None:
    agent = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"n": 2})],
                          faults=[SlowAnswer(seconds=IN_FLIGHT_S)]),
                     Step(text="Noted."), Step(text="Noted again.")])
    session = w.session(agent, w.wallet(FUNDS))
    run_id = w.start(session, "Look up order 1")["run_id"]
    _in_flight(w, agent, run_id, 1)
    early = "arck early input: order 2 instead"
    exchange = append(run_id, early)
    expect(200 <= exchange.status < 300, "RUN-06",
           "input appended while the run's model call is in flight", exchange.describe)
    snapshot, _ = w.settle(run_id)
    listed = w.tool_calls(run_id)
    if snapshot.get("state") == "waiting_tools":
        # The plan was accepted after all (the protocol allows it): the input waits for it.
        for call in _dispatchable(w, run_id):
            _receipt(w, str(call.get("call_id")), "early")
        snapshot, _ = w.settle(run_id)
    sent = [messages(r) for r in w.requests(agent)]
    reached = any(m.get("role") == "user" and m.get("content") == early
                  for request in sent[1:] for m in request if isinstance(m, dict))
    expect(reached, "RUN-06", "the input appended during the call sent to the model in a "
           "later request (never lost)", lambda: f"{len(sent)} request(s); run {snapshot}")
    if ctx.profile == "reference":
        expect(listed == [] and snapshot.get("end_reason") == "completed", "RUN-06",
               "profile: the plan answered after the input discarded (no call listed, never "
               "dispatched) and the run completed", lambda: f"calls {canonical(listed)[:300]}; "
               f"run {snapshot}")
        expect(len(sent) == 2 and sent[1] == [*sent[0], {"role": "user", "content": early}],
               "RUN-06", "profile: request 2 = request 1 + the input (the discarded plan never "
               "entered the history)", lambda: f"{len(sent)} request(s); new messages "
               f"{canonical(sent[1][len(sent[0]):]) if len(sent) > 1 else '-'}")


# -- RUN-14: permission revocation ----------------------------------------------------------------


@check("RUN-14")
def test_revoked_permission_stops_dispatch(ctx: CheckContext) -> None:
    """A tool revoked while the model call that plans it is in flight: none of the plan's
    calls is ever dispatchable. Revoked while an accepted batch waits: nothing more of that
    tool is dispatched (profile: the receipt of the call dispatched before is taken, and the
    run ends `permission_changed` at its next step, before any model call)."""
    w = world(ctx)
    revoke = _step(w, "revoke", "permission-revocation")
    tool = _own_tool(ctx)
    agent = _agent(w, [Step(tool_calls=[ToolCall(name=tool, arguments={"n": 1})],
                            faults=[SlowAnswer(seconds=IN_FLIGHT_S)]),
                       Step(tool_calls=[ToolCall(name=tool, arguments={"n": 2})]),
                       Step(text="never sent")], tool)
    session = w.session(agent, w.wallet(FUNDS))
    run_id = w.start(session, "Use the tool")["run_id"]
    _in_flight(w, agent, run_id, 1)
    exchange = revoke(ctx.agent_id, tool)
    _available(exchange, "permission-revocation step")
    expect(200 <= exchange.status < 300, "RUN-14",
           f"the agent's tool {tool!r} revoked while its run's model call is in flight",
           exchange.describe)
    snapshot, _ = w.settle(run_id)
    listed = w.tool_calls(run_id)
    expect(not [c for c in listed if c.get("state") == "dispatchable"], "RUN-14",
           "no call of the plan answered after the revocation dispatchable",
           lambda: f"calls {canonical(listed)[:400]}; run {snapshot}")
    expect(snapshot.get("state") == "ended", "RUN-14",
           "the run ended (it cannot go on with the permission gone)", str(snapshot))
    if ctx.profile == "reference":
        expect(snapshot.get("end_reason") == "permission_changed" and
               [c.get("state") for c in listed] == ["revoked"], "RUN-14",
               "profile: the run ended permission_changed, its call listed `revoked`",
               lambda: f"run {snapshot}; calls {canonical(listed)[:300]}")
    _never_claimed(ctx, w, listed)
    _revoked_while_waiting(ctx, w, revoke)


def _never_claimed(ctx: CheckContext, w: RunWorld, listed: list[dict[str, Any]]) -> None:
    """A call of the refused plan cannot be claimed, nor answered, by an executor holding its
    binding (profile: 409, its state, never 403: docs/runs.md, Permission revocation)."""
    if not isinstance(w.target, ExecutorTarget):
        return
    for call in listed:
        call_id = str(call.get("call_id"))
        claimed = w.executors().claim(call_id, w.executor())
        expect(not 200 <= claimed.status < 300, "RUN-14",
               f"no claim of call {call_id} of a plan answered after its tool was revoked",
               claimed.describe)
        if ctx.profile != "reference":
            continue
        receipt = w.target.submit_receipt(call_id, {
            "receipt_id": f"arck-revoked-{call_id}", "claim_id": "cl-000000",
            "kind": "completed", "result": {}}, role=w.executor())
        expect(claimed.status == 409 and receipt.status == 409, "RUN-14",
               f"profile: a claim of revoked call {call_id}, and a receipt for it, from an "
               "executor holding its binding answered 409 (its state), not 403",
               f"claim {claimed.describe()}; receipt {receipt.describe()}")


def _revoked_while_waiting(ctx: CheckContext, w: RunWorld, revoke: Callable[..., Exchange]) -> None:
    tool = _own_tool(ctx)
    agent = _agent(w, [Step(tool_calls=[ToolCall(name=tool, arguments={"n": 1})]),
                       Step(tool_calls=[ToolCall(name=tool, arguments={"n": 2})]),
                       Step(text="never sent")], tool)
    session = w.session(agent, w.wallet(FUNDS))
    run_id = w.start(session, "Use the tool twice")["run_id"]
    snapshot, _ = w.settle(run_id)
    if snapshot.get("state") != "waiting_tools":
        raise CheckFailure("RUN-06", "the run waiting for its accepted tool call", str(snapshot))
    before = w.tool_calls(run_id)
    # Dispatched before the revocation: an executor holds them, its acceptance confirmed.
    claims = {str(c.get("call_id")): w.accept(str(c.get("call_id"))) for c in before
              if c.get("state") == "dispatchable"}
    exchange = revoke(ctx.agent_id, tool)
    expect(200 <= exchange.status < 300, "RUN-14",
           f"the agent's tool {tool!r} revoked while its accepted batch waits",
           exchange.describe)
    sent_before = len(w.requests(agent))
    pending = _pending_input(ctx, w, run_id)
    receipts = [w.finish(call_id, claim, f"arck-before-{call_id}", {"ok": True})
                for call_id, claim in claims.items()]
    snapshot, _ = w.settle(run_id)
    known = {c.get("call_id") for c in before}
    new = [c for c in w.tool_calls(run_id)
           if c.get("call_id") not in known and c.get("state") == "dispatchable"]
    expect(not new, "RUN-14", f"no call of {tool!r} dispatched after its revocation",
           lambda: f"new dispatchable calls {canonical(new)[:400]}; run {snapshot}")
    if ctx.profile == "reference":
        expect(bool(receipts) and all(200 <= r.status < 300 for r in receipts), "RUN-14",
               "profile: the receipt of a call dispatched before the revocation taken",
               lambda: "; ".join(r.describe() for r in receipts) or "no call was dispatchable")
        expect(snapshot.get("end_reason") == "permission_changed" and
               len(w.requests(agent)) == sent_before, "RUN-14",
               "profile: the run ended permission_changed at its next step, no model call "
               "after the revocation", lambda: f"run {snapshot}; "
               f"{len(w.requests(agent)) - sent_before} request(s) after the revocation")
        if pending is not None:
            held = [kind for kind in ("formal", "execution")
                    if pending in canonical(w.history(session, kind))]
            expect(not held, "RUN-14", "profile: input still pending when the revocation "
                   "ended the run enters no history (docs/runs.md, Appended input)",
                   lambda: f"the input {pending!r} in the {' and '.join(held)} history; "
                   f"run {snapshot}")


def _pending_input(ctx: CheckContext, w: RunWorld, run_id: str) -> str | None:
    """Profile, a target with the appended-input step: input appended after the revocation,
    while the run waits for its batch (pending until the next step, which ends the run).
    The text, or None when there is no such step or it was not taken."""
    append = getattr(w.target, "append_input", None)
    if ctx.profile != "reference" or not callable(append):
        return None
    text = f"arck input pending at a revocation {ctx.name('input')}"
    exchange = append(run_id, text)
    expect(200 <= exchange.status < 300, "RUN-06",
           "input appended to a run waiting for its batch after a revocation (still active)",
           exchange.describe)
    return text


@check("RUN-06")
def test_input_after_the_end_is_refused_or_carried(ctx: CheckContext) -> None:
    """Input for a run that has ended can no longer be appended to it: it is refused, or, if
    taken, it is not lost (the session's next run carries it to the model). Under the
    reference profile it is refused with 409 (docs/runs.md, Appended input: send it as the
    next run's)."""
    w = world(ctx)
    append = _step(w, "append_input", "appended-input")
    agent = w.agent([Step(text="Done."), Step(text="Done again.")])
    session = w.session(agent, w.wallet(FUNDS))
    run_id = str(w.start(session, "Say done")["run_id"])
    snapshot, _ = w.settle(run_id)
    if snapshot.get("state") != "ended":
        raise NotTestable(f"not testable: the run did not end: {snapshot}")
    late = f"arck input after the end {ctx.name('input')}"
    exchange = append(run_id, late)
    _available(exchange, "appended-input step")
    replay = ("Reproduce: a run whose model answers text; once it has ended, POST "
              "/v1/runs/{run_id}/input {\"input\": ...} (docs/runs.md, Appended input).")
    if ctx.profile == "reference":
        expect(exchange.status == 409, "RUN-06", "profile: input for an ended run refused "
               "with 409", exchange.describe, replay)
    if not 200 <= exchange.status < 300:
        return
    w.settle(str(w.start(session, "And now?")["run_id"]))
    carried = [n for n, r in enumerate(w.requests(agent), start=1)
               if late in r.body.decode("utf-8", "replace")]
    expect(bool(carried), "RUN-06", "input taken for an ended run carried to the model by the "
           "session's next run (accepted input is never lost)",
           f"answered {exchange.status}, then in none of {len(w.requests(agent))} model "
           "request(s)", replay)


# -- RUN-10: the chat-history tool ----------------------------------------------------------------


@check("RUN-10")
def test_chat_history_tool_returns_visible_text_only(ctx: CheckContext) -> None:
    """The model calls the chat-history tool after a turn with a tool call and its receipt:
    the engine answers it itself, and the answer holds the user's inputs and the assistant's
    text, never the receipt, the call's arguments or the system prompt."""
    if ctx.profile != "reference":
        raise NotApplicable("the protocol names no chat-history tool; the reference profile's "
                            f"is {CHAT_HISTORY!r} (docs/runs.md), which this target does not "
                            "declare")
    w = world(ctx)
    marks = {"argument": "arck-argument-mark", "receipt": "arck-receipt-mark"}
    texts = ["arck user one: where is order 7?", "arck assistant one: order 7 shipped.",
             "arck user two: what did we say?"]
    agent = w.agent([
        Step(tool_calls=[ToolCall(name=TOOL, arguments={"q": marks["argument"]})]),
        Step(text=texts[1]),
        Step(tool_calls=[ToolCall(name=CHAT_HISTORY, arguments={"limit": 20},
                                  id="arck-history-call")]),
        Step(text="Recalled.")])
    session = w.session(agent, w.wallet(FUNDS))
    first = w.start(session, texts[0])["run_id"]
    snapshot, _ = w.settle(first)
    for call in _dispatchable(w, first):
        w.ok(_receipt(w, str(call.get("call_id")), "history", {"secret": marks["receipt"]}),
             "send a completed receipt")
    snapshot, _ = w.settle(first)
    if snapshot.get("end_reason") != "completed":
        raise NotTestable(f"setup: the first run did not complete: {snapshot}")
    second = w.start(session, texts[2])["run_id"]
    snapshot, _ = w.settle(second)
    waiting = _dispatchable(w, second)
    expect(not waiting, "RUN-10", "the chat-history tool answered by the engine itself, "
           "with no executor", lambda: f"dispatchable calls {canonical(waiting)[:300]}")
    sent = [messages(r) for r in w.requests(agent)]
    answers = [m.get("content") for m in (sent[-1] if sent else [])
               if isinstance(m, dict) and m.get("role") == "tool"
               and m.get("tool_call_id") == "arck-history-call"]
    if len(answers) != 1 or not isinstance(answers[0], str):
        raise CheckFailure("RUN-10", "one tool message answering the chat-history call in "
                           "the next request", f"{answers!r}; run {snapshot}")
    answer = answers[0]
    leaked = [k for k, v in marks.items() if v in answer]
    if agent.system_prompt in answer or script_tag(agent.script) in answer:
        leaked.append("system prompt")
    expect(not leaked, "RUN-10", "the chat-history answer without receipts, tool arguments "
           "or the system prompt", f"it holds the {', '.join(leaked)}: {answer[:400]}")
    missing = [t for t in texts if t not in answer]
    expect(not missing, "RUN-10", "the chat-history answer holding the session's visible "
           "user and assistant text", f"missing {missing}: {answer[:400]}")
    parsed: Any = None
    with contextlib.suppress(ValueError):
        parsed = json.loads(answer)
    want = {"messages": [{"role": "user", "text": texts[0]},
                         {"role": "assistant", "text": texts[1]},
                         {"role": "user", "text": texts[2]}]}
    expect(parsed == want, "RUN-10", f"profile: exactly {canonical(want)}", answer[:400])


BAD_HISTORY_ARGUMENTS: tuple[Any, ...] = (
    {"limit": 0}, {"limit": 101}, {"limit": -1}, {"limit": "5"}, {"limit": 1.5},
    {"limit": True}, {"limit": None}, {"limit": 5, "arck_extra": "arck-extra-mark"},
    {"arck_extra": "arck-extra-mark"}, "not json arck-extra-mark", "[1]",
)
GOOD_HISTORY_ARGUMENTS: tuple[Any, ...] = ({}, "", {"limit": 1}, {"limit": 100})


@property_check("RUN-10", cases=st.sampled_from(BAD_HISTORY_ARGUMENTS + GOOD_HISTORY_ARGUMENTS),
                examples=BAD_HISTORY_ARGUMENTS + GOOD_HISTORY_ARGUMENTS, cap=1)
def test_chat_history_tool_arguments(ctx: CheckContext, case: Any) -> None:
    """Profile (docs/runs.md, The chat-history tool): arguments other than `{"limit"?:
    1..100}` are answered `{"error": "invalid_arguments", "message"}`, echoing nothing of
    what was sent, and the run goes on; the bounds themselves, and empty arguments (`""`, as
    some providers send for a call without parameters), are answered with messages. A
    turn of engine-answered calls only is no batch to wait for: the next model call starts at
    the moment the first one finished, not a lease later."""
    if ctx.profile != "reference":
        raise NotApplicable("the protocol names no chat-history tool; the reference profile's "
                            f"is {CHAT_HISTORY!r} (docs/runs.md)")
    w = world(ctx)
    agent = w.agent([Step(tool_calls=[ToolCall(name=CHAT_HISTORY, arguments=case,
                                               id="arck-history-args")]),
                     Step(text="Recalled, or not.")])
    run_id = w.start(w.session(agent, w.wallet(FUNDS)), "arck user: what did we say?")["run_id"]
    snapshot, _ = w.settle(run_id)
    sent = [messages(r) for r in w.requests(agent)]
    answers = [m.get("content") for m in (sent[-1] if len(sent) == 2 else [])
               if isinstance(m, dict) and m.get("tool_call_id") == "arck-history-args"]
    expect(snapshot.get("end_reason") == "completed" and len(answers) == 1, "RUN-10",
           f"the run going on after a chat-history call with arguments {canonical(case)}: "
           "its answer in the next request, then completed",
           lambda: f"{len(sent)} request(s); answers {answers!r}; run {snapshot}")
    parsed: Any = None
    with contextlib.suppress(ValueError, TypeError):
        parsed = json.loads(str(answers[0]))
    if canonical(case) in {canonical(bad) for bad in BAD_HISTORY_ARGUMENTS}:  # True != 1
        expect(isinstance(parsed, dict) and parsed.get("error") == "invalid_arguments"
               and isinstance(parsed.get("message"), str) and set(parsed) == {"error", "message"}
               and "arck-extra-mark" not in str(answers[0]), "RUN-10",
               f"profile: {canonical(case)} answered {{\"error\": \"invalid_arguments\", "
               "\"message\"}, echoing none of it", str(answers[0])[:400])
    else:
        expect(isinstance(parsed, dict) and isinstance(parsed.get("messages"), list), "RUN-10",
               f"profile: {canonical(case)} answered with the messages",
               str(answers[0])[:400])
    events = w.events(run_id)
    finished = [e.get("at") for e in events if e.get("type") == "model_call.finished"]
    started = [e.get("at") for e in events if e.get("type") == "model_call.started"]
    # On the test clock the same instant; in real time within a second (a lease is 15 s).
    slack = 0.0 if w.control.virtual_time else 1.0
    expect(len(started) == 2 and len(finished) >= 1 and isinstance(started[1], int | float)
           and isinstance(finished[0], int | float) and started[1] - finished[0] <= slack,
           "RUN-10", "profile: the next model call started the moment the first finished (a "
           "turn of engine-answered calls only is no batch to wait for)",
           f"model_call.started at {started}, model_call.finished at {finished}")
