"""Runs against the simulated provider, in-process on one virtual clock (docs/runs.md)."""

from __future__ import annotations

import functools
import itertools
import json
import math
from fractions import Fraction

import runkit
from runkit import RESERVATION, App, answer, event_list, of, one_app, post, run, settled

from arck.simulator.provider import SlowAnswer, Step, ToolCall

# Every version made here must have the default max_context_tokens (RUN-05).
version = functools.partial(runkit.version, context=256_000)
session = functools.partial(runkit.session, context=256_000)


def test_text_completes_and_is_charged_exactly() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(text="Done.")])
        s = await session(client, "s")
        r = await run(client, s["session_id"], "Hello")
        assert (r["state"], r["end_reason"]) == ("queued", None)
        assert (await settled(client, clock, r["run_id"]))["end_reason"] == "completed"
        [finished] = of(await event_list(client, r["run_id"]), "model_call.finished")
        usage = finished["usage"]
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        expected = math.ceil(((usage["prompt_tokens"] - cached) * 2_000_000 + cached * 500_000
                              + usage["completion_tokens"] * 8_000_000) / 1_000_000)
        assert finished["charge"] == expected
        wallet = (await client.get(f"/v1/wallets/{s['wallet_id']}")).json()
        assert wallet == {"wallet_id": s["wallet_id"], "name": "w",
                          "balance": 10 * RESERVATION - expected, "reserved": 0,
                          "available": 10 * RESERVATION - expected, "charged": expected}
        [sent] = provider.recorded()
        body = json.loads(sent.body)
        assert body["max_completion_tokens"] == 4_000
        assert dict(sent.headers)["idempotency-key"].startswith("mc-")
        history = (await client.get(f"/v1/sessions/{s['session_id']}/history")).json()["items"]
        assert history == [{"type": "user", "text": "Hello"},
                           {"type": "assistant", "text": "Done."}]

    one_app(test)


def test_input_and_approval_requests_end_with_their_reasons() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(request_input="Which order?"),
                                  Step(request_approval="Refund?"), Step(text="Refunded.")])
        s = await session(client, "s")
        reasons = []
        for text in ("Refund me", "A-7", "yes"):
            r = await run(client, s["session_id"], text)
            reasons.append((await settled(client, clock, r["run_id"]))["end_reason"])
        assert reasons == ["input_required", "approval_required", "completed"]
        sent = provider.recorded()
        sizes = [len(json.loads(r.body)["messages"]) for r in sent]
        assert [r.messages_common for r in sent] == [None, *sizes[:-1]]  # each extends the last

    one_app(test)


def test_tool_call_waits_for_its_receipt_projected_once() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(tool_calls=[ToolCall(name="lookup", arguments={"id": 7})]),
                                  Step(text="Here it is."), Step(text="Again.")])
        s = await session(client, "s")
        r = await run(client, s["session_id"], "Find order 7")
        assert (await settled(client, clock, r["run_id"]))["state"] == "waiting_tools"
        [call] = (await client.get(f"/v1/runs/{r['run_id']}/tool-calls")).json()["tool_calls"]
        assert (call["name"], call["state"]) == ("lookup", "dispatchable")
        result = {"id": 7, "status": "shipped", "notes": "x" * 5000}
        receipt = {"receipt_id": "rc-1", "kind": "completed", "result": result}
        sent = await answer(client, call, result)
        assert sent.answer["replayed"] is False
        assert (await post(client, sent.path, sent.body, 200, sent.headers))["replayed"] is True
        assert (await settled(client, clock, r["run_id"]))["end_reason"] == "completed"
        r2 = await run(client, s["session_id"], "Thanks")
        assert (await settled(client, clock, r2["run_id"]))["end_reason"] == "completed"
        bodies = [r.body for r in provider.recorded()]
        for before, after in itertools.pairwise(bodies):
            assert after.startswith(before[:-2])  # messages byte for byte, plus new ones
        tool_message = json.loads(bodies[1])["messages"][3]
        projected = json.loads(tool_message["content"])
        assert projected["truncation"]["original_bytes"] > 1024
        assert len(tool_message["content"].encode()) <= 1024
        formal = (await client.get(f"/v1/sessions/{s['session_id']}/history")).json()["items"]
        assert {"type": "receipt", "call_id": call["call_id"], **receipt} in formal

    one_app(test)


def test_submission_and_unknown_outcome_enter_whole_and_end_the_call() -> None:
    for kind, state in (("submission", "submitted"),
                        ("reconciliation_required", "reconciliation_required")):
        async def test(world: App, kind: str = kind, state: str = state) -> None:
            client, provider, clock, _ = world
            provider.add_script("s", [Step(tool_calls=[ToolCall(name="lookup", arguments={})]),
                                      Step(text="Noted.")])
            s = await session(client, "s")
            r = await run(client, s["session_id"], "Hand it off")
            assert (await settled(client, clock, r["run_id"]))["state"] == "waiting_tools"
            [call] = (await client.get(f"/v1/runs/{r['run_id']}/tool-calls")).json()[
                "tool_calls"]
            result = {"task": "t-1", "notes": "é" * 3000}
            sent = await answer(client, call, result, kind)
            assert sent.answer["replayed"] is False
            assert (await settled(client, clock, r["run_id"]))["end_reason"] == "completed"
            tool_message = json.loads(provider.recorded()[1].body)["messages"][3]
            assert json.loads(tool_message["content"]) == result  # whole: 6 KB, budget 1 KB
            [stored] = of(await event_list(client, r["run_id"]), "receipt.stored")
            assert (stored["kind"], stored["protected"], stored["truncated"]) == (kind, True,
                                                                                 False)
            assert stored["retained_bytes"] == stored["original_bytes"] > 6000
            [after] = (await client.get(f"/v1/runs/{r['run_id']}/tool-calls")).json()[
                "tool_calls"]
            assert after["state"] == state
            # One final per call (EXE-14), whether or not the run has ended since.
            again = {**sent.body, "receipt_id": "rc-2", "kind": "completed"}
            await post(client, sent.path, again, 409, sent.headers)

        one_app(test)


