"""The simulated executor's wire behaviour per call and per fault, against the fake platform."""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_executor_fake import FakePlatform

from arck.simulator.executor import (
    FAULT_KINDS,
    CallPlan,
    ConcurrentClaimers,
    DetachAfter,
    DetachBefore,
    Duplicate,
    HandlerError,
    Late,
    LostConfirmation,
    PlanError,
    Rebind,
    Reorder,
    SecondFinal,
    SimulatedExecutor,
    Slow,
    Stall,
    StepRefused,
    make_plan,
)
from arck.simulator.executor.rules import (
    claims_on_held_calls,
    receipt_ids_changed,
    second_finals_taken,
)


def setup(**platform: Any) -> tuple[FakePlatform, SimulatedExecutor, str]:
    fake = FakePlatform(**platform)
    executor = SimulatedExecutor.register(fake, ["bnd-1"], name="ex")  # type: ignore[arg-type]
    return fake, executor, fake.add_call()


def kinds(fake: FakePlatform, call_id: str) -> list[str]:
    return [json.loads(body)["kind"] for body in fake.receipts_to(call_id)]


def test_a_plain_call_is_claimed_accepted_run_once_and_completed() -> None:
    fake, executor, call_id = setup()
    out = executor.execute(call_id)
    assert [x.status for x in out.exchanges] == [201, 200, 200]
    assert kinds(fake, call_id) == ["accepted", "completed"]
    assert fake.calls[call_id].state == "completed"
    assert out.operation_key == f"op:{call_id}"
    assert out.confirmed
    assert out.handler_runs == 1
    assert executor.business.count(out.operation_key) == 1
    assert executor.business.unconfirmed() == []
    final = json.loads(out.of_kind("final")[0].body)
    assert final == {"receipt_id": f"ex:{call_id}:a1:final", "claim_id": "cl-1",
                     "kind": "completed",
                     "result": {"operation_key": f"op:{call_id}", "status": "done"}}


@pytest.mark.parametrize(("plan", "kind", "member"), [
    (CallPlan(final="failed"), "failed", "error"),
    (CallPlan(final="cancelled", reason="asked"), "cancelled", "reason"),
    (CallPlan(final="submission", result={"ticket": 7}), "submission", "result"),
    (CallPlan(final="reconciliation_required"), "reconciliation_required", "result"),
])
def test_each_final_kind_is_sent_with_its_member(plan: CallPlan, kind: str, member: str) -> None:
    _fake, executor, call_id = setup()
    out = executor.execute(call_id, plan)
    final = json.loads(out.of_kind("final")[0].body)
    assert final["kind"] == kind
    assert member in final
    assert out.of_kind("final")[0].exchange.status == 200


def test_every_receipt_is_journaled_before_it_is_sent_and_effects_follow_confirmation() -> None:
    fake, executor, call_id = setup()
    seen: list[tuple[str, bool, int]] = []

    def look(call: str, body: bytes) -> None:
        entry = executor.journal.get(call)
        assert entry is not None, "operation key and assignment journaled before accepted"
        assert body in [r.body for r in entry.receipts]
        seen.append((json.loads(body)["kind"], entry.confirmed, executor.business.total()))

    fake.on_receipt = look
    executor.execute(call_id, CallPlan(progress=2))
    assert seen == [("accepted", False, 0), ("progress", True, 0), ("progress", True, 0),
                    ("completed", True, 1)]


def test_a_refused_claim_runs_nothing() -> None:
    fake, executor, call_id = setup()
    other = SimulatedExecutor.register(fake, ["bnd-1"], business=executor.business,  # type: ignore[arg-type]
                                       name="other")
    assert other.execute(call_id).confirmed
    out = executor.execute(call_id)
    assert out.refused is not None
    assert out.refused.status == 409
    assert out.deliveries == []
    assert executor.business.total() == 1


