"""Mutants of receipt intake: one defect each in how a final receipt is taken."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.mutants.base import serve
from arck.reference.runtime.executor_wire import DetachAnswer, Receipt
from arck.reference.runtime.receipts import PROTECTED, history_value
from arck.reference.runtime.service import Runtime


class ProjectsProtectedRuntime(Runtime):
    """Projects every result to the tool's budget, a submission's or an unknown business
    outcome's too (BUD-18 protects them)."""

    def _context_text(self, receipt: Receipt, budget: int) -> tuple[str, dict[str, Any]]:
        if receipt.kind in PROTECTED:
            receipt = receipt.model_copy(
                update={"kind": "completed", "result": history_value(receipt)})
        return super()._context_text(receipt, budget)


def projects_protected() -> FastAPI:
    return serve(runtime_class=ProjectsProtectedRuntime)


class DetachUnstoredRuntime(Runtime):
    """A detach after acceptance writes its `reconciliation_required` receipt into the
    histories but not among the stored receipts: the call's fact is then missing when a
    summary later takes its record away (the sampled service.py:351 survivor)."""

    def detach(self, principal: Principal, call_id: str, data: object) -> DetachAnswer:
        answer = super().detach(principal, call_id, data)
        with self.store.transaction() as db:
            db.execute("DELETE FROM receipts WHERE call_id = ? AND receipt_id LIKE 'detach:%'",
                       (call_id,))
        return answer


def detach_unstored() -> FastAPI:
    return serve(runtime_class=DetachUnstoredRuntime)
