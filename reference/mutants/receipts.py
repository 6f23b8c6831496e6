"""Mutants of receipt intake: one defect each in how a final receipt is taken."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from arck.reference.mutants.base import serve
from arck.reference.runtime.executor_wire import Receipt
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