def test_an_unconfirmed_acceptance_runs_nothing() -> None:
    fake, executor, call_id = setup()
    claim_then_end = fake.claim  # the run ends between the claim and `accepted` (EXE-17)

    def claim(call: str, role: str) -> Any:
        exchange = claim_then_end(call, role)
        fake.calls[call].run_ended = True
        return exchange

    fake.claim = claim  # type: ignore[method-assign]
    out = executor.execute(call_id)
    assert not out.confirmed
    assert out.refused is not None
    assert out.refused.status == 409
    assert executor.business.total() == 0
    assert kinds(fake, call_id) == ["accepted"]


def test_duplicate_sends_the_chosen_receipt_twice_byte_identical() -> None:
    for chosen in ("accepted", "progress", "final"):
        _fake, executor, call_id = setup()
        out = executor.execute(call_id, CallPlan(progress=1, faults=[Duplicate(receipt=chosen)]))
        twice = [d for d in out.deliveries if d.repeat]
        assert len(twice) == 1, chosen
        first = next(d for d in out.deliveries if d.receipt_id == twice[0].receipt_id)
        assert first.body == twice[0].body
        assert twice[0].answer()["replayed"] is True
        assert executor.business.total() == 1
        assert executor.fault_counts()["duplicate"] == 1


def test_reorder_sends_progress_out_of_sequence() -> None:
    _fake, executor, call_id = setup()
    out = executor.execute(call_id, CallPlan(progress=3, faults=[Reorder()]))
    sequences = [json.loads(d.body)["sequence"] for d in out.of_kind("progress")]
    assert sorted(sequences) == [1, 2, 3]
    assert sequences != [1, 2, 3]
    assert 409 in [d.exchange.status for d in out.of_kind("progress")]
    again = setup()[1].execute("tc-1", CallPlan(progress=3, faults=[Reorder()]))
    assert [d.body for d in again.of_kind("progress")] == [d.body for d in out.of_kind(
        "progress")], "the order comes from the seed and the call, nothing else"


def test_late_holds_the_final_until_released() -> None:
    fake, executor, call_id = setup()
    out = executor.execute(call_id, CallPlan(faults=[Late()]))
    assert out.held
    assert kinds(fake, call_id) == ["accepted"]
    assert executor.business.total() == 1
    fake.calls[call_id].run_ended = True
    released = executor.release(call_id)
    final = released.of_kind("final")[0].answer()
    assert final["run_ended"] is True
    assert final["applied"] is False
    assert not released.held
    with pytest.raises(PlanError, match="no final receipt is held"):
        executor.release(call_id)


def test_lost_confirmation_resends_accepted_before_any_effect() -> None:
    fake, executor, call_id = setup()
    totals: list[int] = []
    fake.on_receipt = lambda call, body: totals.append(executor.business.total())
    out = executor.execute(call_id, CallPlan(faults=[LostConfirmation()]))
    accepted = out.of_kind("accepted")
    assert [d.lost for d in accepted] == [True, False]
    assert accepted[0].body == accepted[1].body
    assert accepted[1].repeat
    assert accepted[1].answer()["replayed"] is True
    assert out.confirmed
    assert totals == [0, 0, 1]


def test_detach_before_acceptance_stores_and_runs_nothing() -> None:
    _fake, executor, call_id = setup()
    out = executor.execute(call_id, CallPlan(faults=[DetachBefore()]))
    assert out.detach is not None
    assert out.detach.json()["state"] == "dispatchable"
    assert out.deliveries == []
    assert executor.journal.get(call_id) is None
    again = executor.execute(call_id)
    assert json.loads(again.deliveries[0].body)["receipt_id"] == f"ex:{call_id}:a2:accepted"
    assert executor.business.total() == 1


def test_detach_after_acceptance_runs_nothing() -> None:
    _fake, executor, call_id = setup()
    out = executor.execute(call_id, CallPlan(faults=[DetachAfter()]))
    assert out.confirmed
    assert out.detach is not None
    assert out.detach.json()["state"] == "reconciliation_required"
    assert executor.business.total() == 0
    assert out.handler_runs == 0


