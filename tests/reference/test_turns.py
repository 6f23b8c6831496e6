"""Turns of a run: appended input (RUN-06), permission revocation (RUN-14) and the chat-history
tool (RUN-10), in-process against the simulated provider on one virtual clock (docs/runs.md)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from runkit import AGENT, App, answer, one_app, post, run, session, settled

from arck.simulator.provider import SimulatedProvider, SlowAnswer, Step, ToolCall


async def new_session(client: httpx.AsyncClient, script: str) -> str:
    return str((await session(client, script, funds=10**12))["session_id"])


async def start(client: httpx.AsyncClient, session_id: str, text: str) -> str:
    return str((await run(client, session_id, text))["run_id"])


async def in_flight(client: httpx.AsyncClient, provider: SimulatedProvider, count: int) -> None:
    """Until the provider holds `count` requests (the last one's answer delayed)."""
    for _ in range(200):
        if len(provider.recorded()) >= count:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{len(provider.recorded())} request(s), expected {count}")


async def kinds(client: httpx.AsyncClient, run_id: str) -> list[str]:
    return [e["type"] for e in (await client.get(f"/v1/runs/{run_id}/events")).json()["events"]]


async def calls(client: httpx.AsyncClient, run_id: str) -> list[Any]:
    return list((await client.get(f"/v1/runs/{run_id}/tool-calls")).json()["tool_calls"])


def sent(provider: SimulatedProvider) -> list[list[Any]]:
    return [json.loads(r.body)["messages"] for r in provider.recorded()]


# -- appended input (RUN-06) ---------------------------------------------------------------------


def test_input_during_the_call_discards_the_plan() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [
            Step(tool_calls=[ToolCall(name="lookup", arguments={"id": 1})],
                 faults=[SlowAnswer(seconds=5)]),
            Step(text="Noted.")])
        s = await new_session(client, "s")
        run_id = await start(client, s, "Find order 1")
        await in_flight(client, provider, 1)
        answer = await post(client, f"/v1/runs/{run_id}/input", {"input": "Order 2 instead"},
                            200)
        assert answer == {"run_id": run_id, "input_id": "in-000001", "state": "pending"}
        await clock.sleep(5)
        snapshot = await settled(client, clock, run_id)
        assert (snapshot["state"], snapshot["end_reason"]) == ("ended", "completed")
        assert await calls(client, run_id) == []  # never stored, never dispatched
        found = await kinds(client, run_id)
        assert "tool_plan.discarded" in found
        assert "tool_plan.accepted" not in found
        first, second = sent(provider)
        assert second == [*first, {"role": "user", "content": "Order 2 instead"}]
        history = (await client.get(f"/v1/sessions/{s}/history")).json()["items"]
        assert history == [{"type": "user", "text": "Find order 1"},
                           {"type": "user", "text": "Order 2 instead"},
                           {"type": "assistant", "text": "Noted."}]

    one_app(test)


def test_input_after_acceptance_waits_for_the_batch() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(tool_calls=[ToolCall(name="lookup", arguments={})]),
                                  Step(text="Done.")])
        s = await new_session(client, "s")
        run_id = await start(client, s, "Find it")
        assert (await settled(client, clock, run_id))["state"] == "waiting_tools"
        await post(client, f"/v1/runs/{run_id}/input", {"input": "and hurry"}, 200)
        [call] = await calls(client, run_id)
        assert call["state"] == "dispatchable"  # never revoked by later input
        await answer(client, call, {"ok": 1}, receipt_id="r1")
        assert (await settled(client, clock, run_id))["end_reason"] == "completed"
        first, second = sent(provider)
        new = second[len(first):]
        assert second[:len(first)] == first
        assert [m["role"] for m in new] == ["assistant", "tool", "user"]
        assert new[2]["content"] == "and hurry"

    one_app(test)


def test_input_during_a_text_turn_continues_and_ended_runs_refuse() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(text="One.", faults=[SlowAnswer(seconds=3)]),
                                  Step(text="Two.")])
        s = await new_session(client, "s")
        run_id = await start(client, s, "Count")
        await in_flight(client, provider, 1)
        await post(client, f"/v1/runs/{run_id}/input", {"input": "more"}, 200)
        await clock.sleep(3)
        assert (await settled(client, clock, run_id))["end_reason"] == "completed"
        first, second = sent(provider)
        assert second[len(first):] == [{"role": "assistant", "content": "One."},
                                       {"role": "user", "content": "more"}]
        late = await client.post(f"/v1/runs/{run_id}/input", json={"input": "late"})
        assert late.status_code == 409
        empty = await client.post(f"/v1/runs/{run_id}/input", json={"input": ""})
        assert empty.status_code == 422
        other = await client.post(f"/v1/runs/{run_id}/input", json={"input": "x"},
                                  headers={"Authorization": "Bearer arck-dev-other"})
        assert other.status_code == 404
        readonly = await client.post(f"/v1/runs/{run_id}/input", json={"input": "x"},
                                     headers={"Authorization": "Bearer arck-dev-readonly"})
        assert readonly.status_code == 403

    one_app(test)


# -- permission revocation (RUN-14) -------------------------------------------------------------


