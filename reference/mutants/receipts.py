"""Mutants of receipt intake: one defect each in how a final receipt is taken."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from arck.reference.mutants.base import serve
from arck.reference.runtime.service import Runtime
from arck.reference.runtime.wire import Receipt


class ProjectsProtectedRuntime(Runtime):
    """Projects every result to the tool's budget, a submission's or an unknown business
    outcome's too (BUD-18 protects them)."""

    def _context_text(self, receipt: Receipt, budget: int) -> tuple[str, dict[str, Any]]:
        return super()._context_text(receipt.model_copy(update={"kind": "completed"}), budget)


def projects_protected() -> FastAPI:
    return serve(runtime_class=ProjectsProtectedRuntime)
