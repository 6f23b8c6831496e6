"""What compaction keeps, stores and never loops on (CTX-04, CTX-06, CTX-07, CTX-15, CTX-16,
RUN-09, RUN-11), judged from the requests the simulated provider received, the stored
execution history and, for the profile's figures, the run's events.

Every bug class here passed the other checks of context once (mutation sampling of
reference/runtime, benchmarks/mutation/verdicts.toml): the run's current input (or the answer
to a request for input) summarised away, a local compaction reported but not sent or sent but
not stored, the first message of the kept tail rewritten, a working memory summarised on its
own or without the facts of what it replaced, an estimate exactly at 70% left uncompacted,
and a budget of 0 dividing by zero for ever.

* **Core.** CTX-04 keeps "the current new input": every request of a run carries the run's
  input text, whole, in a user (or tool) message. RUN-09 "nothing compacted is re-expanded":
  a tool record (an assistant message with tool calls, a tool message) once sent in another
  form than its first, or left out (summarised), is never sent in its first form again, nor
  stored so in the execution history. CTX-15 / RUN-11: a channel whose effective budget is 0
  or less is refused at configuration, or its run ends with a recorded reason (not
  `completed`) within a bounded number of timers.
* **Profile** (docs/runs.md, Compaction). The input as its own message (the answer to a
  request for input as the tool message answering it, the request beside it); the last 2 tool
  exchanges and everything after them as first sent (CTX-16); a call reporting `local` sends
  a tool record otherwise than the request before; the stored execution history starts with
  the last request sent; every completed call a summary took away named with its receipt id
  in the working memory (CTX-06); no summary of a working memory alone; an estimate exactly
  at 70% of the budget compacted and one token below not, and after local compaction exactly
  70% summarised and one below not (aimed with the profile's own estimate arithmetic); a
  budget not positive ends the run `context_uncompactable` with nothing sent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from arck.conformance import runoracle
from arck.conformance.checking import expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotApplicable, NotTestable
from arck.conformance.runworld import (
    PROMPT,
    TOOL,
    Agent,
    Channel,
    ChannelSpec,
    RunWorld,
    canonical,
    messages,
    world,
)
from arck.simulator.provider import RecordedRequest, Step, ToolCall, UsageDrift, script_tag

FUNDS = 10**12
SMALL = ChannelSpec(input_capacity=9_000, total_capacity=12_000, output_capacity=500)
THRESHOLD = Fraction(70, 100)  # CTX-04
PLACEHOLDER = '{"compacted":true'  # the profile's placeholders start so (canonical JSON)
WORKING_MEMORY = "arck_working_memory"  # the profile's working-memory message `name`
UNSTORED = (404, 405, 501)  # a target with no execution-history endpoint

Key = tuple[str, str]

# A run: its input's bytes, the result bytes of each tool exchange it makes (one call each),
# the bytes of each call's arguments (long enough that a placeholder would be shorter),
# whether it ends asking the user for input (the next run's input then answers that request),
# and whether its first call is detached after acceptance instead of answered (its outcome
# then unknown: a `reconciliation_required` receipt the engine makes, a fact like any other).
# Sizes come from a few classes, not any integer: a failure then shrinks in seconds (each
# input is a whole conversation), and the classes still cross 70% and 92% of the window with
# the input before, inside or after the last 2 exchanges.
RUN = st.tuples(st.sampled_from([40, 1_000, 3_000, 9_000, 18_000]),
                st.lists(st.sampled_from([200, 1_500, 3_000]), max_size=4),
                st.sampled_from([0, 200, 400]), st.booleans(), st.booleans())
CONVERSATIONS = st.lists(RUN, min_size=2, max_size=5)
# Local compaction with long arguments just before the kept tail; a run whose input (a user
# message, or the answer to a request for input) keeps it at 92% after local compaction, so
# it is summarised at every call, its input before the last 2 exchanges and at last only the
# first summary's working memory before the input; the same with the session's first input;
# text alone past the window, the newest input last; a detached call summarised away.
KEPT_EXAMPLES: tuple[list[tuple[int, list[int], int, bool, bool]], ...] = (
    [(3_000, [3_000, 3_000], 300, False, False), (3_000, [3_000, 3_000], 300, False, False),
     (9_000, [3_000, 3_000, 3_000, 3_000], 300, False, False)],
    [(2_000, [2_500] * 4, 200, False, False), (1_000, [2_500] * 4, 200, False, False),
     (18_000, [3_000] * 4, 200, False, False)],
    [(2_000, [2_500] * 4, 200, False, False), (1_000, [2_500] * 4, 200, True, False),
     (18_000, [3_000] * 4, 200, False, False)],
    [(18_000, [3_000] * 4, 200, False, False), (40, [], 0, False, False)],
    [(9_000, [], 0, False, False), (9_000, [], 0, False, False),
     (18_000, [], 0, False, False)],
    [(2_000, [2_500] * 4, 200, False, True), (1_000, [2_500] * 4, 200, False, False),
     (18_000, [3_000] * 4, 200, False, False)],
)
ENDS = frozenset({"completed", "input_required"})  # the script goes on after these


@property_check("CTX-04", "CTX-06", "CTX-07", "CTX-16", "RUN-09", cases=CONVERSATIONS,
                examples=KEPT_EXAMPLES, cap=15)
def test_compaction_keeps_input_tail_and_store(ctx: CheckContext, case: Any) -> None:
    """Runs of several tool exchanges on a small window: every request keeps its run's input;
    nothing compacted comes back, in a request or in the stored execution history; (profile)
    the last 2 exchanges as first sent, a reported local compaction in the request, the store
    as the last request, the facts of what a summary replaced in its working memory, no
    summary of a working memory alone."""
    profile = ctx.profile == "reference"
    w = world(ctx)
    steps: list[Step] = []
    for n, (_size, results, spare, asks, _detaches) in enumerate(case):
        steps += [Step(tool_calls=[ToolCall(name=TOOL, arguments=_arguments(n, j, spare))])
                  for j in range(len(results))]
        steps.append(Step(request_input="Which one?") if asks else Step(text="noted"))
    agent = w.agent(steps, channel=w.channel(SMALL), budget=4096)
    session = w.session(agent, w.wallet(FUNDS))
    kept = _Kept()
    answers = False  # whether this run's input answers the previous run's request for input
    for n, (size, results, _spare, asks, detaches) in enumerate(case):
        first = len(w.requests(agent))
        text = _input(n, size)
        run_id = str(w.start(session, text)["run_id"])
        detached = detaches and bool(results)
        facts = _detach_first(w, run_id, results) if detached else []
        snapshot = _drive(w, run_id, results, first=2 if detached else 1)
        run = _Run(text, answers, profile, _started(w, run_id),
                   {**_receipts(w, run_id), **dict(facts)},
                   f"run {n + 1} of {len(case)} (input {size:,} bytes" + (
                       ", answering a request for input" if answers else "") +
                   f", {len(results)} tool exchange(s)" + (
                       ", the first detached after acceptance" if facts else "") + ")")
        kept.receipts.update(run.receipts)
        sent = w.requests(agent)
        for number, request in enumerate(sent[first:], start=first + 1):
            _judge_request(kept, request, number, run)
        stored = _stored(w, session)
        if stored is not None:
            _judge_stored(kept, stored, sent[-1] if sent else None, snapshot, run)
        if profile:
            _judge_summaries(w, run)
        if snapshot.get("state") == "ended" and snapshot.get("end_reason") not in ENDS:
            break  # the script no longer follows the conversation
        answers = asks and snapshot.get("end_reason") == "input_required"


@dataclass(frozen=True)
class _Run:
    """What the judgements of one run need: its input, and what it reported."""

    text: str
    answers: bool  # the input answers a request for input
    profile: bool
    started: dict[str, dict[str, Any]]  # model_call.started figures by call id
    receipts: dict[str, str]  # tool_call_id → the receipt id of its completed call
    shown: str


def _receipts(w: RunWorld, run_id: str) -> dict[str, str]:
    """Each tool call of the run and the receipt `_drive` answered it with (in order)."""
    return {str(c.get("tool_call_id")): f"arck-r-{run_id}-{n}"
            for n, c in enumerate(w.tool_calls(run_id), start=1)}


def _started(w: RunWorld, run_id: str) -> dict[str, dict[str, Any]]:
    """The run's `model_call.started` figures by call id; none from a target without run
    events (RUN-15 is recommended: the core judgements need none of them)."""
    read = w.target.run_events(run_id)
    events = read.json_or_none() if 200 <= read.status < 300 else None
    found = events.get("events") if isinstance(events, dict) else None
    return {str(e["data"].get("call_id")): e["data"] for e in found or []
            if isinstance(e, dict) and e.get("type") == "model_call.started"
            and isinstance(e.get("data"), dict)}


def _drive(w: RunWorld, run_id: str, results: Sequence[int], first: int = 1
           ) -> dict[str, Any]:
    """Answer the run's tool calls from its `first`-th on, the n-th with a result of
    results[n - 1] bytes of rows and receipt `arck-r-<run>-<n>`."""

    def result(n: int) -> dict[str, Any]:
        size = results[min(n + first - 1, len(results)) - 1] if results else 0
        return {"status": "ok", "rows": "r" * size}

    def receipt(n: int) -> str:
        return f"arck-r-{run_id}-{n + first - 1}"

    return w.drive(run_id, result, receipt, rounds=len(results) + 2)


def _detach_first(w: RunWorld, run_id: str, results: Sequence[int]
                  ) -> list[tuple[str, str]]:
    """Accept the run's first tool call and detach it (docs/executors.md, Executor detach: its
    outcome unknown, the engine's receipt `detach:<claim_id>`): [(tool_call_id, receipt id)].
    A target without the detach step has the call answered as `_drive` would: []."""
    w.settle(run_id)
    pending = [c for c in w.tool_calls(run_id) if c.get("state") == "dispatchable"]
    if not pending:
        return []  # the run ended first (its input alone too large): nothing to detach
    call, tool_call_id = str(pending[0]["call_id"]), str(pending[0].get("tool_call_id"))
    claim = w.accept(call)
    detached = w.executors().detach(call, claim, w.executor())
    if detached.status in (404, 405, 501):
        w.ok(w.finish(call, claim, f"arck-r-{run_id}-1", {"status": "ok",
                                                         "rows": "r" * results[0]}),
             f"send the completed receipt of {call} (the target has no detach)")
        return []
    w.ok(detached, f"detach tool call {call} after its acceptance")
    return [(tool_call_id, f"detach:{claim}")]


def _arguments(run: int, exchange: int, size: int) -> dict[str, Any]:
    return {"q": f"run {run} page {exchange}", "note": "n" * size}


def _input(run: int, size: int) -> str:
    """A run's input: unique, so an earlier run's input never stands in for it."""
    head = f"input of run {run + 1}: "
    return head + "tell me more " * max(0, (size - len(head)) // 13)


def _key(message: Any) -> Key | None:
    """A tool record's identity across requests: a tool message by its tool_call_id, an
    assistant message with tool calls by their ids; None for anything else."""
    if not isinstance(message, dict):
        return None
    if message.get("role") == "tool" and isinstance(message.get("tool_call_id"), str):
        return "tool", str(message["tool_call_id"])
    calls = message.get("tool_calls")
    if message.get("role") == "assistant" and isinstance(calls, list) and calls:
        return "call", ",".join(str(c.get("id")) if isinstance(c, dict) else "?" for c in calls)
    return None


@dataclass
class _Kept:
    """Each tool record as first sent, and when it was first sent otherwise or left out."""

    first: dict[Key, str] = field(default_factory=dict)
    changed: dict[Key, int] = field(default_factory=dict)  # key → request that compacted it
    gone: dict[Key, int] = field(default_factory=dict)  # key → request that left it out
    previous: set[Key] = field(default_factory=set)  # the keys of the last request
    last: dict[Key, str] = field(default_factory=dict)  # each record as last sent
    receipts: dict[str, str] = field(default_factory=dict)  # tool_call_id → receipt id

    def forgotten(self, found: Sequence[Any]) -> list[str]:
        """Profile: completed calls summarised away that no working memory of `found` names
        (its tool_call_id and receipt id: the facts the engine carries over)."""
        memory = " ".join(str(m.get("content")) for m in found if isinstance(m, dict)
                          and m.get("role") == "user" and m.get("name") == WORKING_MEMORY)
        return [f"{call} (receipt {receipt}), left out since request {self.gone[key]}"
                for key in self.gone if key[0] == "tool"
                and (receipt := self.receipts.get(call := key[1])) is not None
                and not (call in memory and receipt in memory)]

    def rewritten(self, found: Sequence[Any]) -> bool:
        """Whether a record of `found` is sent otherwise than it was last sent."""
        return any(key in self.last and canonical(m) != self.last[key]
                   for m in found if (key := _key(m)) is not None)

    def expanded(self, found: Sequence[Any]) -> list[str]:
        """The records of `found` that come back after they were compacted or left out."""
        back = []
        for message in found:
            key = _key(message)
            if key is None:
                continue
            if key in self.gone:
                back.append(f"{key[0]} {key[1]}, left out since request {self.gone[key]}, is "
                            f"back: {canonical(message)[:160]}")
            elif key in self.changed and canonical(message) == self.first[key]:
                back.append(f"{key[0]} {key[1]}, sent compacted in request "
                            f"{self.changed[key]}, is back whole: {canonical(message)[:160]}")
        return back

    def observe(self, found: Sequence[Any], number: int) -> None:
        keys = set()
        for message in found:
            key = _key(message)
            if key is None:
                continue
            keys.add(key)
            text = canonical(message)
            self.last[key] = text
            if key not in self.first:
                self.first[key] = text
            elif text != self.first[key]:
                self.changed.setdefault(key, number)
        for key in self.previous - keys:
            self.gone.setdefault(key, number)
        self.previous = keys


def _judge_request(kept: _Kept, request: RecordedRequest, number: int, run: _Run) -> None:
    found = messages(request)
    call_id = dict(request.headers).get("idempotency-key", "")
    decision = (run.started.get(call_id, {}).get("compaction") or {}).get("decision", "?")
    where = f"request {number} ({run.shown}; model call {call_id or '?'}, compaction " \
            f"decision {decision!r})"
    hint = "Replay the case with `arck replay` and compare this request with the one before."
    form = ("the tool message answering the request for input, beside the assistant message "
            "that asked it (profile)" if run.answers else
            'its own message {"role": "user", "content": input} (profile)') if run.profile \
        else "a user or tool message: a summary keeps the current new input"
    expect(_carries(found, run.text, run.profile, run.answers), "CTX-04",
           f"{where} carries the run's input ({len(run.text.encode()):,} bytes, "
           f"{run.text[:40]!r}...) whole in {form}",
           lambda: "no such message; its user and tool messages: " + ("; ".join(
               canonical(m)[:120] for m in found
               if isinstance(m, dict) and m.get("role") in ("user", "tool")) or "none"),
           hint=hint)
    if run.profile:
        changed = _tail_changed(found, kept)
        expect(not changed, ("CTX-16", "CTX-04"),
               f"{where}: the last 2 tool exchanges and everything after them as first sent "
               "(profile: a summary, and local compaction, keep them in full)",
               lambda: "; ".join(changed), hint=hint)
        expect(decision != "local" or kept.rewritten(found), ("CTX-07", "CTX-04"),
               f"{where}: a request reporting a local compaction sends it: a tool record "
               "of the request before in its compacted form (profile: placeholders are "
               "made only where they change something)",
               "every tool record as the request before sent it", hint=hint)
    back = kept.expanded(found)
    expect(not back, ("RUN-09", "CTX-07"),
           f"{where}: nothing compacted is re-expanded (a tool record once sent compacted or "
           "summarised away never comes back whole)", lambda: "; ".join(back[:3]), hint=hint)
    kept.observe(found, number)
    if run.profile:
        forgotten = kept.forgotten(found)
        expect(not forgotten, ("CTX-06", "CTX-04"),
               f"{where}: every completed call a summary took away named, with its receipt "
               "id, in the working memory (profile: the facts the engine carries over, never "
               "the model's retelling)", lambda: "; ".join(forgotten[:3]), hint=hint)


def _carries(found: Sequence[Any], text: str, exact: bool, answers: bool) -> bool:
    """A message holding the run's input `text`. Profile (`exact`): a user message of it
    alone, or (`answers`) the tool message answering a request for input with the assistant
    message that asked it. Elsewhere a user or tool message with `text` anywhere in its text
    (a string content or text parts)."""
    asked = {str(c.get("id")) for m in found if isinstance(m, dict)
             for c in (m.get("tool_calls") or []) if isinstance(c, dict)}
    for message in found:
        if not isinstance(message, dict) or message.get("role") not in ("user", "tool"):
            continue
        if exact and answers:
            call = message.get("tool_call_id")
            if canonical(message) == canonical({"role": "tool", "tool_call_id": call,
                                                "content": text}) and str(call) in asked:
                return True
            continue
        if exact:
            if canonical(message) == canonical({"role": "user", "content": text}):
                return True
            continue
        content = message.get("content")
        parts = [content] if isinstance(content, str) else [
            p.get("text") for p in content if isinstance(p, dict)] if isinstance(
                content, list) else []
        if any(isinstance(p, str) and text in p for p in parts):
            return True
    return False


def _tail_changed(found: Sequence[Any], kept: _Kept) -> list[str]:
    """Profile, CTX-16: the records from the second-last tool exchange on that differ from how
    they were first sent."""
    starts = [i for i, m in enumerate(found) if (_key(m) or ("",))[0] == "call"]
    if not starts:
        return []
    changed = []
    for message in found[starts[-2:][0]:]:
        key = _key(message)
        first = kept.first.get(key) if key is not None else None
        if key is not None and first is not None and canonical(message) != first:
            changed.append(f"{key[0]} {key[1]} first sent as {first[:160]}, now "
                           f"{canonical(message)[:160]}")
    return changed


def _stored(w: RunWorld, session: str) -> list[Any] | None:
    """The session's execution history, or None when the target has no such endpoint."""
    read = w.target.history(session, "execution")
    if read.status in UNSTORED:
        return None
    items = w.ok(read, "read the execution history").get("items")
    if not isinstance(items, list):
        raise NotTestable("the execution history is not a list", exchange=read)
    return items


