"""Mutants that each break one decision or fixed choice of the profile's budgets and dry-run
(docs/profile.md): the projection's shape, the preserved-field rule's details, the head/tail
split, multimodal detection and layout, depth counting, and how mock receipts are validated.
"""

from __future__ import annotations

import threading
from typing import Any

from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.canonical import (
    MAX_DEPTH,
    ResultLimitError,
    canonical_text,
    check_limits,
    pointer_token,
)
from arck.reference.engine import Engine
from arck.reference.errors import ValidationFailed
from arck.reference.models import DryRunRequest, DryRunResponse
from arck.reference.mutants.base import serve
from arck.reference.projection import (
    MAX_PRESERVED_DEPTH,
    MAX_PRESERVED_VALUE_BYTES,
    Preview,
    Projector,
)

# -- the projection's shape ---------------------------------------------------------------------


class EmptyPreservedProjector(Projector):
    """Keeps `"preserved_fields": {}` when nothing is preserved (counted in the budget)."""

    def skeleton(self, original_bytes: int, attachments: list[Any] | None) -> dict[str, Any]:
        return {**super().skeleton(original_bytes, attachments), "preserved_fields": {}}


# -- preserved fields (BUD-22) -------------------------------------------------------------------


class CharacterLimitProjector(Projector):
    """A value is preservable up to 128 characters of its JSON text, not 128 bytes."""

    def preservable(self, scalar: Any, canonical: bool) -> bool:
        return len(canonical_text(scalar)) <= MAX_PRESERVED_VALUE_BYTES


class AnyKeyProjector(Projector):
    """Every short scalar at depth <= 3 is a candidate, whatever its key."""

    def preserved_candidates(self, value: Any) -> list[tuple[str, Any]]:
        found: list[tuple[int, str, Any]] = []
        level: list[tuple[str, Any]] = [("", value)] if isinstance(value, dict) else []
        for depth in range(1, MAX_PRESERVED_DEPTH + 1):
            deeper: list[tuple[str, Any]] = []
            for path, node in level:
                for key, child in node.items():
                    pointer = f"{path}/{pointer_token(key)}"
                    if isinstance(child, dict):
                        deeper.append((pointer, child))
                    elif not isinstance(child, list) and (
                        self.measure(child) <= MAX_PRESERVED_VALUE_BYTES
                    ):
                        found.append((depth, pointer, child))
            level = deeper
        found.sort(key=lambda item: (item[0], item[1]))
        return [(pointer, scalar) for _, pointer, scalar in found]


def _document_order(value: Any) -> dict[str, int]:
    """Pointer → position in a depth-first walk of `value`'s objects, members as written."""
    order: dict[str, int] = {}
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, node = stack.pop()
        order[path] = len(order)
        if isinstance(node, dict):
            stack.extend(
                (f"{path}/{pointer_token(k)}", v) for k, v in reversed(list(node.items()))
            )
    return order


class DocumentOrderProjector(Projector):
    """Candidates tried in document order, not shallowest first and then by pointer."""

    def preserved_candidates(self, value: Any) -> list[tuple[str, Any]]:
        order = _document_order(value)
        return sorted(super().preserved_candidates(value), key=lambda c: order[c[0]])


class BracelessQuarterProjector(Projector):
    """The quarter bound measures the entries without the braces of `preserved_fields`."""

    def preserved_limit(self, budget: int) -> int:
        return budget // 4 + len("{}")


class ShallowPreservedProjector(Projector):
    """Depth counts the scalar as a level too (as BUD-23 counts containers): `/a/b/c` is 4
    levels deep, so only pointers of at most two segments are candidates."""

    def preserved_candidates(self, value: Any) -> list[tuple[str, Any]]:
        return [c for c in super().preserved_candidates(value) if c[0].count("/") <= 2]


