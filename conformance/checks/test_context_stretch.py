"""The summary's stretch (CTX-04; docs/runs.md, Compaction "Summary only if still at or above
70%"): a contiguous early stretch of the history, cut back until the summary request fits the
summary channel's window, and no shorter than that.

A session of long turns on a small main channel comes to need a summary, and its version's
summary channel is too small for the whole early stretch. What the summary request lists is
compared with the history the main request before it sent; whether one more message would
have fitted is computed with the profile's raw estimate (CTX-13) from the request itself. An
engine that cuts one message too many, gives up when the whole stretch does not fit, or
summarises nothing at all passes every check that only asks whether a summary happened.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Any

from arck.conformance.checking import check, expect
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure, NotApplicable, NotTestable
from arck.conformance.runworld import (
    TOOL,
    ChannelSpec,
    RunWorld,
    canonical,
    messages,
    needs_virtual_time,
    world,
)
from arck.simulator.provider import Step, ToolCall

FUNDS = 10**12
TURN = "tell me more " * 269  # about 3.5 KB a turn: a few turns reach 70% of MAIN
TURNS = 12
MAIN = ChannelSpec(input_capacity=9_000, total_capacity=12_000, output_capacity=500)
# Window min(4,500, 6,000 - 500) - 2,000 = 2,500 tokens: about two turns, never five.
SUMMARY = ChannelSpec(input_capacity=4_500, total_capacity=6_000, output_capacity=500)
# Window min(2,100, 2,600 - 500) - 2,000 = 100 tokens: not even one turn.
TINY = ChannelSpec(input_capacity=2_100, total_capacity=2_600, output_capacity=500)
SUMMARY_TEXT = "The user kept asking for more; the agent noted each request."
_TAG = re.compile(r"\[arck-script:[^\]]*\]")  # removed from the stretch's lines (docs)


def _window(spec: ChannelSpec) -> int:
    """The summary channel's window: min(input, total - output) - 2,000 (docs/runs.md)."""
    return min(spec.input_capacity, spec.total_capacity - spec.output_capacity) - 2_000


def _raw(sent: list[Any]) -> int:
    """CTX-13, the profile's raw estimate: ceil(UTF-8 bytes of the canonical messages / 4)
    + 3 per message (a summary request has no tools)."""
    size = sum(len(canonical(m).encode("utf-8")) for m in sent)
    return math.ceil(size / 4) + 3 * len(sent)


def _line(message: Any) -> str:
    return _TAG.sub("", canonical(message))


def _session(w: RunWorld, summary: ChannelSpec, label: str) -> tuple[list[Any], str, str]:
    """Turns until a summary request is sent (or the turns run out): every request the
    provider received since, in order, the main script and the last run."""
    channel = w.channel(dataclasses.replace(summary, model=w.ctx.name(label)))
    w.provider.add_model_script(channel.spec.model, [Step(text=SUMMARY_TEXT)] * 4)
    agent = w.agent([Step(text="noted")] * (TURNS + 2), channel=w.channel(MAIN),
                    summary_channel=channel)
    session = w.session(agent, w.wallet(FUNDS))
    run_id = ""
    for turn in range(TURNS):
        run_id = str(w.start(session, f"turn {turn}: {TURN}")["run_id"])
        w.settle(run_id)
        if w.provider.recorded(f"model:{channel.spec.model}"):
            break
    wanted = (agent.script, f"model:{channel.spec.model}")
    return [r for r in w.provider.recorded() if r.conversation in wanted], agent.script, run_id


def _split(sent: list[Any]) -> tuple[str, list[str]] | None:
    """The summary request's instruction line and stretch lines (None: not that shape)."""
    content = sent[-1].get("content") if sent and isinstance(sent[-1], dict) else None
    if not isinstance(content, str) or "\n" not in content:
        return None
    head, *lines = content.split("\n")
    return head, lines


def _listing(sent: list[Any], head: str, lines: list[str]) -> list[Any]:
    """The summary request `sent` as it would be listing `lines` instead."""
    return [*sent[:-1], {**sent[-1], "content": "\n".join([head, *lines])}]


def _longest(sent: list[Any], head: str, history: list[Any], window: int) -> int:
    """Profile: how many of `history`'s first messages the stretch holds: the most whose
    request is below `window` by raw estimate, cut only before a non-tool message."""
    best = 0
    for k in range(1, len(history) + 1):
        nxt = history[k] if k < len(history) else None
        if isinstance(nxt, dict) and nxt.get("role") == "tool":
            continue
        if _raw(_listing(sent, head, [_line(m) for m in history[:k]])) < window:
            best = k
    return best