@pytest.mark.parametrize("effect", [True, False])
def test_a_handler_error_is_reported_as_reconciliation_required(effect: bool) -> None:
    _fake, executor, call_id = setup()
    out = executor.execute(call_id, CallPlan(final="failed", faults=[HandlerError(effect=effect)]))
    final = json.loads(out.of_kind("final")[0].body)
    assert final["kind"] == "reconciliation_required"
    assert final["result"]["outcome"] == "unknown"
    assert executor.business.total() == int(effect)


def test_slow_moves_the_harness_clock_before_the_effect() -> None:
    fake, executor, call_id = setup()
    assert fake.control is not None
    start = fake.control.now()
    executor.execute(call_id, CallPlan(faults=[Slow(seconds=90)]))
    assert executor.business.effects()[0].at == start + 90
    no_clock, plain, other_call = setup(clock=False)
    with pytest.raises(PlanError, match="slow needs"):
        plain.execute(other_call, CallPlan(faults=[Slow(seconds=1)]))
    assert no_clock.log[-1].url.endswith("/heartbeat"), "refused before any claim"


def test_concurrent_claimers_let_only_the_winner_run() -> None:
    fake, executor, call_id = setup()
    out = executor.execute(call_id, CallPlan(faults=[ConcurrentClaimers(claimers=4)]))
    assert sorted(x.status for x in out.claims) == [201, 409, 409, 409]
    assert out.rivals == []
    assert executor.business.count(f"op:{call_id}") == 1
    assert len(fake.executors) == 4
    executor.execute(fake.add_call(), CallPlan(faults=[ConcurrentClaimers(claimers=3)]))
    assert len(fake.executors) == 4, "peers are registered once"
    assert executor.fault_counts()["concurrent_claimers"] == 2


def test_concurrent_claimers_on_a_platform_granting_every_claim_run_twice() -> None:
    _fake, executor, call_id = setup(double_claim=True)
    out = executor.execute(call_id, CallPlan(faults=[ConcurrentClaimers(claimers=2)]))
    assert [x.status for x in out.claims] == [201, 201]
    assert len(out.rivals) == 1
    assert out.rivals[0].handler_runs == 1
    assert executor.business.repeated() == {f"op:{call_id}": 2}, "the double run shows"
    assert executor.business.unconfirmed() == []


class LenientPlatform(FakePlatform):
    """Takes what it should refuse: a second final, a receipt id with another body."""

    def _judge(self, call: Any, receipt: dict[str, Any], role: str) -> tuple[int, Any]:
        status, data = super()._judge(call, receipt, role)
        if status == 409:
            return 200, {"call_id": call.call_id, "receipt_id": receipt["receipt_id"],
                         "replayed": False, "state": call.state, "applied": True,
                         "run_ended": False}
        return status, data


@pytest.mark.parametrize(("fault", "kind"), [(SecondFinal(), "second_final"),
                                             (Rebind(), "rebind")])
def test_a_faulty_executor_sends_once_after_its_final(fault: Any, kind: str) -> None:
    _fake, executor, call_id = setup()
    out = executor.execute(call_id, CallPlan(faults=[fault]))
    [extra] = [d for d in out.deliveries if d.fault == kind]
    [final] = [d for d in out.of_kind("final") if d.fault is None]
    assert extra.exchange.status == 409
    assert (extra.receipt_id == final.receipt_id) is (kind == "rebind")
    assert extra.body != final.body
    assert executor.business.total() == 1
    assert executor.fault_counts()[kind] == 1
    assert second_finals_taken([out]) == []
    assert receipt_ids_changed([out]) == []
    lenient = LenientPlatform()
    broken = SimulatedExecutor.register(lenient, ["bnd-1"], name="ex")  # type: ignore[arg-type]
    taken = broken.execute(lenient.add_call(), CallPlan(faults=[fault]))
    found = second_finals_taken([taken]) if kind == "second_final" else \
        receipt_ids_changed([taken])
    assert len(found) == 1, found


