"""Mutants of what stays recoverable after a projection (BUD-16, BUD-20): the formal history
returns less than the receipt that was stored."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.canonical import canonical_text
from arck.reference.models import pointer
from arck.reference.mutants.base import serve
from arck.reference.runtime.service import Runtime

_STATUS_KEYS = frozenset(("id", "status", "state", "next_cursor", "cursor", "has_more", "total",
                          "code", "error", "type"))


class _FormalRewritten(Runtime):
    """The formal history with each projected receipt's result replaced by `_result`."""

    def history(self, principal: Principal, session_id: str, kind: str) -> list[dict[str, Any]]:
        items = super().history(principal, session_id, kind)
        if kind != "formal":
            return items
        return [self._rewrite(item) for item in items]

    def _rewrite(self, item: dict[str, Any]) -> dict[str, Any]:
        if item.get("type") != "receipt" or item.get("kind") != "completed" or "result" not in item:
            return item
        rows = self.store.read("SELECT projection FROM receipts WHERE call_id = ? AND "
                               "receipt_id = ?", (item.get("call_id"), item.get("receipt_id")))
        if not rows or rows[0][0] == canonical_text(item["result"]):
            return item  # not projected: within its budget
        return {**item, "result": self._result(item["result"], json.loads(rows[0][0]))}

    def _result(self, result: Any, projection: Any) -> Any:
        raise NotImplementedError


class FormalProjectedRuntime(_FormalRewritten):
    """The formal history returns a projected receipt's projection (preview head and tail) in
    place of its full result."""

    def _result(self, result: Any, projection: Any) -> Any:
        return projection


class FormalDropsLostRuntime(_FormalRewritten):
    """The formal history's receipt lacks the status-like members (cursors, ids, status) its
    projection lost: they were moved out at projection time, and only those the projection
    kept (in preserved_fields, the head or the tail) come back."""

    def _result(self, result: Any, projection: Any) -> Any:
        kept = projection.get("preserved_fields", {}) if isinstance(projection, dict) else {}
        box = projection.get("preview", {}) if isinstance(projection, dict) else {}
        text = f"{box.get('head', '')}\n{box.get('tail', '')}" if isinstance(box, dict) else ""

        def keep(node: Any, path: list[str | int]) -> Any:
            if isinstance(node, list):
                return [keep(child, [*path, i]) for i, child in enumerate(node)]
            if not isinstance(node, dict):
                return node
            out = {}
            for key, child in node.items():
                at = [*path, key]
                scalar = not isinstance(child, dict | list)
                member = f"{canonical_text(key)}:{canonical_text(child)}"
                if key in _STATUS_KEYS and scalar and pointer(at) not in kept and (
                        member not in text):
                    continue
                out[key] = keep(child, at)
            return out

        return keep(result, [])


def formal_receipt_projected() -> FastAPI:
    return serve(runtime_class=FormalProjectedRuntime)


def formal_drops_lost_fields() -> FastAPI:
    return serve(runtime_class=FormalDropsLostRuntime)