def _first_summary(recorded: list[Any], script: str) -> tuple[list[Any], list[Any],
                                                                list[Any]] | None:
    """(summary request, main request before it, main request after it), or None."""
    first = next((i for i, r in enumerate(recorded) if r.conversation != script), None)
    if first is None:
        return None
    before = [messages(r) for r in recorded[:first] if r.conversation == script][-1:]
    after = [messages(r) for r in recorded[first:] if r.conversation == script][:1]
    return messages(recorded[first]), before[0] if before else [], after[0] if after else []


def _exact(spec: ChannelSpec, window: int) -> ChannelSpec:
    """`spec` resized so that its summary window is exactly `window` tokens."""
    return dataclasses.replace(spec, input_capacity=window + 2_000,
                               total_capacity=window + 2_000 + spec.output_capacity)


@check("CTX-04")
def test_the_summary_stretch_is_the_longest_that_fits(ctx: CheckContext) -> None:
    """Core: the summary request lists a contiguous early stretch, the history's first
    messages after the system prompt, one per line, in order, and never an empty one.
    Profile: it is the longest such stretch below the summary channel's window by raw
    estimate; and on two more sessions with the same turns, whose summary windows are that
    request's own raw estimate plus one and exactly it, the stretch is the same, then the
    longest shorter one (the window is a strict bound, counted as the profile counts)."""
    w = world(ctx)
    needs_virtual_time(w, "a dozen turns, each waited for")
    recorded, script, run_id = _session(w, SUMMARY, "stretch-summary")
    found = _first_summary(recorded, script)
    if found is None:
        events = [e.get("type") for e in w.events(run_id)]
        expect(ctx.profile != "reference", "CTX-04", "profile: a summary of the longest early "
               "stretch that fits the summary channel (a shorter stretch fits)",
               f"no summary request in {TURNS} turns; the last run's events {events}")
        raise NotTestable(f"not testable: no summary request in {TURNS} turns")
    sent, before, after = found
    shape = _split(sent)
    if shape is None:
        raise NotTestable(f"not testable: the summary request is not a system prompt and one "
                          f"user message of lines: {canonical(sent)[:300]}")
    head, lines = shape
    # The request before the summary holds the history up to the previous answer.
    history = [_line(m) for m in before[1:]]
    shared = min(len(lines), len(history))
    expect(bool(lines) and len(lines) <= len(history) + 1
           and lines[:shared] == history[:shared], "CTX-04",
           "the summary lists a contiguous early stretch: the history's first messages after "
           "the system prompt, in order, one per line (a stretch of none is no summary)",
           f"{len(lines)} line(s), the first {lines[:1]!r:.200}; the history sent before it "
           f"({len(history)} messages after the system prompt) begins {history[:1]!r:.200}")
    if ctx.profile != "reference":
        return
    kept = after[2:-1]  # after the working memory, before the current input
    if not kept:
        raise NotTestable("not testable: the whole early stretch fit the summary channel, so "
                          "nothing was cut back")
    # The early history: the stretch (parsed back) and what the main request kept after it.
    early = [*(json.loads(line) for line in lines), *kept]
    for spec, label in ((SUMMARY, "the summary channel's"),
                        (_exact(SUMMARY, _raw(sent) + 1), "one above the first request's"),
                        (_exact(SUMMARY, _raw(sent)), "exactly the first request's")):
        if spec is not SUMMARY:
            again = _first_summary(*_session(w, spec, "exact-summary")[:2])
            shape = _split(again[0]) if again else None
            if shape is None:
                raise CheckFailure("CTX-04", f"profile: a summary on a summary channel whose "
                                   f"window is {label} raw estimate (the same turns again)",
                                   "none was sent")
            lines = shape[1]
        want = _longest(sent, head, early, _window(spec))
        expect(lines == [_line(m) for m in early[:want]], "CTX-04",
               f"profile: the longest early stretch below a window of {_window(spec)} tokens "
               f"({label}) by raw estimate: {want} message(s)",
               f"{len(lines)} message(s) listed",
               "Reproduce: the summary requests at the provider (GET /v1/arck/requests) and "
               "the main request after the first; docs/runs.md, Compaction.")


