"""Formal compaction against the simulated provider, in-process on one virtual clock.

A channel with a small input capacity (8,000 tokens: an effective budget of 6,000) and tool
results of a few KB reach the thresholds in a few turns (docs/runs.md "Compaction").
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from fractions import Fraction
from typing import Any

import httpx
import runkit
from runkit import PRICES, App, answer, event_list, of, one_app, run, settled

from arck.reference.runtime import compaction
from arck.reference.runtime.compaction import SUMMARY_PROMPT, WORKING_MEMORY
from arck.simulator.clock import VirtualClock
from arck.simulator.provider import (
    ContextLengthExceeded,
    SimulatedProvider,
    Step,
    ToolCall,
)

SMALL = {"name": "small", "model": "sim-1", "input_capacity": 8_000, "total_capacity": 12_000,
         "output_capacity": 1_000, "timeout_ms": 30_000, "prices": PRICES}
BUDGET = 8_000 - 2_000
RESERVATION = math.ceil((8_000 * 2_000_000 + 1_000 * 8_000_000) / 1_000_000)

# A session on the small channel, whose lookups keep 16 KB in context.
session = functools.partial(runkit.session, channel=SMALL, budget=16_384,
                            prompt="You help with orders.", funds=100 * RESERVATION)


def lookups(n: int, end: str = "Done.") -> list[Step]:
    return [*(Step(tool_calls=[ToolCall(name="lookup", arguments={"id": i, "pad": "a" * 200})])
              for i in range(n)), Step(text=end)]


def result(i: int, size: int = 3_000) -> dict[str, Any]:
    return {"id": i, "status": "shipped" if i % 2 else "open", "notes": "n" * size}


async def drive(
    client: httpx.AsyncClient, clock: VirtualClock, session_id: str, text: str,
    size: int = 3_000,
) -> tuple[str, list[Any]]:
    """One run: answer every tool call with a receipt of `size` notes until the run ends."""
    r = await run(client, session_id, text)
    receipts = 0
    while (snapshot := await settled(client, clock, r["run_id"]))["state"] == "waiting_tools":
        calls = (await client.get(f"/v1/runs/{r['run_id']}/tool-calls")).json()["tool_calls"]
        for call in calls:
            if call["state"] == "dispatchable":
                receipts += 1
                await answer(client, call, result(receipts, size),
                             receipt_id=f"rc-{session_id[-2:]}-{receipts}")
    return snapshot["end_reason"], await event_list(client, r["run_id"])


async def text_run(
    client: httpx.AsyncClient, clock: VirtualClock, session_id: str, size: int
) -> tuple[str, list[Any]]:
    r = await run(client, session_id, "w" * size)
    snapshot = await settled(client, clock, r["run_id"])
    return snapshot["end_reason"], await event_list(client, r["run_id"])


async def items(client: httpx.AsyncClient, session_id: str, kind: str) -> list[Any]:
    path = f"/v1/sessions/{session_id}/{kind}"
    return list((await client.get(path)).json()["items"])


def main_started(events: list[Any]) -> list[Any]:
    return [e for e in of(events, "model_call.started") if e["purpose"] == "main"]


def ratio(event: dict[str, Any]) -> Fraction:
    return Fraction(event["compaction"]["ratio_before"])


def appends_between_compactions(provider: SimulatedProvider, compactions: int) -> None:
    """RUN-08/CTX-07: each main request extends the previous one byte for byte, except the
    first request after each rewrite; that one is the compacted history plus new items."""
    sent = [r for r in provider.recorded() if r.conversation == "s"]
    rewritten = 0
    for before, after in itertools.pairwise(sent):
        previous = json.loads(before.body)["messages"]
        if after.messages_common == len(previous):
            assert after.body.startswith(before.body[:-2])
        else:
            rewritten += 1
    assert rewritten == compactions


class SummaryText(httpx.AsyncBaseTransport):
    """The provider's transport, with the text of every summary answer replaced."""

    def __init__(self, provider: SimulatedProvider, text: str) -> None:
        self.inner = provider.async_transport()
        self.text = text

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if SUMMARY_PROMPT not in request.content.decode():
            return response
        body = json.loads(await response.aread())
        body["choices"][0]["message"]["content"] = self.text
        return httpx.Response(response.status_code, json=body)