def test_revocation_during_the_call_refuses_the_plan() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(tool_calls=[ToolCall(name="lookup", arguments={})],
                                       faults=[SlowAnswer(seconds=5)])])
        s = await new_session(client, "s")
        run_id = await start(client, s, "Find it")
        await in_flight(client, provider, 1)
        revoked = await post(client, f"/v1/agents/{AGENT}/tool-revocations",
                             {"tool_name": "lookup"})
        assert revoked == {"revocation_id": "rev-000001", "agent_id": AGENT,
                           "tool_name": "lookup", "runs": [run_id]}
        await clock.sleep(5)
        snapshot = await settled(client, clock, run_id)
        assert (snapshot["state"], snapshot["end_reason"]) == ("ended", "permission_changed")
        assert [c["state"] for c in await calls(client, run_id)] == ["revoked"]
        assert "tool_plan.refused" in await kinds(client, run_id)

    one_app(test)


def test_revocation_while_waiting_keeps_dispatched_calls_and_ends_at_the_next_step() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(tool_calls=[ToolCall(name="lookup", arguments={})]),
                                  Step(text="never sent")])
        s = await new_session(client, "s")
        run_id = await start(client, s, "Find it")
        assert (await settled(client, clock, run_id))["state"] == "waiting_tools"
        await post(client, f"/v1/agents/{AGENT}/tool-revocations", {"tool_name": "lookup"})
        [call] = await calls(client, run_id)
        assert call["state"] == "dispatchable"
        await answer(client, call, {"ok": 1}, receipt_id="r1")
        snapshot = await settled(client, clock, run_id)
        assert snapshot["end_reason"] == "permission_changed"
        assert len(provider.recorded()) == 1  # no model call after the revocation
        forbidden = await client.post(f"/v1/agents/{AGENT}/tool-revocations",
                                      json={"tool_name": "lookup"},
                                      headers={"Authorization": "Bearer arck-dev-noscope"})
        assert forbidden.status_code == 403
        bad = await client.post(f"/v1/agents/{AGENT}/tool-revocations",
                                json={"tool_name": "no spaces"})
        assert bad.status_code == 422

    one_app(test)


def test_a_later_run_of_the_agent_never_dispatches_the_revoked_tool() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [Step(tool_calls=[ToolCall(name="lookup", arguments={})])])
        s = await new_session(client, "s")
        await post(client, f"/v1/agents/{AGENT}/tool-revocations", {"tool_name": "lookup"})
        run_id = await start(client, s, "Find it")
        assert (await settled(client, clock, run_id))["end_reason"] == "permission_changed"
        assert [c["state"] for c in await calls(client, run_id)] == ["revoked"]

    one_app(test)


# -- the chat-history tool (RUN-10) -------------------------------------------------------------


def test_chat_history_returns_only_visible_text() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [
            Step(tool_calls=[ToolCall(name="lookup", arguments={"q": "ARGS-SECRET"})]),
            Step(text="Order shipped."),
            Step(tool_calls=[ToolCall(name="arck_chat_history", arguments={"limit": 10}),
                             ToolCall(name="arck_chat_history", arguments={"limit": 1}),
                             ToolCall(name="arck_chat_history", arguments="not json")]),
            Step(text="Recalled.")])
        s = await new_session(client, "s")
        run_id = await start(client, s, "Where is order 1?")
        assert (await settled(client, clock, run_id))["state"] == "waiting_tools"
        [call] = await calls(client, run_id)
        await answer(client, call, {"secret": "RECEIPT-SECRET"}, receipt_id="r1")
        assert (await settled(client, clock, run_id))["end_reason"] == "completed"
        second = await start(client, s, "What did we say?")
        assert (await settled(client, clock, second))["end_reason"] == "completed"
        assert await calls(client, second) == []  # answered by the engine, no executor
        last = sent(provider)[-1]
        tools = [json.loads(m["content"]) for m in last if m["role"] == "tool"][-3:]
        assert tools[0] == {"messages": [
            {"role": "user", "text": "Where is order 1?"},
            {"role": "assistant", "text": "Order shipped."},
            {"role": "user", "text": "What did we say?"}]}
        assert tools[1] == {"messages": [{"role": "user", "text": "What did we say?"}]}
        assert tools[2]["error"] == "invalid_arguments"
        assert "SECRET" not in json.dumps(tools)

    one_app(test)


def test_a_tool_outside_the_tool_set_is_answered_not_dispatched() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("u", [
            Step(tool_calls=[ToolCall(name="no_such_tool", arguments={"q": 1}),
                             ToolCall(name="lookup", arguments={"q": 2})]),
            Step(text="Done.")])
        s = await new_session(client, "u")
        run_id = await start(client, s, "Use a tool I do not have")
        assert (await settled(client, clock, run_id))["state"] == "waiting_tools"
        [call] = await calls(client, run_id)  # only the declared tool is dispatchable
        assert call["name"] == "lookup"
        await answer(client, call, {"ok": True}, receipt_id="u1")
        assert (await settled(client, clock, run_id))["end_reason"] == "completed"
        last = sent(provider)[-1]
        answers = [json.loads(m["content"]) for m in last if m["role"] == "tool"]
        assert answers[0]["error"]["code"] == "unknown_tool"
        assert "tool_call.unknown" in await kinds(client, run_id)

    one_app(test)
