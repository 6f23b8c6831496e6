"""What the executor does with one call: its final receipt, progress, and faults
(docs/executor-simulator.md).

Plans and faults are data (pydantic, frozen, `kind` as discriminator), like the provider's
steps, so scenario files can carry them later. A fault that could never fire under its plan
(reorder with one progress receipt) is refused here: a check asking for it would test nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from arck.simulator.errors import UsageError, fault_path

__all__ = [
    "FAULT_KINDS",
    "FINAL_KINDS",
    "CallPlan",
    "ConcurrentClaimers",
    "CrashAfterEffect",
    "CrashAfterStore",
    "DetachAfter",
    "DetachBefore",
    "Duplicate",
    "ExecutorFault",
    "HandlerError",
    "Late",
    "LostConfirmation",
    "PlanError",
    "Rebind",
    "Reorder",
    "SecondFinal",
    "Slow",
    "Stall",
    "make_plan",
]

FINAL_KINDS = ("completed", "failed", "cancelled", "submission", "reconciliation_required")
_ReceiptChoice = Literal["accepted", "progress", "final"]


class PlanError(UsageError):
    """A plan the harness wrote is malformed: a usage error, never a target failure."""


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Duplicate(_Data):
    """The chosen receipt (the first progress one for `progress`) is delivered twice in a row,
    byte-identical: the platform must answer the second `replayed: true` (EXE-08)."""

    kind: Literal["duplicate"] = "duplicate"
    receipt: _ReceiptChoice = "final"


class Reorder(_Data):
    """All progress receipts are stored, then delivered in a seeded order that is not their
    sequence order: a sequence not above the last must be refused (EXE-14)."""

    kind: Literal["reorder"] = "reorder"


class Late(_Data):
    """The final receipt is stored but held until `SimulatedExecutor.release(call_id)`
    (e.g. after the run ended: EXE-13)."""

    kind: Literal["late"] = "late"


class LostConfirmation(_Data):
    """The answer to `accepted` is treated as lost: the same bytes are sent again, and only
    that second answer may confirm; no side effect happens before it (EXE-06, EXE-08)."""

    kind: Literal["lost_confirmation"] = "lost_confirmation"


class CrashAfterEffect(_Data):
    """The side effect is done, then the process dies before the final receipt is stored."""

    kind: Literal["crash_after_effect"] = "crash_after_effect"


class CrashAfterStore(_Data):
    """The chosen receipt (the first progress one for `progress`) is stored, then the process
    dies before sending it; `restart()` delivers it (EXE-07)."""

    kind: Literal["crash_after_store"] = "crash_after_store"
    receipt: _ReceiptChoice = "final"


class DetachBefore(_Data):
    """The claim is given up before `accepted` is stored or sent: nothing runs."""

    kind: Literal["detach_before"] = "detach_before"


class DetachAfter(_Data):
    """The claim is given up once acceptance is confirmed, before the handler: nothing runs,
    the call should become `reconciliation_required`."""

    kind: Literal["detach_after"] = "detach_after"


class HandlerError(_Data):
    """The handler raises (after its side effect when `effect`): the outcome is unknown, so
    the final receipt is `reconciliation_required`, never `failed` (EXE-11)."""

    kind: Literal["handler_error"] = "handler_error"
    effect: bool = True


class Slow(_Data):
    """The handler takes `seconds` on the harness clock (`target.control.advance`) between
    its progress receipts and its side effect."""

    kind: Literal["slow"] = "slow"
    seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)]


class ConcurrentClaimers(_Data):
    """`claimers` executors (this one and peers with the same bindings) claim the call at
    once from a thread pool; every winner goes on with the plan (EXE-01: one should win)."""

    kind: Literal["concurrent_claimers"] = "concurrent_claimers"
    claimers: Annotated[int, Field(ge=2, le=16)] = 2


class Stall(_Data):
    """Between its claim and its `accepted`, the executor stalls `seconds` on the harness
    clock (`target.control.advance`) and a peer claims the call meanwhile; after the
    acceptance, a peer that won goes on with the plan's final (`outcome.rivals`). Past the
    lease (EXE-17, profile) the peer wins and the stalled acceptance must be refused, nothing
    run by it; a platform without leases refuses the peer. Either way one executor works."""

    kind: Literal["stall"] = "stall"
    seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 31.0


class SecondFinal(_Data):
    """A faulty executor: once its final is answered, it sends another final, of another
    kind, under a new receipt_id. The platform must refuse it (EXE-14)."""

    kind: Literal["second_final"] = "second_final"


class Rebind(_Data):
    """A faulty executor: once its final is answered, it sends the final's receipt_id again
    with another body. The platform must refuse it and keep the first (EXE-09)."""

    kind: Literal["rebind"] = "rebind"


ExecutorFault = Annotated[
    Duplicate
    | Reorder
    | Late
    | LostConfirmation
    | CrashAfterEffect
    | CrashAfterStore
    | DetachBefore
    | DetachAfter
    | HandlerError
    | Slow
    | ConcurrentClaimers
    | Stall
    | SecondFinal
    | Rebind,
    Field(discriminator="kind"),
]
FAULT_KINDS = (
    "duplicate",
    "reorder",
    "late",
    "lost_confirmation",
    "crash_after_effect",
    "crash_after_store",
    "detach_before",
    "detach_after",
    "handler_error",
    "slow",
    "concurrent_claimers",
    "stall",
    "second_final",
    "rebind",
)
# Faults that end the process's work on the call: one of them at most.
_ENDING = frozenset({"crash_after_effect", "crash_after_store", "detach_before", "detach_after"})


class CallPlan(_Data):
    """One call: `progress` receipts, then a final receipt of kind `final`.

    `result` (completed, submission, reconciliation_required) defaults to
    `{"operation_key": KEY, "status": "done"}`; `error` (failed) to a business error;
    `reason` (cancelled) is optional.
    """

    final: Literal["completed", "failed", "cancelled", "submission",
                   "reconciliation_required"] = "completed"
    result: Any = None
    error: Mapping[str, str] | None = None
    reason: Annotated[str, Field(min_length=1)] | None = None
    progress: Annotated[int, Field(ge=0, le=50)] = 0
    faults: Sequence[ExecutorFault] = ()

    @field_validator("faults")
    @classmethod
    def _frozen_faults(cls, faults: Sequence[ExecutorFault]) -> tuple[ExecutorFault, ...]:
        return tuple(faults)

    @model_validator(mode="after")
    def _consistent(self) -> CallPlan:
        kinds = [fault.kind for fault in self.faults]
        if len(set(kinds)) < len(kinds):
            raise ValueError(f"faults: a kind appears twice in {kinds}")
        ending = sorted(_ENDING.intersection(kinds))
        if len(ending) > 1:
            raise ValueError(f"faults: {' and '.join(ending)} each end the work: one at most")
        if self.error is not None and self.final != "failed":
            raise ValueError("error: only a failed receipt carries one")
        if self.reason is not None and self.final != "cancelled":
            raise ValueError("reason: only a cancelled receipt carries one")
        if self.result is not None and self.final in ("failed", "cancelled"):
            raise ValueError(f"result: a {self.final} receipt carries none")
        if "stall" in kinds and "concurrent_claimers" in kinds:
            raise ValueError("faults: stall brings its own rival; not with concurrent_claimers")
        if "reorder" in kinds and self.progress < 2:
            raise ValueError("faults: reorder needs progress >= 2")
        for fault in self.faults:
            chosen = getattr(fault, "receipt", None)
            if chosen == "progress" and self.progress < 1:
                raise ValueError(f"faults: {fault.kind} of a progress receipt needs progress >= 1")
        return self

    def fault(self, kind: str) -> Any:
        """The plan's fault of `kind`, or None."""
        return next((f for f in self.faults if f.kind == kind), None)


def make_plan(data: CallPlan | Mapping[str, Any] | None = None, **members: Any) -> CallPlan:
    """Validate a plan (a mapping, keywords, or a plan as is), or raise PlanError naming the
    field, e.g. `faults[0].seconds`."""
    if isinstance(data, CallPlan) and not members:
        return data
    try:
        base = data.model_dump() if isinstance(data, CallPlan) else dict(data or {})
        return CallPlan.model_validate({**base, **members})
    except ValidationError as exc:
        lines = [f"{fault_path(error['loc'], '(plan)')}: {error['msg']}"
                 for error in exc.errors()]
        raise PlanError("call plan: " + "; ".join(lines)) from None