def test_local_compaction_first_keeps_facts_and_the_last_two_exchanges() -> None:
    async def test(world: App) -> None:
        client, provider, clock, runs = world
        provider.add_script("s", lookups(8))
        s = await session(client, "s")
        reason, events = await drive(client, clock, s["session_id"], "Check my orders")
        assert reason == "completed"
        assert all(e["purpose"] == "main" for e in of(events, "model_call.started"))
        started = main_started(events)
        applied = of(events, "compaction.applied")
        assert [a["kind"] for a in applied] == ["local", "local"]
        local = [e for e in started if e["compaction"]["decision"] == "local"]
        assert len(local) == 2
        for event, rewrite in zip(local, applied, strict=True):
            assert ratio(event) >= Fraction(7, 10)
            assert event["compaction"]["estimate_before"] == rewrite["estimate_before"]
            assert event["calibrated_estimate"] == rewrite["estimate_after"]
            assert rewrite["estimate_after"] < Fraction(7, 10) * BUDGET
            assert rewrite["messages_before"] == rewrite["messages_after"]
        for event in started:
            if event["compaction"]["decision"] == "none":
                assert ratio(event) < Fraction(7, 10)
        history = await items(client, s["session_id"], "execution-history")
        tools = [m for m in history if m["role"] == "tool"]
        calls = [m for m in history if m.get("tool_calls")]
        assert len(tools) == len(calls) == 8
        # Compacted at calls 6 and 8 (exchanges 1-3, then 1-5); 6 and 7 were the last two then.
        for n, message in enumerate(tools[:5], start=1):
            placeholder = json.loads(message["content"])
            assert placeholder == {"compacted": True, "original_bytes": placeholder[
                "original_bytes"], "receipt_id": f"rc-01-{n}", "status": result(n)["status"]}
            assert placeholder["original_bytes"] > 3_000
        for message in tools[5:]:
            assert json.loads(message["content"])["notes"] == "n" * 3_000
        for message in calls[:5]:
            arguments = json.loads(message["tool_calls"][0]["function"]["arguments"])
            assert arguments["compacted"] is True
        for message in calls[5:]:
            assert "pad" in json.loads(message["tool_calls"][0]["function"]["arguments"])
        appends_between_compactions(provider, 2)
        # The formal history keeps every receipt in full; the first generation is kept too.
        formal = await items(client, s["session_id"], "history")
        receipts = [f for f in formal if f["type"] == "receipt"]
        assert [r["result"] for r in receipts] == [result(n) for n in range(1, 9)]
        first = [json.loads(t) for t in runs.history(s["session_id"], "execution", 0)]
        assert json.loads(first[3]["content"]) == result(1)

    one_app(test)


def test_summary_only_when_local_is_not_enough_and_spaced() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(text="ok") for _ in range(14)])
        s = await session(client, "s")
        sid = s["session_id"]
        decisions: list[str] = []
        for size in (4_000, 4_000, 4_000, 4_000, 4_000):
            reason, events = await text_run(client, clock, sid, size)
            assert reason == "completed"
            decisions += [e["compaction"]["decision"] for e in main_started(events)]
        assert decisions == ["none", "none", "none", "none", "summary"]
        # The fifth run: nothing to compact locally, so one summary call, then the main call.
        [summary_call, main] = of(events, "model_call.started")
        assert summary_call["purpose"] == "summary"
        assert ratio(main) >= Fraction(7, 10)
        assert "nothing to compact locally" in main["compaction"]["reason"]
        [applied] = of(events, "compaction.applied")
        assert applied["kind"] == "summary"
        assert (applied["messages_before"], applied["messages_after"]) == (10, 3)
        history = await items(client, sid, "execution-history")
        assert [m["role"] for m in history] == ["system", "user", "user", "assistant"]
        assert history[1]["name"] == WORKING_MEMORY
        assert history[1]["content"].startswith("[working memory]\n")
        assert history[1]["content"].endswith("\n[facts]\n[]")
        assert history[2] == {"role": "user", "content": "w" * 4_000}
        # Within the spacing, 70%..92%: no summary; at or above 92%: the spacing is skipped.
        plan = [(4_000, "none"), (4_000, "none"), (10_000, "summary"),
                (4_000, "none"), (4_000, "none"), (100, "none"), (100, "summary")]
        seen = []
        for size, _ in plan:
            _, events = await text_run(client, clock, sid, size)
            [main] = main_started(events)
            seen.append((main["compaction"]["decision"], ratio(main), main["compaction"]["reason"]))
        assert [d for d, _, _ in seen] == [d for _, d in plan]
        assert seen[1][1] < Fraction(7, 10)
        assert seen[2][1] >= Fraction(92, 100)
        assert "spacing skipped: at or above 92%" in seen[2][2]
        for i, calls in ((4, 2), (5, 3)):
            assert Fraction(7, 10) <= seen[i][1] < Fraction(92, 100)
            assert f"summary spacing: {calls} of 4 main calls since the last summary" in seen[i][2]
        assert Fraction(7, 10) <= seen[6][1] < Fraction(92, 100)  # 4 main calls completed
        appends_between_compactions(provider, 3)

    one_app(test)


