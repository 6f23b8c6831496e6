"""CAP-08 in the reference: a sliding window per operation × tenant, calls over it refused
before dispatch with a result the model reads, windows kept across runs and restarts."""

from __future__ import annotations

import json
from typing import Any

import pytest
from runkit import App, World, answer, event_list, of, one_app, run, scenario, session, settled

from arck.simulator.provider import SimulatedProvider, Step, ToolCall

PACED: dict[str, Any] = {"version": 1, "enabled": True, "scope": "lookup",
                         "execution": {"rate_limit": {"count": 2, "window": "1m"}}}


def _burst(provider: SimulatedProvider, script: str, calls: int) -> None:
    provider.add_script(script, [
        Step(tool_calls=[ToolCall(name="lookup", arguments={"n": n}) for n in range(calls)]),
        Step(text="Done.")])


async def _dispatched(world: App, run_id: str) -> list[dict[str, Any]]:
    client, _, clock, _ = world
    snapshot = await settled(client, clock, run_id)
    if snapshot["state"] != "waiting_tools":
        return []
    calls: list[dict[str, Any]] = (await client.get(f"/v1/runs/{run_id}/tool-calls")).json()[
        "tool_calls"]
    for n, call in enumerate(calls):
        await answer(client, call, {"ok": n}, receipt_id=f"{run_id}-{n}")
    assert (await settled(client, clock, run_id))["end_reason"] == "completed"
    return calls


def test_a_burst_over_the_window_is_paced_and_the_model_is_told() -> None:
    async def test(world: App) -> None:
        client, provider, _, _ = world
        _burst(provider, "burst", 3)
        s = await session(client, "burst", capability=PACED)
        run_id = (await run(client, s["session_id"]))["run_id"]
        assert len(await _dispatched(world, run_id)) == 2
        [paced] = of(await event_list(client, run_id), "tool_call.paced")
        assert paced["retry_after_ms"] == 60_000
        last = json.loads(provider.recorded()[-1].body)["messages"]
        told = [json.loads(m["content"]) for m in last if m["role"] == "tool"]
        assert [t["error"]["code"] for t in told if "error" in t] == ["rate_limited"]

    one_app(test)


@pytest.mark.parametrize("early_ms", [1, 0])
def test_the_window_slides_across_runs_and_opens_exactly_at_its_end(early_ms: int) -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [  # one conversation: each run of the version asks next
            Step(tool_calls=[ToolCall(name="lookup", arguments={"n": n}) for n in range(2)]),
            Step(text="Done.")] * 2)
        first = await session(client, "s", capability=PACED)

        async def burst() -> tuple[str, list[dict[str, Any]]]:
            # a session of its own each time: the same operation and tenant, another run
            made = await client.post("/v1/sessions", json={
                "agent_version": first["agent_version"], "wallet_id": first["wallet_id"]})
            run_id = (await run(client, made.json()["session_id"]))["run_id"]
            return run_id, await _dispatched(world, run_id)

        run_id, calls = await burst()
        assert len(calls) == 2
        [at] = [e["at"] for e in await event_list(client, run_id)
                if e["type"] == "tool_plan.accepted"]
        # both dispatched at `at`: the window (at, at + 60 s] is full until at + 60 s
        await clock.sleep(at + 60 - early_ms / 1000 - clock.now())
        run_id, calls = await burst()
        paced = of(await event_list(client, run_id), "tool_call.paced")
        if early_ms:
            assert calls == []
            assert [p["retry_after_ms"] for p in paced] == [early_ms, early_ms]
        else:
            assert len(calls) == 2
            assert paced == []

    one_app(test)


def test_a_restart_keeps_the_window() -> None:
    """The dispatches are rows of the store: a new app on the same store (a restart) finds
    the window as full as the old one left it."""

    async def test(world: World) -> None:
        world.provider.add_script("s", [
            Step(tool_calls=[ToolCall(name="lookup", arguments={"n": n}) for n in range(2)]),
            Step(text="Done.")] * 2)
        async with world.client() as client:
            first = await session(client, "s", capability=PACED)
            run_id = (await run(client, first["session_id"]))["run_id"]
            assert len(await _dispatched((client, world.provider, world.clock,
                                          world.apps[-1].state.runtime.runs), run_id)) == 2
        await world.crash()
        async with world.client() as client:
            made = await client.post("/v1/sessions", json={
                "agent_version": first["agent_version"], "wallet_id": first["wallet_id"]})
            run_id = (await run(client, made.json()["session_id"]))["run_id"]
            app = (client, world.provider, world.clock, world.apps[-1].state.runtime.runs)
            assert await _dispatched(app, run_id) == []
            assert len(of(await event_list(client, run_id), "tool_call.paced")) == 2

    scenario(test)
