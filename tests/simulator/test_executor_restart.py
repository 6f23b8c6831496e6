"""Crashes and restarts of the simulated executor against the fake platform: a new process
learns only from the journal, re-sends stored receipts byte for byte, and never re-runs a
handler it started (EXE-07, EXE-10)."""

from __future__ import annotations

import json

import pytest
from test_executor_fake import FakePlatform

from arck.simulator.executor import (
    CallPlan,
    CrashAfterEffect,
    CrashAfterStore,
    ExecutorDead,
    Late,
    SimulatedExecutor,
)


def setup() -> tuple[FakePlatform, SimulatedExecutor, str]:
    fake = FakePlatform()
    executor = SimulatedExecutor.register(fake, ["bnd-1"], name="ex")  # type: ignore[arg-type]
    return fake, executor, fake.add_call()


def test_a_crash_after_the_effect_ends_in_reconciliation_without_a_second_run() -> None:
    fake, executor, call_id = setup()
    out = executor.execute(call_id, CallPlan(progress=1, faults=[CrashAfterEffect()]))
    assert out.crashed == "after_effect"
    assert not executor.alive
    assert executor.business.count(f"op:{call_id}") == 1
    with pytest.raises(ExecutorDead):
        executor.execute(fake.add_call())
    successor = executor.restart()
    assert successor.process == 2
    recovered = successor.recovered[call_id]
    assert recovered.handler_runs == 0
    assert recovered.deliveries[0].kind == \
        "reconciliation_required"
    assert json.loads(recovered.deliveries[0].body)["result"]["outcome"] == "unknown"
    assert fake.calls[call_id].state == "reconciliation_required"
    assert executor.business.count(f"op:{call_id}") == 1
    assert successor.restart().recovered == {}, "nothing left after a finished call"


@pytest.mark.parametrize("chosen", ["accepted", "progress", "final"])
def test_a_receipt_stored_but_not_sent_is_sent_after_restart_byte_identical(chosen: str) -> None:
    fake, executor, call_id = setup()
    plan = CallPlan(progress=1, faults=[CrashAfterStore(receipt=chosen)])
    out = executor.execute(call_id, plan)
    assert out.crashed == "after_store"
    entry = executor.journal.get(call_id)
    assert entry is not None
    stored = next(r for r in entry.receipts if r.kind == chosen or (
        chosen == "final" and r.final))
    assert stored.body not in fake.receipts_to(call_id)
    successor = executor.restart()
    recovered = successor.recovered[call_id]
    assert recovered.deliveries[0].body == stored.body
    assert recovered.deliveries[0].exchange.request_body == stored.body
    assert fake.calls[call_id].state in ("completed", "reconciliation_required")
    assert executor.business.count(f"op:{call_id}") == (1 if chosen != "progress" else 0)
    runs = out.handler_runs + recovered.handler_runs
    assert runs == 1, "the handler runs once over both processes"


def test_an_accepted_stored_before_a_crash_lets_the_new_process_run_the_plan() -> None:
    _fake, executor, call_id = setup()
    executor.execute(call_id, CallPlan(final="submission", faults=[
        CrashAfterStore(receipt="accepted")]))
    assert executor.business.total() == 0
    recovered = executor.restart().recovered[call_id]
    assert [d.kind for d in recovered.deliveries] == ["accepted", "submission"]
    assert recovered.handler_runs == 1
    assert executor.business.effects()[0].process == 2
    assert executor.business.effects()[0].confirmed


def test_a_restart_keeps_a_late_final_held_and_the_new_process_releases_it() -> None:
    fake, executor, call_id = setup()
    executor.execute(call_id, CallPlan(faults=[Late()]))
    successor = executor.restart()
    assert successor.recovered[call_id].deliveries == []
    assert successor.recovered[call_id].held
    released = successor.release(call_id)
    assert released.of_kind("final")[0].exchange.status == 200
    assert fake.calls[call_id].state == "completed"


def test_executing_a_call_whose_handler_ran_claims_but_runs_nothing() -> None:
    fake, executor, call_id = setup()
    executor.execute(call_id)
    fake.calls[call_id].state = "dispatchable"  # a platform that dispatches it again
    again = executor.execute(call_id)
    assert again.claim is not None
    assert again.claim.status == 201
    assert again.already_ran
    assert again.deliveries == []
    assert executor.business.count(f"op:{call_id}") == 1


def test_a_redelivery_after_restart_of_an_answered_receipt_is_not_sent_again() -> None:
    fake, executor, call_id = setup()
    executor.execute(call_id, CallPlan(progress=2, faults=[CrashAfterStore(receipt="final")]))
    before = len(fake.receipts_to(call_id))
    recovered = executor.restart().recovered[call_id]
    assert len(recovered.deliveries) == 1
    assert len(fake.receipts_to(call_id)) == before + 1
