"""The simulated executor: arck's own client of a target's executor API (docs/executors.md),
with a business system that counts side effects and faults chosen per call
(docs/executor-simulator.md).

```python
executor = SimulatedExecutor.register(target, [binding_id], name=ctx.name("executor"))
outcome = executor.execute(call_id, CallPlan(progress=2, faults=[Duplicate()]))
assert executor.business.count(outcome.operation_key) == 1
```

It never imports the reference: every request is a target step, and checks judge the
platform from the exchanges in a `CallOutcome` and the counts of the `BusinessSystem`.
"""

from __future__ import annotations

from arck.simulator.executor.business import BusinessSystem, Effect
from arck.simulator.executor.executor import ExecutorDead, SimulatedExecutor
from arck.simulator.executor.journal import Journal, JournalEntry, StoredReceipt, canonical_bytes
from arck.simulator.executor.outcome import CallOutcome, Delivery, StepRefused
from arck.simulator.executor.plan import (
    FAULT_KINDS,
    FINAL_KINDS,
    CallPlan,
    ConcurrentClaimers,
    CrashAfterEffect,
    CrashAfterStore,
    DetachAfter,
    DetachBefore,
    Duplicate,
    ExecutorFault,
    HandlerError,
    Late,
    LostConfirmation,
    PlanError,
    Rebind,
    Reorder,
    SecondFinal,
    Slow,
    Stall,
    make_plan,
)
from arck.simulator.executor.receipts import operation_key

__all__ = [
    "FAULT_KINDS",
    "FINAL_KINDS",
    "BusinessSystem",
    "CallOutcome",
    "CallPlan",
    "ConcurrentClaimers",
    "CrashAfterEffect",
    "CrashAfterStore",
    "Delivery",
    "DetachAfter",
    "DetachBefore",
    "Duplicate",
    "Effect",
    "ExecutorDead",
    "ExecutorFault",
    "HandlerError",
    "Journal",
    "JournalEntry",
    "Late",
    "LostConfirmation",
    "PlanError",
    "Rebind",
    "Reorder",
    "SecondFinal",
    "SimulatedExecutor",
    "Slow",
    "Stall",
    "StepRefused",
    "StoredReceipt",
    "canonical_bytes",
    "make_plan",
    "operation_key",
]
