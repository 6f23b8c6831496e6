"""Receipt ids and bodies, derived only from names, call ids and counters, so the same
scenario sends the same bytes every time."""

from __future__ import annotations

from typing import Any

from arck.simulator.executor.plan import CallPlan

__all__ = ["final_body", "operation_key", "rebound", "receipt_id", "second_final",
           "unknown_result"]


def operation_key(call_id: str) -> str:
    """The business operation a call stands for: the same for every executor and attempt,
    so a handler run twice for one call (by a restart or a rival) counts twice under it."""
    return f"op:{call_id}"


def receipt_id(executor: str, call_id: str, attempt: int, label: str) -> str:
    """`label`: accepted, progress-N, final. Unique per call (EXE-09) across executors and
    across this executor's claims of the call."""
    return f"{executor}:{call_id}:a{attempt}:{label}"


def unknown_result(key: str, reason: str) -> dict[str, Any]:
    """What a `reconciliation_required` receipt says when the executor cannot know whether
    the operation happened (EXE-11)."""
    return {"outcome": "unknown", "operation_key": key, "reason": reason}


def final_body(plan: CallPlan, key: str) -> tuple[str, dict[str, Any]]:
    """The final receipt's kind and members (receipt_id and claim_id added by the caller)."""
    default = {"operation_key": key, "status": "done"}
    if plan.final == "failed":
        error = dict(plan.error) if plan.error is not None else {
            "code": "business_error", "message": f"operation {key} was refused"}
        return "failed", {"error": error}
    if plan.final == "cancelled":
        return "cancelled", {} if plan.reason is None else {"reason": plan.reason}
    result = plan.result if plan.result is not None else default
    return plan.final, {"result": result}


def second_final(first_kind: str, key: str) -> tuple[str, dict[str, Any]]:
    """A faulty executor's second final: another kind than its first (EXE-14)."""
    if first_kind == "completed":
        return "failed", {"error": {"code": "business_error",
                                    "message": f"operation {key}: a second final"}}
    return "completed", {"result": {"operation_key": key, "status": "done", "second": True}}


def rebound(body: dict[str, Any]) -> dict[str, Any]:
    """The same receipt with another body (EXE-09): its result, error or reason changed."""
    if "result" in body:
        return {**body, "result": {"rebound": body["result"]}}
    if "error" in body:
        return {**body, "error": {**body["error"], "message": "rebound"}}
    return {**body, "reason": "rebound"}