def _judge_stored(
    kept: _Kept, stored: list[Any], last: RecordedRequest | None, snapshot: dict[str, Any],
    run: _Run,
) -> None:
    """RUN-09, CTX-07: the store holds the compacted form (what the next call reuses)."""
    hint = "Replay the case with `arck replay`, then read GET /v1/sessions/{id}/" \
           "execution-history beside the last request."
    back = kept.expanded(stored)
    expect(not back, ("RUN-09", "CTX-07"),
           f"after {run.shown}: the stored execution history holds what was compacted in its "
           "compacted form (nothing compacted is re-expanded for the next call)",
           lambda: "; ".join(back[:3]), hint=hint)
    settled = snapshot.get("state") == "waiting_tools" or snapshot.get("end_reason") in ENDS
    if not run.profile or last is None or not settled:
        return
    sent = messages(last)
    same = [canonical(m) for m in stored[:len(sent)]] == [canonical(m) for m in sent]
    expect(same, ("CTX-07", "RUN-09"),
           f"after {run.shown}: the stored execution history starts with the {len(sent)} "
           "messages of the last request sent (profile: it is what the next model call sends)",
           lambda: _first_difference(sent, stored), hint=hint)


def _first_difference(sent: Sequence[Any], stored: Sequence[Any]) -> str:
    for i, message in enumerate(sent):
        if i >= len(stored) or canonical(stored[i]) != canonical(message):
            now = canonical(stored[i])[:200] if i < len(stored) else "nothing"
            return f"message {i} sent as {canonical(message)[:200]}, stored as {now}"
    return "no difference"