def test_a_stall_past_the_lease_lets_a_peer_claim_and_work_instead() -> None:
    _fake, executor, call_id = setup()
    out = executor.execute(call_id, CallPlan(faults=[Stall()]))
    assert not out.confirmed
    assert out.refused is not None
    assert out.refused.status == 409  # the acceptance under the lapsed claim
    [peer] = out.rivals
    assert peer.confirmed
    assert peer.executor != out.executor
    assert executor.business.total() == 1
    assert executor.fault_counts()["stall"] == 1
    assert claims_on_held_calls([out, *out.rivals]) == []


def test_a_stall_on_a_platform_keeping_stale_claims_has_two_holders() -> None:
    _fake, executor, call_id = setup(double_claim=True)
    out = executor.execute(call_id, CallPlan(faults=[Stall()]))
    assert out.confirmed
    assert len(out.rivals) == 1
    assert claims_on_held_calls([out, *out.rivals]) != []


def test_a_stall_needs_a_clock() -> None:
    _fake, executor, call_id = setup(clock=False)
    with pytest.raises(PlanError, match="stall needs a target with a clock"):
        executor.execute(call_id, CallPlan(faults=[Stall()]))


def test_fault_counts_name_every_kind_and_only_what_fired() -> None:
    _fake, executor, call_id = setup()
    assert executor.fault_counts() == dict.fromkeys(FAULT_KINDS, 0)
    executor.execute(call_id, CallPlan(progress=1, faults=[Duplicate(), Late()]))
    assert {k: n for k, n in executor.fault_counts().items() if n} == {"late": 1}
    executor.release(call_id)
    assert executor.fault_counts()["duplicate"] == 1


def test_setup_steps_refused_raise_with_the_exchange() -> None:
    fake, executor, _ = setup()
    fake.executors.clear()
    fake.heartbeat = lambda role: fake._answer(  # type: ignore[method-assign]
        "POST", "/v1/executor/heartbeat", b"{}", role, 403, {"error": "no"})
    with pytest.raises(StepRefused, match="heartbeat") as refused:
        executor.heartbeat()
    assert refused.value.exchange.status == 403


@pytest.mark.parametrize(("data", "message"), [
    ({"faults": [{"kind": "reorder"}], "progress": 1}, "reorder needs progress >= 2"),
    ({"faults": [{"kind": "late"}, {"kind": "late"}]}, "appears twice"),
    ({"faults": [{"kind": "detach_before"}, {"kind": "crash_after_effect"}]}, "one at most"),
    ({"final": "completed", "error": {"code": "x", "message": "y"}}, "only a failed"),
    ({"faults": [{"kind": "slow", "seconds": 0}]}, r"faults\[0\]\.seconds"),
    ({"faults": [{"kind": "duplicate", "receipt": "progress"}]}, "needs progress >= 1"),
])
def test_malformed_plans_are_usage_errors_naming_the_field(data: Any, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        make_plan(data)


def test_plans_load_from_data_as_scenario_files_would_carry_them() -> None:
    plan = make_plan({"final": "submission", "progress": 2,
                      "faults": [{"kind": "duplicate", "receipt": "progress"},
                                 {"kind": "slow", "seconds": 5}]})
    assert plan.fault("slow") == Slow(seconds=5)
    assert make_plan(plan.model_dump()) == plan


def test_a_scenario_replays_to_the_same_bytes() -> None:
    def scenario() -> list[bytes | None]:
        fake, executor, call_id = setup()
        executor.execute(call_id, CallPlan(progress=3, faults=[Reorder(), Duplicate()]))
        executor.execute(fake.add_call(), CallPlan(faults=[ConcurrentClaimers(claimers=3)]))
        return [x.request_body for x in fake.log if "/claims" not in x.url]

    assert scenario() == scenario()
