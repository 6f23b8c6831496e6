"""Scripts: validation that names the field, tags, and one step per call per conversation."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import pytest
from providerkit import BASE, conversation, provider

from arck.simulator.errors import UsageError
from arck.simulator.provider import ScriptError, SimulatedProvider, Step, script_tag
from arck.simulator.provider.script import make_script, script_name


@pytest.mark.parametrize(
    ("steps", "where"),
    [
        ([{"faults": [{"kind": "slow", "seconds": 0}]}], "steps[0].faults[0].seconds"),
        ([{}, {"faults": [{"kind": "nope"}]}], "steps[1].faults[0]"),
        ([{"tool_calls": [{"name": "bad name"}]}], "steps[0].tool_calls[0].name"),
        ([{"tool_calls": [{"name": "arck_request_input"}]}], "steps[0].tool_calls[0].name"),
        ([{"tool_calls": []}], "steps[0].tool_calls"),
        ([{"txt": "typo"}], "steps[0].txt"),
        ([{"side_effect": 3}], "steps[0].side_effect"),
        ([{"faults": [{"kind": "usage_drift", "factor": -1}]}], "steps[0].faults[0].factor"),
        ([{"request_input": "a", "request_approval": "b"}], "steps[0]: Value error, request_input"),
        ([{"text": "x", "faults": [{"kind": "rate_limit"}]}], "steps[0]: Value error, faults"),
        ([{"faults": [{"kind": "lost_response"}, {"kind": "lost_response"}]}],
         "steps[0]: Value error, faults"),
        ([{"faults": [{"kind": "usage_drift"}, {"kind": "usage_missing"}]}],
         "steps[0]: Value error, faults"),
    ],
)
def test_bad_steps_are_refused_naming_the_field(steps: list[Any], where: str) -> None:
    with pytest.raises(ScriptError, match=rf"script 'x': .*{re.escape(where)}"):
        make_script("x", steps)


def test_a_script_error_is_a_usage_error_and_names_are_registered_once() -> None:
    p = provider()
    p.add_script("once", [])
    with pytest.raises(UsageError, match="already registered"):
        p.add_script("once", [])
    with pytest.raises(ScriptError, match="name"):
        p.add_script("bad name!", [])


def test_the_tag_is_read_from_system_and_developer_messages_only() -> None:
    tag = script_tag("s-1.v2")
    assert script_name([{"role": "developer", "content": [{"type": "text", "text": tag}]}]) == (
        "s-1.v2"
    )
    assert script_name([{"role": "user", "content": tag}]) is None
    assert script_name([
        {"role": "system", "content": "plain"},
        {"role": "system", "content": f"{script_tag('first')} {script_tag('second')}"},
    ]) == "first"


def test_each_conversation_follows_its_own_script_in_call_order() -> None:
    p = provider()
    p.add_script("a", [Step(text="a0"), Step(text="a1")])
    p.add_script("b", [Step(text="b0"), Step(text="b1")])

    async def scenario() -> list[str]:
        said = []
        async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
            for name in ("a", "b", "b", "a"):
                body = {"model": "m", "messages": conversation(name, "go")}
                said.append((await http.post("/chat/completions", json=body)).json()
                            ["choices"][0]["message"]["content"])
        return said

    assert asyncio.run(scenario()) == ["a0", "b0", "b1", "a1"]
    assert [(r.conversation, r.step) for r in p.records()] == [("a", 0), ("b", 0), ("b", 1),
                                                               ("a", 1)]


def test_untagged_requests_follow_their_models_script() -> None:
    """A summary request carries no tag: a script registered for its model answers it."""
    sim = SimulatedProvider()
    sim.add_model_script("sim-summary", [Step(text="First summary."),
                                         Step(text="Second summary.")])
    body = {"model": "sim-summary", "messages": [{"role": "user", "content": "Summarize"}]}
    with httpx.Client(transport=sim.transport(), base_url="http://p/v1") as client:
        texts = [client.post("/chat/completions", json=body).json()["choices"][0]["message"]
                 ["content"] for _ in range(2)]
        other = client.post("/chat/completions", json={**body, "model": "sim-1"}).json()
    assert texts == ["First summary.", "Second summary."]
    assert other["choices"][0]["message"]["content"] not in texts
    assert [r.conversation for r in sim.records()] == [
        "model:sim-summary", "model:sim-summary", None]