def _judge_summaries(w: RunWorld, run: _Run) -> None:
    """Profile: a summary's stretch is never a working memory alone (docs/runs.md: "a
    stretch of that message alone is none"), read from the summary request's listed lines."""
    for call_id, figures in run.started.items():
        if figures.get("purpose") != "summary":
            continue
        listed = _summarized(w, call_id)
        alone = bool(listed) and all(
            isinstance(m, dict) and m.get("name") == WORKING_MEMORY for m in listed)
        expect(not alone, "CTX-04",
               f"{run.shown}: summary call {call_id} condenses history, not only the previous "
               "working memory (profile: a stretch of that message alone is none)",
               f"its stretch {figures.get('stretch')} lists only {canonical(listed)[:300]}",
               hint="Replay the case with `arck replay`; the summary request is the "
                    "provider's record of that call's Idempotency-Key.")


def _summarized(w: RunWorld, call_id: str) -> list[Any]:
    """The messages a profile summary request lists, one canonical JSON line each."""
    for record in w.provider.lookup_key(call_id):
        recorded = w.provider.recorded_request(record.id)
        found = messages(recorded) if recorded is not None else []
        content = found[-1].get("content") if found and isinstance(found[-1], dict) else None
        if isinstance(content, str):
            listed = []
            for line in content.split("\n")[1:]:
                try:
                    listed.append(json.loads(line))
                except ValueError:
                    listed.append(line)
            return listed
    return []