SUMMARY_CHANNEL = {"name": "summarizer", "model": "sim-2", "input_capacity": 16_000,
                   "total_capacity": 20_000, "output_capacity": 500, "timeout_ms": 30_000,
                   "prices": {"input": 1_000_000, "cached_input": 100_000, "output": 3_000_000}}


def test_summary_is_charged_to_the_run_wallet_and_never_a_sample() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(text="ok") for _ in range(6)])
        s = await session(client, "s", summary=SUMMARY_CHANNEL)
        started: list[Any] = []
        finished: list[Any] = []
        for _ in range(6):
            reason, events = await text_run(client, clock, s["session_id"], 4_000)
            assert reason == "completed"
            started += of(events, "model_call.started")
            finished += of(events, "model_call.finished")
        purposes = [e["purpose"] for e in started]
        assert purposes == ["main"] * 4 + ["summary", "main", "main"]
        summary, after = started[4], started[5]
        assert summary["channel_id"] != after["channel_id"]
        assert summary["reservation"] == math.ceil((16_000 * 1_000_000 + 500 * 3_000_000)
                                                   / 1_000_000)
        usage = finished[4]["usage"]
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        assert finished[4]["charge"] == math.ceil(
            ((usage["prompt_tokens"] - cached) * 1_000_000 + cached * 100_000
             + usage["completion_tokens"] * 3_000_000) / 1_000_000)
        assert finished[4]["released"] == summary["reservation"] - finished[4]["charge"]
        wallet = (await client.get(f"/v1/wallets/{s['wallet_id']}")).json()
        assert wallet["charged"] == sum(f["charge"] for f in finished)
        assert wallet["reserved"] == 0
        # CTX-11: the summary's usage is no sample; the main calls' samples are all there are.
        mains = [(e, f) for e, f in zip(started, finished, strict=True) if e["purpose"] == "main"]
        for n, (event, _) in enumerate(mains):
            earlier = mains[:n]
            assert event["samples"] == len(earlier)
            assert event["coefficient_raw"] == sum(e["raw_estimate"] for e, _ in earlier)
            assert event["coefficient_real"] == sum(f["usage"]["prompt_tokens"]
                                                    for _, f in earlier)
        # The summary request: its own model and prompt, no script tag, no system prompt.
        [request] = [r for r in provider.recorded() if r.conversation is None]
        body = json.loads(request.body)
        assert body["model"] == "sim-2"
        assert "tools" not in body
        assert "[arck-script:" not in request.body.decode()
        assert "You help with orders." not in request.body.decode()
        assert body["messages"][0] == {"role": "system", "content": SUMMARY_PROMPT}
        assert len([r for r in provider.recorded() if r.conversation == "s"]) == 6

    one_app(test)