@check("CTX-04")
def test_no_summary_of_nothing(ctx: CheckContext) -> None:
    """A summary channel too small for even the first message: no summary request lists an
    empty stretch (core); profile: none is sent at all."""
    w = world(ctx)
    needs_virtual_time(w, "a dozen turns, each waited for")
    recorded, script, run_id = _session(w, TINY, "tiny-summary")
    summaries = [messages(r) for r in recorded if r.conversation != script]
    shapes = [_split(m) for m in summaries]
    empty = [canonical(m)[-200:] for m, shape in zip(summaries, shapes, strict=True)
             if shape is None or not any(shape[1])]
    expect(not empty, "CTX-04", "no summary request listing no message of the history",
           f"{len(empty)} such request(s), the first ending {empty[:1]}")
    if ctx.profile == "reference":
        expect(not summaries, "CTX-04", f"profile: no summary request when not even the first "
               f"message fits the summary channel's window ({_window(TINY)} tokens)",
               f"{len(summaries)} sent; the last run {w.snapshot(run_id)}")


# About 1.5 KB of assistant text beside each tool call (within MAIN's 500 output tokens), and
# enough such calls to reach 70% of MAIN with nothing local compaction could shorten.
NOTE = "checked another page " * 70
NOTED_CALLS = 16
WORKING_MEMORY = "arck_working_memory"  # the profile's working-memory message `name`


@check("CTX-06", "CTX-04")
def test_a_summary_names_only_what_its_stretch_holds(ctx: CheckContext) -> None:
    """Profile: a summary naming a call id the session knows but its stretch does not hold is
    refused (docs/runs.md, Validation), also when the stretch begins right after the current
    input. The first run asks the user for input; the next run's input answers it, then the
    model makes tool calls with long notes beside them, so the stretch a summary takes is the
    input's later side, and the message just before it (the answer) holds the request's id.
    The summary model names that id: no working memory may carry it."""
    if ctx.profile != "reference":
        raise NotApplicable("which ids a summary may name is the reference profile's rule")
    w = world(ctx)
    needs_virtual_time(w, "a run of long tool turns, each waited for")
    main = w.channel(dataclasses.replace(MAIN, model=w.ctx.name("asked-main")))
    steps = [Step(request_input="Which account?")]
    steps += [Step(text=f"{n}: {NOTE}", tool_calls=[ToolCall(name=TOOL, arguments={"n": n})])
              for n in range(NOTED_CALLS)]
    agent = w.agent([*steps, Step(text="done")], channel=main)
    session = w.session(agent, w.wallet(FUNDS))
    asked = str(w.start(session, "Close my account.")["run_id"])
    snapshot, _ = w.settle(asked)
    if snapshot.get("end_reason") != "input_required":
        raise NotTestable(f"not testable: the first run did not end input_required: {snapshot}")
    request = _request_id(w.history(session, "execution"))
    # The summary model, answering any summary of this channel, names the request's id.
    w.provider.add_model_script(main.spec.model, [Step(
        text=f"The user answered request {request}; the agent checked pages.")] * 8)
    run_id = str(w.start(session, "The savings account.")["run_id"])
    w.answer_all(run_id, {"status": "ok"}, rounds=NOTED_CALLS + 2)
    summaries = w.provider.recorded(f"model:{main.spec.model}")
    if not summaries:
        raise NotTestable(f"not testable: no summary was asked in {NOTED_CALLS} long turns: "
                          f"{w.snapshot(run_id)}")
    if all(request in "\n".join((_split(messages(r)) or ("", []))[1]) for r in summaries):
        raise NotTestable(f"not testable: every summary's stretch held request {request} (the "
                          "earlier side of the input), so naming it is allowed")
    carried = [n for n, r in enumerate(w.requests(agent), start=1)
               if any(isinstance(m, dict) and m.get("name") == WORKING_MEMORY
                      and request in str(m.get("content")) for m in messages(r))]
    refused = w.of_type(run_id, "compaction.refused")
    expect(not carried, "CTX-06", f"profile: a summary naming request {request}, which its "
           "stretch (the later side of the input answering that request) does not hold, is "
           "refused: no working memory carries it",
           f"a working memory naming it in main request(s) {carried[:4]}; refusals {refused}",
           "Replay the case with `arck replay`; the summary requests are the provider's "
           f"records of model {main.spec.model}.")


def _request_id(history: list[Any]) -> str:
    """The id of the reserved call the execution history's last assistant message makes."""
    for message in reversed(history):
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        if isinstance(calls, list) and calls and isinstance(calls[0], dict) \
                and isinstance(calls[0].get("id"), str):
            return str(calls[0]["id"])
    raise NotTestable(f"not testable: no request for input in the execution history "
                      f"{canonical(history)[-300:]}")