def test_calibration_arithmetic_is_exact() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(text="one"), Step(text="two"), Step(text="three")])
        s = await session(client, "s")
        started, finished = [], []
        for text in ("first question", "second", "third one please"):
            r = await run(client, s["session_id"], text)
            await settled(client, clock, r["run_id"])
            started += of(await event_list(client, r["run_id"]), "model_call.started")
            finished += of(await event_list(client, r["run_id"]), "model_call.finished")
        first = started[0]
        assert first["calibrated_estimate"] == first["raw_estimate"]  # no sample: raw
        assert first["coefficient"] == 1.0
        samples: list[tuple[int, int]] = []
        for i, event in enumerate(started):
            if samples:
                c = Fraction(sum(b for _, b in samples), sum(a for a, _ in samples))
                last_raw, last_real = samples[-1]
                assert event["calibrated_estimate"] == last_real + math.ceil(
                    c * (event["raw_estimate"] - last_raw))
            assert event["effective_budget"] == 100_000 - 2_000
            ratio = Fraction(event["calibrated_estimate"], 98_000)
            assert event["compaction"] == {
                "decision": "none", "reason": "below 70%",
                "estimate_before": event["calibrated_estimate"],
                "ratio_before": f"{ratio.numerator}/{ratio.denominator}"}
            assert event["reservation"] == RESERVATION
            samples.append((event["raw_estimate"], finished[i]["usage"]["prompt_tokens"]))

    one_app(test)


def test_insufficient_balance_never_sends() -> None:
    async def test(world: App) -> None:
        client, provider, _, _ = world
        s = await session(client, "s", funds=RESERVATION - 1)
        r = await run(client, s["session_id"], "Hello")
        assert (r["state"], r["end_reason"]) == ("ended", "insufficient_balance")
        assert provider.recorded() == []

    one_app(test)


def test_slow_answer_times_out_on_the_virtual_clock_without_resend() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(text="late", faults=[SlowAnswer(seconds=120)])])
        s = await session(client, "s")
        start = clock.now()
        r = await run(client, s["session_id"], "Hello")
        assert (await settled(client, clock, r["run_id"]))["end_reason"] == "model_timeout"
        assert 30 <= clock.now() - start <= 31
        assert len(provider.recorded()) == 1
        wallet = (await client.get(f"/v1/wallets/{s['wallet_id']}")).json()
        assert (wallet["reserved"], wallet["charged"]) == (RESERVATION, 0)  # cost-pending

    one_app(test)


def test_many_runs_on_one_wallet_conserve_money() -> None:
    async def test(world: App) -> None:
        client, _, clock, _ = world
        wallet = await post(client, "/v1/wallets", {"name": "shared"})
        funds = 3 * RESERVATION + 5
        await post(client, f"/v1/wallets/{wallet['wallet_id']}/deposits", {"amount": funds}, 200)
        av = await version(client, "none")
        runs = []
        for i in range(6):
            s = await post(client, "/v1/sessions", {"agent_version": av,
                                                    "wallet_id": wallet["wallet_id"]})
            runs.append(await run(client, s["session_id"], f"question {i}"))
        charged = 0
        reasons = []
        for r in runs:
            reasons.append((await settled(client, clock, r["run_id"]))["end_reason"])
            charged += sum(f["charge"] for f in
                           of(await event_list(client, r["run_id"]), "model_call.finished"))
        after = (await client.get(f"/v1/wallets/{wallet['wallet_id']}")).json()
        assert set(reasons) <= {"completed", "insufficient_balance"}
        assert "completed" in reasons
        assert after["charged"] == charged
        assert after["balance"] + after["charged"] == funds
        assert after["reserved"] == 0

    one_app(test)


def test_session_keeps_its_version() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        s = await session(client, "old")
        await version(client, "new")  # a newer version of the same agent
        r = await run(client, s["session_id"], "Hello")
        await settled(client, clock, r["run_id"])
        [sent] = provider.recorded()
        assert sent.conversation == "old"

    one_app(test)


def test_a_run_cancelled_with_open_calls_leaves_a_history_the_next_run_can_send() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(tool_calls=[ToolCall(name="lookup", arguments={"n": 1}),
                                                   ToolCall(name="lookup", arguments={"n": 2})]),
                                  Step(text="Welcome.")])
        s = await session(client, "s")
        r = await run(client, s["session_id"], "Find both")
        assert (await settled(client, clock, r["run_id"]))["state"] == "waiting_tools"
        await post(client, f"/v1/runs/{r['run_id']}/cancel", {}, 200)
        r2 = await run(client, s["session_id"], "Thanks")
        assert (await settled(client, clock, r2["run_id"]))["end_reason"] == "completed"
        sent = json.loads(provider.recorded()[-1].body)["messages"]
        answers = [m for m in sent if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in answers] == ["call_000001_0", "call_000001_1"]
        assert all(json.loads(m["content"])["outcome"] == "unknown" for m in answers)
        calls = (await client.get(f"/v1/runs/{r['run_id']}/tool-calls")).json()["tool_calls"]
        assert [c["state"] for c in calls] == ["dispatchable", "dispatchable"]  # untouched

    one_app(test)