# -- the 70% boundary (profile) -----------------------------------------------------------

# Earlier runs (input bytes, result bytes of each exchange), with 3 exchanges at least so an
# old tool record lies before the kept tail; the drift keeps c below 1, so every estimate
# from there up is reachable by adding input bytes. Which estimate lands: the request's own
# (`before`: local compaction or not) or the one after local compaction (`local`: a summary
# or not), at ⌈70% × budget⌉ or one token below.
PREFIX = st.lists(st.tuples(st.integers(min_value=20, max_value=400),
                            st.lists(st.integers(min_value=300, max_value=1_500), min_size=1,
                                     max_size=3)),
                  min_size=1, max_size=3).filter(lambda p: sum(len(r) for _, r in p) >= 3)
SIDES = ("at", "below", "at after local", "below after local")
BOUNDARY = st.tuples(st.sampled_from(SIDES), st.sampled_from([0.5, 0.75]), PREFIX)
BOUNDARY_EXAMPLES = (("at", 0.5, [(100, [800, 800, 800])]),
                     ("below", 0.75, [(100, [800, 800]), (50, [500])]),
                     ("at after local", 0.5, [(100, [800, 800, 800])]),
                     ("below after local", 0.75, [(100, [800, 800]), (50, [500])]))
RESULT_STATUS = "ok"  # the top-level status of every result `_drive` sends


