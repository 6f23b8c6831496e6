"""CAP-10, CAP-12 in the reference: an operation requiring a subject is refused before
dispatch in a session whose creator named none, whatever else it declares, and dispatched in
one that names it; the refusal is not counted by pacing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from runkit import App, event_list, of, one_app, post, run, session, settled

from arck.simulator.provider import Step, ToolCall

REQUIRED: dict[str, Any] = {"version": 1, "enabled": True, "scope": "refund",
                            "subject": {"required": True}}


@pytest.mark.parametrize("hints", [
    {}, {"risk": {"level": "low"}, "execution": {"readonly": True, "idempotent": True}}])
def test_a_session_naming_no_subject_never_dispatches_the_call(hints: dict[str, Any]) -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [
            Step(tool_calls=[ToolCall(name="lookup", arguments={"order": 1})]),
            Step(text="Done.")])
        made = await session(client, "s", capability={**REQUIRED, **hints})
        run_id = (await run(client, made["session_id"]))["run_id"]
        snapshot = await settled(client, clock, run_id)
        assert snapshot["end_reason"] == "completed"  # the model was told, and answered
        calls = (await client.get(f"/v1/runs/{run_id}/tool-calls")).json()["tool_calls"]
        assert calls == []
        [refused] = of(await event_list(client, run_id), "tool_call.refused")
        assert refused["code"] == "subject_required"
        last = json.loads(provider.recorded()[-1].body)["messages"]
        [told] = [json.loads(m["content"]) for m in last if m["role"] == "tool"]
        assert told["error"]["code"] == "subject_required"

    one_app(test)


def test_a_session_whose_creator_named_a_subject_dispatches_it() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        provider.add_script("s", [
            Step(tool_calls=[ToolCall(name="lookup", arguments={"order": 1})]),
            Step(text="Done.")])
        first = await session(client, "s", capability=REQUIRED)
        named = await post(client, "/v1/sessions", {
            "agent_version": first["agent_version"], "wallet_id": first["wallet_id"],
            "subject": "user:alice"})
        run_id = (await run(client, named["session_id"]))["run_id"]
        assert (await settled(client, clock, run_id))["state"] == "waiting_tools"
        calls = (await client.get(f"/v1/runs/{run_id}/tool-calls")).json()["tool_calls"]
        assert [c["name"] for c in calls] == ["lookup"]
        assert of(await event_list(client, run_id), "tool_call.refused") == []

    one_app(test)