def _dotted(pointer: str) -> str:
    return ".".join(p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/"))


class DottedKeysProjector(Projector):
    """`preserved_fields` keyed by dotted paths (`data.next_cursor`), not JSON Pointers.

    The core BUD-11 check accepts this location syntax; only the profile's BUD-22 refuses it.
    Dotted keys are never longer than the pointers, so the projection still fits the budget.
    """

    def preserve(
        self,
        value: Any,
        projection: dict[str, Any],
        budget: int,
        attachments: list[Any] | None,
    ) -> dict[str, Any]:
        kept = super().preserve(value, projection, budget, attachments)
        return {_dotted(pointer): scalar for pointer, scalar in kept.items()}


# -- head and tail ------------------------------------------------------------------------------


class TailFirstProjector(Projector):
    """The tail is cut first from half the bytes; whatever it leaves goes to the head."""

    def head_and_tail(self, text: str, available: int) -> tuple[str, str]:
        tail_start = self.cut_tail(text, available // 2, 0)
        tail = text[tail_start:]
        head_end = min(self.cut_head(text, available - self.string_cost(tail)), tail_start)
        return text[:head_end], tail


class TwoThirdsHeadProjector(Projector):
    """The head takes two thirds of the bytes left, not half."""

    def head_and_tail(self, text: str, available: int) -> tuple[str, str]:
        head_end = self.cut_head(text, 2 * available // 3)
        head = text[:head_end]
        tail_start = self.cut_tail(text, available - self.string_cost(head), head_end)
        return head, text[tail_start:]


# -- multimodal ---------------------------------------------------------------------------------


class IndexPlaceholderProjector(Projector):
    """Taken blocks become `{"type": T, "index": i}`, not `{"type": T, "attachment": i}`."""

    def split_attachments(self, result: Any) -> tuple[dict[str, Any], list[Any]] | None:
        split = super().split_attachments(result)
        if split is None:
            return None
        remainder, attachments = split
        content = [
            {"type": b["type"], "index": b["attachment"]} if "attachment" in b else b
            for b in remainder["content"]
        ]
        return {**remainder, "content": content}, attachments


class LenientMultimodalProjector(Projector):
    """Any object block not typed `"text"` is an attachment, even among blocks that are not
    objects with a string `type` (the profile then treats the result as text-only)."""

    def split_attachments(self, result: Any) -> tuple[dict[str, Any], list[Any]] | None:
        if not isinstance(result, dict) or not isinstance(result.get("content"), list):
            return None
        content: list[Any] = result["content"]
        if not any(isinstance(b, dict) and b.get("type") != "text" for b in content):
            return None
        attachments: list[Any] = []
        blocks: list[Any] = []
        for block in content:
            if isinstance(block, dict) and block.get("type") != "text":
                blocks.append({"type": block.get("type"), "attachment": len(attachments)})
                attachments.append(block)
            else:
                blocks.append(block)
        return {**result, "content": blocks}, attachments


class WholeSizeDecidesProjector(Projector):
    """A multimodal result is projected whenever its whole size is over the budget, even when
    its text part (size minus the attachments array) fits."""

    def project(self, result: Any, budget: int) -> Preview:
        split = self.split_attachments(result)
        if split is None:
            return super().project(result, budget)
        original_bytes = self.measure(result)
        if original_bytes <= budget:
            return Preview(result, original_bytes, original_bytes, False)
        remainder, attachments = split
        text, _ = self.sized_text(remainder)
        projected = self.project_text(remainder, text, original_bytes, budget, attachments)
        return Preview(projected, original_bytes, self.measure(projected), True)


def empty_preserved_kept() -> FastAPI:
    return serve(projector=EmptyPreservedProjector())


def preserved_128_chars() -> FastAPI:
    return serve(projector=CharacterLimitProjector())


def preserved_any_key() -> FastAPI:
    return serve(projector=AnyKeyProjector())


def preserved_document_order() -> FastAPI:
    return serve(projector=DocumentOrderProjector())


def quarter_without_braces() -> FastAPI:
    return serve(projector=BracelessQuarterProjector())


def preserved_depth_2() -> FastAPI:
    return serve(projector=ShallowPreservedProjector())


def dotted_preserved_keys() -> FastAPI:
    return serve(projector=DottedKeysProjector())


def tail_first() -> FastAPI:
    return serve(projector=TailFirstProjector())


def head_two_thirds() -> FastAPI:
    return serve(projector=TwoThirdsHeadProjector())


def placeholder_renamed() -> FastAPI:
    return serve(projector=IndexPlaceholderProjector())


def lenient_multimodal() -> FastAPI:
    return serve(projector=LenientMultimodalProjector())


def multimodal_whole_size_decides() -> FastAPI:
    return serve(projector=WholeSizeDecidesProjector())


# -- limits and mock receipts (BUD-23, dry-run) ------------------------------------------------


class ScalarLevelEngine(Engine):
    """Depth counts a scalar as a level too: 512 arrays around `1` are 513 levels, refused."""

    def check_result(self, result: Any, path: str) -> None:
        super().check_result(result, path)
        stack: list[tuple[Any, str, int]] = [(result, "", 0)]
        while stack:
            node, where, depth = stack.pop()
            if isinstance(node, dict | list):
                items = node.items() if isinstance(node, dict) else enumerate(node)
                stack.extend((v, f"{where}/{pointer_token(k)}", depth + 1) for k, v in items)
            elif depth + 1 > MAX_DEPTH:
                raise ValidationFailed(
                    f"{path}{where}: nested deeper than {MAX_DEPTH} levels", path + where
                )


class RelativeResultPathEngine(Engine):
    """A result over a limit is refused naming the path inside the result (`/0/0/…`), not
    `/mock_receipts/i/result/…`."""

    def check_result(self, result: Any, path: str) -> None:
        try:
            check_limits(result)
        except ResultLimitError as exc:
            raise ValidationFailed(f"{exc.path}: {exc.message}", exc.path) from None


class PreviewedReceiptOnlyEngine(Engine):
    """Only the receipt previewed (the first completed one) is held to the limits; the other
    mock receipts' results are not validated like real ones."""

    def __init__(self) -> None:
        super().__init__()
        self._previewed = threading.local()

    def dry_run(self, principal: Principal, request: DryRunRequest) -> DryRunResponse:
        first = next(
            (i for i, r in enumerate(request.mock_receipts) if r.kind == "completed"), None
        )
        self._previewed.path = None if first is None else f"/mock_receipts/{first}/result"
        return super().dry_run(principal, request)

    def check_result(self, result: Any, path: str) -> None:
        if path == getattr(self._previewed, "path", None):
            super().check_result(result, path)


def depth_counts_scalars() -> FastAPI:
    return serve(ScalarLevelEngine())


def result_path_relative() -> FastAPI:
    return serve(RelativeResultPathEngine())


def only_previewed_receipt_checked() -> FastAPI:
    return serve(PreviewedReceiptOnlyEngine())