@property_check("CTX-04", "CTX-03", cases=BOUNDARY, examples=BOUNDARY_EXAMPLES, cap=12)
def test_compaction_from_exactly_70_percent(ctx: CheckContext, case: Any) -> None:
    """Profile: "at ≥ 70%" includes 70%. A request estimated exactly at 70% of the effective
    budget is compacted, one token below it is not; after local compaction, exactly 70% left
    asks for a summary, one token below does not. Earlier runs set the history; the last
    run's input is sized with the profile's arithmetic (CTX-13/16, the placeholders of
    docs/runs.md) from the figures the calls reported, so the estimate lands there."""
    if ctx.profile != "reference":
        raise NotApplicable("the exact 70% threshold is judged against the reference "
                            "profile's own estimate arithmetic")
    side, drift, prefix = case
    w = world(ctx)
    edged = _Edged.of(w, drift, prefix, [Step(text="done")])
    stored = w.history(edged.session, "execution")
    sent = w.requests(edged.agent)
    if not edged.samples or not sent or not _compactable(stored):
        raise NotTestable(f"not testable: the earlier runs left no answered model call or no "
                          f"old tool record to compact ({len(sent)} request(s))")
    budget = edged.budget
    target = math.ceil(THRESHOLD * budget)
    after = side.endswith("after local")
    edge = _Edge(stored, _tools(sent[-1]), edged.samples, edged.receipts if after else None)
    aimed = edge.aim(target)
    if aimed is None:
        raise NotTestable(f"not testable: no input lands the estimate on {target}")
    length = aimed if side.startswith("at") else aimed - 1
    run_id = str(w.start(edged.session, "e" * length)["run_id"])
    w.settle(run_id)
    events = w.events(run_id)
    first, before, reported, decision = _first_decision(w, run_id, events)
    compaction = first.get("compaction") or {}
    local = [e.get("data", {}) for e in events if e.get("type") == "compaction.applied"
             and e.get("data", {}).get("kind") == "local"][:1]
    shown = f"aimed at {edge.estimate(length)} with an input of {length:,} bytes " \
            f"({side}; {len(prefix)} earlier run(s), drift × {drift})"
    hint = "Replay the case with `arck replay`; the run's model_call.started and " \
           "compaction.applied events hold the figures."
    if Fraction(before, reported) >= THRESHOLD:
        expect(decision != "none", ("CTX-04", "CTX-03"),
               f"a compaction at estimate {before} of budget {reported} ({shown}): at ≥ 70% "
               "of the budget an old tool record is compacted locally (70% itself included)",
               f"decision {decision!r}, reason {compaction.get('reason')!r}", hint=hint)
    else:
        expect(decision == "none", ("CTX-04", "CTX-03"),
               f"no compaction at estimate {before} of budget {reported} ({shown}): below 70%",
               f"decision {decision!r}", hint=hint)
    left = local[0].get("estimate_after") if local else None
    if not after or not isinstance(left, int):
        return
    expect(left == edge.estimate(length), ("CTX-04", "CTX-03"),
           f"local compaction leaving the estimate the profile's placeholders give, "
           f"{edge.estimate(length)} ({shown}: before the kept tail every completed call's "
           "tool message and arguments replaced where shorter, nothing else)",
           f"estimate_after {left}", hint=hint)
    summary = "summary" in decision
    expect(summary == (Fraction(left, reported) >= THRESHOLD), ("CTX-04", "CTX-03"),
           f"after local compaction to {left} of budget {reported} ({shown}): a summary only "
           "if still at ≥ 70% (70% itself included; the first summary, so no spacing)",
           f"decision {decision!r}, reason {compaction.get('reason')!r}", hint=hint)


def _first_decision(w: RunWorld, run_id: str, events: list[dict[str, Any]]
                    ) -> tuple[dict[str, Any], int, int, str]:
    """The run's first main call: its figures, estimate_before, effective_budget, decision."""
    first = next((e.get("data", {}) for e in events if e.get("type") == "model_call.started"
                  and e.get("data", {}).get("purpose", "main") == "main"), None)
    if first is None:
        raise NotTestable(f"not testable: the run made no main call: {w.snapshot(run_id)}")
    compaction = first.get("compaction") or {}
    before, reported = compaction.get("estimate_before"), first.get("effective_budget")
    if not isinstance(before, int) or not isinstance(reported, int) or reported <= 0:
        raise NotTestable(f"not testable: no estimate_before / effective_budget in {first}")
    return first, before, reported, str(compaction.get("decision"))


