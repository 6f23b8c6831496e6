"""The simulated executor end to end against the in-process reference (`build_target`): a run
whose model asks for a tool, the call executed by the executor through the target's steps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from arck.simulator.control import Control
from arck.simulator.executor import (
    CallPlan,
    ConcurrentClaimers,
    CrashAfterStore,
    Duplicate,
    LostConfirmation,
    SimulatedExecutor,
)
from arck.simulator.factory import build_target
from arck.simulator.provider import Step, ToolCall, script_tag
from arck.simulator.target import Exchange, ExecutorTarget

TOOL = "arck_sample"
OPEN = {"type": "object"}
CHANNEL = {"name": "arck-exe-channel", "model": "sim-1", "input_capacity": 100_000,
           "total_capacity": 128_000, "output_capacity": 4_000, "timeout_ms": 30_000,
           "prices": {"input": 2_000_000, "cached_input": 500_000, "output": 8_000_000}}


def ok(exchange: Exchange) -> Any:
    assert 200 <= exchange.status < 300, exchange.describe()
    return exchange.json()


class World:
    """One run of an agent whose model calls the tool once, then answers in text."""

    def __init__(self, target: ExecutorTarget, name: str) -> None:
        control = target.control
        assert isinstance(control, Control)
        self.target, self.control = target, control
        self.binding = ok(target.create_binding(f"arck-{name}-binding"))["binding_id"]
        script = f"arck-{name}"
        control.provider.add_script(script, [
            Step(tool_calls=[ToolCall(name=TOOL, arguments={"order": name})]),
            Step(text="Done."),
        ])
        tool = {"name": TOOL, "description": "arck sample", "binding_id": self.binding,
                "input_schema": OPEN, "output_schema": OPEN, "max_result_context_bytes": 1024}
        tool_set = ok(target.publish_tool_set({"name": f"arck-{name}-tools", "tools": [tool]}))
        channel = ok(target.create_channel({**CHANNEL, "name": f"arck-{name}-channel"}))
        version = ok(target.publish_agent_version(f"arck-{name}-agent", {
            "tool_set_id": tool_set["tool_set_id"], "channel_id": channel["channel_id"],
            "system_prompt": f"You help. {script_tag(script)}"}))["agent_version"]
        wallet = ok(target.create_wallet({"name": f"arck-{name}-wallet"}))["wallet_id"]
        ok(target.deposit(wallet, 10_000_000))
        session = ok(target.create_session({"agent_version": version, "wallet_id": wallet}))
        self.run_id = ok(target.create_run(session["session_id"], {"input": "Go."}))["run_id"]
        self.session_id = session["session_id"]

    def settle(self) -> dict[str, Any]:
        for _ in range(100):
            run = ok(self.target.get_run(self.run_id))
            if run["state"] in ("ended", "waiting_tools"):
                return dict(run)
            deadline = self.control.next_deadline()
            if deadline is None:
                return dict(run)
            self.control.advance(max(0.0, deadline - self.control.now()))
        raise AssertionError(f"run {self.run_id} never settled")

    def call_id(self) -> str:
        assert self.settle()["state"] == "waiting_tools"
        [call] = ok(self.target.tool_calls(self.run_id))["tool_calls"]
        return str(call["call_id"])


@pytest.fixture
def target() -> Iterator[ExecutorTarget]:
    built = build_target("reference")
    assert isinstance(built, ExecutorTarget)
    yield built
    built.close()


def test_a_run_with_a_tool_call_is_executed_end_to_end(target: ExecutorTarget) -> None:
    world = World(target, "e2e")
    executor = SimulatedExecutor.register(target, [world.binding], name="arck-exe")
    call_id = world.call_id()
    assert [c["call_id"] for c in executor.candidates()] == [call_id]
    out = executor.execute(call_id, CallPlan(progress=2, result={"refund": 40}))
    assert [x.status for x in out.exchanges] == [201, 200, 200, 200, 200], out.describe()
    assert out.grant["arguments"] == {"order": "e2e"}
    assert world.settle()["state"] == "ended"
    assert executor.business.count(f"op:{call_id}") == 1
    assert executor.business.unconfirmed() == []
    assert json.dumps({"refund": 40}) in json.dumps(
        ok(target.history(world.session_id, "formal")))


def test_a_duplicate_final_is_replayed_without_a_second_effect(target: ExecutorTarget) -> None:
    world = World(target, "dup")
    executor = SimulatedExecutor.register(target, [world.binding], name="arck-exe")
    call_id = world.call_id()
    out = executor.execute(call_id, CallPlan(faults=[Duplicate(), LostConfirmation()]))
    first, second = out.of_kind("final")
    assert first.exchange.request_body == second.exchange.request_body
    assert second.answer()["replayed"] is True, out.describe()
    assert second.answer() == {**first.answer(), "replayed": True}
    accepted = out.of_kind("accepted")
    assert [d.lost for d in accepted] == [True, False]
    assert accepted[1].answer()["replayed"] is True
    assert executor.business.count(f"op:{call_id}") == 1
    assert executor.fault_counts()["duplicate"] == 1
    assert world.settle()["state"] == "ended"


def test_a_restart_redelivers_the_stored_final_without_rerunning(target: ExecutorTarget) -> None:
    world = World(target, "restart")
    executor = SimulatedExecutor.register(target, [world.binding], name="arck-exe")
    call_id = world.call_id()
    out = executor.execute(call_id, CallPlan(faults=[CrashAfterStore(receipt="final")]))
    assert out.crashed == "after_store"
    assert world.settle()["state"] == "waiting_tools"
    successor = executor.restart()
    recovered = successor.recovered[call_id]
    assert recovered.handler_runs == 0
    [final] = recovered.deliveries
    stored = executor.journal.get(call_id)
    assert stored is not None
    assert final.exchange.request_body == stored.receipts[-1].body
    assert final.exchange.status == 200, recovered.describe()
    assert executor.business.count(f"op:{call_id}") == 1
    assert world.settle()["state"] == "ended"


def test_concurrent_claimers_in_process_let_exactly_one_win(target: ExecutorTarget) -> None:
    world = World(target, "race")
    executor = SimulatedExecutor.register(target, [world.binding], name="arck-exe")
    call_id = world.call_id()
    out = executor.execute(call_id, CallPlan(faults=[ConcurrentClaimers(claimers=4)]))
    assert sorted(x.status for x in out.claims) == [201, 409, 409, 409], out.describe()
    assert out.rivals == []
    assert executor.business.repeated() == {}
    assert world.settle()["state"] == "ended"