def test_refused_summary_leaves_history_unchanged() -> None:
    async def test(world: App) -> None:
        client, _, clock, runs = world
        s = await session(client, "s")
        sid = s["session_id"]
        for _ in range(4):
            await text_run(client, clock, sid, 4_000)
        before = runs.history(sid, "execution")
        reason, events = await text_run(client, clock, sid, 4_000)
        assert reason == "completed"  # below 100%: sent as it was
        [refused] = of(events, "compaction.refused")
        assert refused["reason"] == ("the summary names call_999999_0, which is not in the "
                                     "summarized stretch")
        assert of(events, "compaction.applied") == []
        [main] = main_started(events)
        assert main["compaction"]["decision"] == "summary_refused"
        assert "summary refused: the summary names call_999999_0" in main["compaction"]["reason"]
        after = runs.history(sid, "execution")
        assert after[: len(before)] == before
        assert len(after) == len(before) + 2  # the input and the answer, appended
        # Over the budget, with the summary refused again: the run ends, nothing is sent.
        sent = len(provider_calls(world))
        reason, events = await text_run(client, clock, sid, 10_000)
        assert reason == "context_uncompactable"
        [ended] = of(events, "compaction.uncompactable")
        assert ended["reason"] == "compaction cannot bring the request under the effective budget"
        assert ended["estimate"] >= BUDGET
        assert [e["purpose"] for e in of(events, "model_call.started")] == ["summary"]
        assert len(provider_calls(world)) == sent + 1

    one_app(test, lambda provider: SummaryText(provider, "Refunds done, see call_999999_0."))


def provider_calls(world: App) -> list[Any]:
    return list(world[1].recorded())


def test_input_alone_over_the_budget_ends_before_sending() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        s = await session(client, "s")
        reason, events = await text_run(client, clock, s["session_id"], 30_000)
        assert reason == "context_uncompactable"
        [ended] = of(events, "compaction.uncompactable")
        assert ended["reason"] == ("the system prompt, tool definitions and new input alone "
                                   "reach the effective budget")
        assert ended["effective_budget"] == BUDGET
        assert of(events, "model_call.started") == []
        assert of(events, "run.ended") == [{"end_reason": "context_uncompactable"}]
        assert provider.recorded() == []
        wallet = (await client.get(f"/v1/wallets/{s['wallet_id']}")).json()
        assert (wallet["reserved"], wallet["charged"]) == (0, 0)

    one_app(test)


def test_last_two_exchanges_over_the_budget_end_the_run() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", lookups(3))
        s = await session(client, "s")
        reason, events = await drive(client, clock, s["session_id"], "Check", size=12_000)
        assert reason == "context_uncompactable"
        [ended] = of(events, "compaction.uncompactable")
        assert ended["reason"] == "compaction cannot bring the request under the effective budget"
        assert len(provider.recorded()) == 2  # never a third request, never a loop
        wallet = (await client.get(f"/v1/wallets/{s['wallet_id']}")).json()
        assert wallet["reserved"] == 0

    one_app(test)


def test_context_overflow_is_repaired_and_sent_once_more() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [*lookups(3)[:3], Step(faults=[ContextLengthExceeded()]),
                                  Step(text="Done.")])
        s = await session(client, "s")
        reason, events = await drive(client, clock, s["session_id"], "Check my orders")
        assert reason == "completed"
        finished = of(events, "model_call.finished")
        refused = [f for f in finished if f["outcome"] == "refused"]
        assert [(f["status"], f["charge"]) for f in refused] == [(400, 0)]
        started = main_started(events)
        assert started[3]["compaction"]["decision"] == "none"  # the estimate saw no problem
        repaired = started[4]["compaction"]
        assert repaired["decision"].startswith("local")
        assert repaired["reason"].startswith("context_length_exceeded from the provider")
        assert next(a["kind"] for a in of(events, "compaction.applied")) == "local"
        sent = [r for r in provider.recorded() if r.conversation == "s"]
        assert len(sent) == 5
        assert sent[4].messages_common is not None
        assert sent[4].messages_common < len(json.loads(sent[3].body)["messages"])
        wallet = (await client.get(f"/v1/wallets/{s['wallet_id']}")).json()
        assert wallet["reserved"] == 0
        assert wallet["charged"] == sum(f["charge"] for f in finished)

    one_app(test)


def test_context_overflow_that_cannot_shrink_ends_the_run() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(faults=[ContextLengthExceeded()]), Step(text="never")])
        s = await session(client, "s")
        reason, events = await text_run(client, clock, s["session_id"], 100)
        assert reason == "context_uncompactable"
        [ended] = of(events, "compaction.uncompactable")
        assert ended["reason"] == "the request refused as too long cannot be made smaller"
        assert len(provider.recorded()) == 1
        wallet = (await client.get(f"/v1/wallets/{s['wallet_id']}")).json()
        assert (wallet["reserved"], wallet["charged"]) == (0, 0)

    one_app(test)