@dataclass
class _Edged:
    """A session on SMALL whose earlier runs (`prefix`) set the history and the calibration
    samples (every call's usage drifted by `drift`, so c stays below 1 and every estimate
    from there up is reachable by adding input bytes); its script goes on with `tail`."""

    agent: Agent
    session: str
    samples: list[tuple[int, int]]
    receipts: dict[str, str]
    budget: int

    @classmethod
    def of(cls, w: RunWorld, drift: float, prefix: Sequence[tuple[int, Sequence[int]]],
           tail: Sequence[Step]) -> _Edged:
        channel = w.channel(ChannelSpec(model=w.ctx.name("edge-model"),
                                        input_capacity=SMALL.input_capacity,
                                        total_capacity=SMALL.total_capacity,
                                        output_capacity=SMALL.output_capacity))
        faults = [UsageDrift(factor=drift)]
        steps: list[Step] = []
        for n, (_size, results) in enumerate(prefix):
            steps += [Step(tool_calls=[ToolCall(name=TOOL, arguments=_arguments(n, j, 60))],
                           faults=faults) for j in range(len(results))]
            steps.append(Step(text="noted", faults=faults))
        steps += [step.model_copy(update={"faults": faults}) for step in tail]
        agent = w.agent(steps, channel=channel, budget=4096)
        edged = cls(agent, w.session(agent, w.wallet(FUNDS)), [], {},
                    runoracle.effective_budget(None, SMALL.input_capacity,
                                               SMALL.total_capacity, SMALL.output_capacity))
        for n, (size, results) in enumerate(prefix):
            edged.drive(w, str(w.start(edged.session, _input(n, size))["run_id"]), results)
        return edged

    def drive(self, w: RunWorld, run_id: str, results: Sequence[int]) -> None:
        """Drive a run of the session to its end, keeping its samples and receipts."""
        _drive(w, run_id, results)
        self.samples += _samples(w, run_id)
        self.receipts.update(_receipts(w, run_id))

    def landing(self, w: RunWorld, target: int) -> int:
        """The length of an input whose estimate after local compaction is `target` (or the
        first reachable estimate up to 1% above it), by the profile's arithmetic."""
        sent = w.requests(self.agent)
        edge = _Edge(w.history(self.session, "execution"), _tools(sent[-1]) if sent else None,
                     self.samples, self.receipts)
        for aim in range(target, target + max(2, self.budget // 100)):
            found = edge.aim(aim)
            if found is not None:
                return found
        raise NotTestable(f"not testable: no input lands the estimate near {target}")


# -- the 92% bypass of the summary spacing (profile) --------------------------------------

BYPASS = Fraction(92, 100)  # CTX-05
OPENED = Fraction(80, 100)  # where a summary is sure (first summary: no spacing yet)
SPACING_CALLS = 4  # CTX-05: main calls completed after a summary before the next may come
# The tool exchanges of the run a summary opens: 2 leave 3 main calls after it (the spacing in
# force), 3 leave exactly 4 (the spacing over: a summary due at 70%, whatever the 92% says).
SPACED_RESULTS = {2: (400, 400), 3: (400, 400, 400)}
SPACING = st.tuples(st.sampled_from(("at", "below")), st.sampled_from([0.5, 0.75]), PREFIX,
                    st.sampled_from(sorted(SPACED_RESULTS)))
SPACING_EXAMPLES = (("at", 0.5, [(100, [800, 800, 800])], 2),
                    ("below", 0.75, [(100, [800, 800]), (50, [500])], 2),
                    ("below", 0.5, [(100, [800, 800])], 3))


@property_check("CTX-05", "CTX-04", cases=SPACING, examples=SPACING_EXAMPLES, cap=8)
def test_summary_spacing_skipped_from_exactly_92_percent(ctx: CheckContext, case: Any) -> None:
    """Profile: the spacing is skipped "at ≥ 92%", measured after local compaction, 92%
    included. Three main calls after a summary (spacing in force), a request left exactly at
    92% of the effective budget after local compaction is summarised; one token below it is
    not (CTX-05: within the spacing and below 92%, no summary). Four main calls after it (the
    spacing over), one token below 92% is summarised too (still at ≥ 70%: compaction due, and
    a summary the only step left). Earlier runs set the history, a run whose input is aimed at
    80% opens with the first summary and makes 2 or 3 tool exchanges, then the last run's
    input is sized with the profile's arithmetic."""
    if ctx.profile != "reference":
        raise NotApplicable("the exact 92% bypass is judged against the reference profile's "
                            "own estimate arithmetic")
    side, drift, prefix, exchanges = case
    spaced = SPACED_RESULTS[exchanges]
    w = world(ctx)
    tail = [Step(tool_calls=[ToolCall(name=TOOL, arguments=_arguments(99, j, 60))])
            for j in range(len(spaced))] + [Step(text="noted"), Step(text="done")]
    edged = _Edged.of(w, drift, prefix, tail)
    opened = str(w.start(edged.session, "s" * edged.landing(
        w, math.ceil(OPENED * edged.budget)))["run_id"])
    edged.drive(w, opened, spaced)
    events = w.events(opened)
    _, _, _, decision = _first_decision(w, opened, events)
    main = [e for e in events if e.get("type") == "model_call.started"
            and e.get("data", {}).get("purpose", "main") == "main"]
    ended = w.snapshot(opened).get("end_reason")
    if "summary" not in decision or len(main) != len(tail) - 1 or ended != "completed":
        raise NotTestable(f"not testable: the run aimed at 80% did not open with a summary "
                          f"and complete after {len(tail) - 1} main calls (decision "
                          f"{decision!r}, {len(main)} main calls, end {ended!r})")
    target = math.ceil(BYPASS * edged.budget)
    length = edged.landing(w, target) - (0 if side == "at" else 1)
    run_id = str(w.start(edged.session, "e" * length)["run_id"])
    w.settle(run_id)
    events = w.events(run_id)
    first, before, reported, decision = _first_decision(w, run_id, events)
    reason = (first.get("compaction") or {}).get("reason")
    local = [e.get("data", {}).get("estimate_after") for e in events
             if e.get("type") == "compaction.applied"
             and e.get("data", {}).get("kind") == "local"][:1]
    left = local[0] if local and isinstance(local[0], int) else before
    shown = f"estimate {left} of budget {reported} after local compaction, aimed at " \
            f"{side} {target} with an input of {length:,} bytes ({len(main)} main calls " \
            f"after the last summary; {len(prefix)} earlier run(s), drift × {drift})"
    hint = "Replay the case with `arck replay`; the run's model_call.started and " \
           "compaction.applied events hold the figures."
    if Fraction(left, reported) >= BYPASS:
        expect("summary" in decision, "CTX-05", f"a summary at {shown}: at ≥ 92% the spacing "
               "is skipped (92% itself included; the profile's choice)",
               f"decision {decision!r}, reason {reason!r}", hint=hint)
    elif len(main) >= SPACING_CALLS:
        expect("summary" in decision, "CTX-05", f"a summary at {shown}: the spacing is over "
               f"after {SPACING_CALLS} main calls, and at ≥ 70% a compaction is due (the "
               "profile's)", f"decision {decision!r}, reason {reason!r}", hint=hint)
    else:
        expect("summary" not in decision, "CTX-05", f"no summary at {shown}: below 92% and "
               "within the spacing (4 main calls after a summary before the next)",
               f"decision {decision!r}, reason {reason!r}", hint=hint)


@dataclass(frozen=True)
class _Edge:
    """The profile's estimate of the stored history plus a new input of some length: of the
    request itself, or (with `receipts`) of the request after local compaction."""

    stored: list[Any]
    tools: Any
    samples: list[tuple[int, int]]
    receipts: dict[str, str] | None

    def estimate(self, length: int) -> int:
        """raw = ⌈bytes / 4⌉ + 3 × messages (CTX-13), then last real + ⌈c × (raw − last
        raw)⌉ with c over the last 8 samples (CTX-08, CTX-16)."""
        request = [*self.stored, {"role": "user", "content": "e" * length}]
        if self.receipts is not None:
            request = _locally(request, self.receipts)
        size = sum(len(canonical(m).encode()) for m in request)
        size += len(canonical(self.tools).encode()) if self.tools else 0
        raw = -(-size // 4) + 3 * len(request)
        c = runoracle.coefficient(self.samples)
        last_raw, last_real = self.samples[-1]
        return last_real + math.ceil(c * (raw - last_raw))

    def aim(self, target: int) -> int | None:
        """The shortest input (2 bytes or more) whose estimate is `target` exactly, or None."""
        low, high = 1, 400_000
        if self.estimate(high) < target:
            return None
        while low < high:
            middle = (low + high) // 2
            if self.estimate(middle) >= target:
                high = middle
            else:
                low = middle + 1
        return low if self.estimate(low) == target and low > 1 else None


def _locally(found: list[Any], receipts: dict[str, str]) -> list[Any]:
    """Profile (docs/runs.md, Local compaction): before the last 2 tool exchanges, each
    completed call's tool message and arguments become a placeholder where it is shorter."""
    starts = [i for i, m in enumerate(found) if (_key(m) or ("",))[0] == "call"]
    end = starts[-2:][0] if starts else len(found)
    out = []
    for i, message in enumerate(found):
        if i < end and message.get("role") == "tool" and \
                str(message.get("tool_call_id")) in receipts:
            fact = {"receipt_id": receipts[str(message["tool_call_id"])],
                    "status": RESULT_STATUS}
            message = {**message, "content": _placeholder(str(message["content"]), fact)}
        elif i < end and _key(message) is not None and message.get("role") == "assistant":
            calls = [{**c, "function": {**c["function"], "arguments": _placeholder(
                        str(c["function"]["arguments"]), {})}}
                     if str(c.get("id")) in receipts else c for c in message["tool_calls"]]
            message = {**message, "tool_calls": calls}
        out.append(message)
    return out


def _placeholder(original: str, fact: dict[str, Any]) -> str:
    """`original`, or its placeholder when that is shorter (never a placeholder's own)."""
    if original.startswith(PLACEHOLDER):
        return original
    text = canonical({"compacted": True, "original_bytes": len(original.encode()), **fact})
    return text if len(text.encode()) < len(original.encode()) else original


def _samples(w: RunWorld, run_id: str) -> list[tuple[int, int]]:
    """(raw estimate reported, prompt tokens the provider reported) of the run's main calls."""
    found = []
    for figures in w.of_type(run_id, "model_call.started"):
        if figures.get("purpose", "main") != "main":
            continue
        raw = figures.get("raw_estimate")
        for record in w.provider.lookup_key(str(figures.get("call_id"))):
            if record.usage is not None and isinstance(raw, int):
                found.append((raw, int(record.usage["prompt_tokens"])))
    return found


def _tools(request: RecordedRequest) -> Any:
    try:
        body = json.loads(request.body)
    except ValueError:
        return None
    return body.get("tools") if isinstance(body, dict) else None


def _compactable(stored: Sequence[Any]) -> bool:
    """Profile: a tool message before the last 2 exchanges that a placeholder would shorten."""
    starts = [i for i, m in enumerate(stored) if (_key(m) or ("",))[0] == "call"]
    if len(starts) < 3:
        return False
    return any(isinstance(m, dict) and m.get("role") == "tool"
               and isinstance(m.get("content"), str) and len(m["content"]) >= 200
               and not m["content"].startswith(PLACEHOLDER) for m in stored[:starts[-2]])


# -- a budget of 0 or less (CTX-15, RUN-11) -----------------------------------------------

# (input capacity, total capacity, output capacity) whose effective budget is 0 or less:
# the input capacity, or total − output, at 2,000 tokens or fewer.
NOT_POSITIVE = st.one_of(
    st.tuples(st.integers(min_value=1, max_value=2_000), st.just(12_000),
              st.integers(min_value=1, max_value=4_000)),
    st.integers(min_value=1, max_value=2_000).flatmap(
        lambda room: st.integers(min_value=room + 1, max_value=room + 60_000).map(
            lambda total: (9_000, total, total - room))),
)
NOT_POSITIVE_EXAMPLES = ((2_000, 12_000, 500), (9_000, 2_500, 500), (1, 12_000, 500))


@property_check("CTX-15", "RUN-11", "CTX-01", cases=NOT_POSITIVE,
                examples=NOT_POSITIVE_EXAMPLES, cap=8)
def test_budget_not_positive_never_loops(ctx: CheckContext, case: Any) -> None:
    """A channel whose effective budget is 0 or negative: refused at configuration, or the run
    ends with its reason recorded within a bounded number of timers, never completed, never
    hung (profile: `context_uncompactable`, nothing sent to the model)."""
    capacity, total, output = case
    w = world(ctx)
    spec = ChannelSpec(model=ctx.name("tight-model"), input_capacity=capacity,
                       total_capacity=total, output_capacity=output)
    budget = runoracle.effective_budget(None, capacity, total, output)
    shown = f"a channel of input {capacity:,}, total {total:,}, output {output:,} tokens " \
            f"(effective budget {budget:,})"
    created = w.target.create_channel(spec.body(ctx.name("channel")))
    if 400 <= created.status < 500:
        return  # refused at configuration: allowed (CTX-02 "fails clearly")
    channel = Channel(str(w.ok(created, "create a channel").get("channel_id")), spec)
    agent = _agent_or_refused(w, channel)
    if agent is None:
        return  # the version naming it refused: allowed
    session = w.target.create_session({"agent_version": agent.agent_version,
                                       "wallet_id": w.wallet(FUNDS)})
    if 400 <= session.status < 500:
        return
    session_id = str(w.ok(session, "create a session").get("session_id"))
    created_run = w.target.create_run(session_id, {"input": "Hello"})
    if 400 <= created_run.status < 500:
        return
    run_id = str(w.ok(created_run, "create a run").get("run_id"))
    snapshot, timers = w.settle(run_id)
    if snapshot.get("state") != "ended":
        w.target.cancel_run(run_id)  # a looping run must not keep later checks from idling
    reason = snapshot.get("end_reason")
    expect(snapshot.get("state") == "ended" and isinstance(reason, str) and bool(reason)
           and reason != "completed", ("CTX-15", "RUN-11"),
           f"on {shown}: the run ends with its reason recorded (never completed, never "
           "looping) within a bounded number of timers",
           f"after {timers} timer(s): {canonical(snapshot)[:300]}",
           hint="Replay the case with `arck replay`; a run still active after it moved "
                "through every timer loops or hangs.")
    if ctx.profile != "reference":
        return
    expect(reason == "context_uncompactable", "CTX-15",
           f"on {shown}: end reason context_uncompactable (profile)", str(reason))
    sent = w.requests(agent)
    expect(not sent, ("CTX-15", "CTX-01"),
           f"on {shown}: nothing sent to the model (profile: checked before anything is "
           "reserved)", f"{len(sent)} request(s)")


def _agent_or_refused(w: RunWorld, channel: Channel) -> Agent | None:
    """A version on `channel`, or None when the target refuses it (4xx) for its budget."""
    script = w.ctx.name("script")
    w.provider.add_script(script, [Step(text="never")])
    tools = w.target.publish_tool_set({"name": w.ctx.name("tools"),
                                       "tools": [{**w.ctx.tool(1024), "name": TOOL}]})
    prompt = f"{PROMPT} {script_tag(script)}"
    published = w.target.publish_agent_version(w.ctx.agent_id, {
        "tool_set_id": str(w.ok(tools, "publish a tool set").get("tool_set_id")),
        "system_prompt": prompt, "channel_id": channel.channel_id})
    if 400 <= published.status < 500:
        return None
    version = str(w.ok(published, "publish an agent version").get("agent_version"))
    return Agent(version, script, prompt, TOOL, channel, None)