def test_a_second_overflow_ends_the_run() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        overflow = Step(faults=[ContextLengthExceeded()])
        provider.add_script("s", [*lookups(3)[:3], overflow, overflow, Step(text="never")])
        s = await session(client, "s")
        reason, events = await drive(client, clock, s["session_id"], "Check my orders")
        assert reason == "context_uncompactable"
        refused = [f for f in of(events, "model_call.finished") if f["outcome"] == "refused"]
        assert len(refused) == 2
        assert len([r for r in provider.recorded() if r.conversation == "s"]) == 5

    one_app(test)


def _history() -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """system, input 1, exchange a, answer, input 2, exchanges b and c, current input 3."""
    def exchange(call_id: str, size: int) -> list[dict[str, Any]]:
        call = {"id": call_id, "type": "function",
                "function": {"name": "lookup", "arguments": json.dumps({"pad": "a" * size})}}
        return [{"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call_id, "content": "r" * size}]
    messages = [{"role": "system", "content": "You help. [arck-script:s]"},
                {"role": "user", "content": "u" * 500}, *exchange("call_a", 900),
                {"role": "assistant", "content": "Found it."}, {"role": "user", "content": "more"},
                *exchange("call_b", 900), *exchange("call_c", 900),
                {"role": "user", "content": "and now?"}]
    facts = {c: {"receipt_id": f"rc-{c[-1]}", "status": "open"} for c in ("call_a", "call_b",
                                                                           "call_c")}
    return messages, facts


def test_local_compaction_is_pure_and_idempotent() -> None:
    messages, facts = _history()
    once = compaction.local(messages, facts)
    assert compaction.local(once, facts) == once
    assert once[3]["content"] == ('{"compacted":true,"original_bytes":900,"receipt_id":"rc-a",'
                                  '"status":"open"}')
    assert json.loads(once[2]["tool_calls"][0]["function"]["arguments"]) == {
        "compacted": True, "original_bytes": 911}
    assert once[6:] == messages[6:]  # the last 2 exchanges and the input stay whole
    assert compaction.local(messages, {}) == messages  # no receipt, nothing replaced


def test_stretch_keeps_the_input_and_the_last_two_exchanges_whole() -> None:
    messages, _ = _history()
    assert compaction.kept_from(messages) == 6
    assert compaction.current_input(messages, {"arck_request_input"}) == (10, 11)
    assert compaction.stretch(messages, {"arck_request_input"}) == (1, 6)
    summary = compaction.summary_messages(messages[1:6])
    assert "[arck-script:" not in json.dumps(summary)
    assert compaction.minimal(messages, set()) == [messages[0], messages[10]]


def test_summary_candidates_are_validated() -> None:
    messages, facts = _history()
    span = (1, 6)
    assert compaction.refusal("Looked up order a: open.", messages, span, facts) is None
    refused = {
        "": "the summary is empty",
        "Called lookup; tool_calls: []": "the summary contains tool-call syntax",
        "Receipt rc-b says shipped.": "the summary names rc-b, which is not in the summarized "
                                      "stretch",
        "See call_zzz.": "the summary names call_zzz, which is not in the summarized stretch",
        "x" * 5_000: "the summary is not shorter than the stretch it would replace",
    }
    for text, reason in refused.items():
        assert compaction.refusal(text, messages, span, facts) == reason
    assert compaction.refusal("Receipt rc-a, call call_a.", messages, span, facts) is None
    memory = compaction.working_memory("Order a is open.", messages[1:6], facts)
    assert memory["content"].endswith('[{"name":"lookup","receipt_id":"rc-a","status":"open",'
                                      '"tool_call_id":"call_a"}]')
    rolled = compaction.replace(messages, span, memory)
    # A later summary that includes this working memory carries its facts over.
    again = compaction.working_memory("Earlier: order a.", rolled[1:2], facts)
    assert again["content"].endswith(memory["content"].rpartition("\n")[2])
