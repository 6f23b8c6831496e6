"""Mutants that get the projection's contents wrong (BUD-11, BUD-12, BUD-19, BUD-21..23).

Preserved fields altered, invented, dropped, taken from too deep or from list items, past a
quarter of the budget, or filled in order instead of greedily; multimodal blocks not
recognised or reordered, or counted out of `truncation`; the general nesting and digit limits
not checked.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from arck.reference.canonical import canonical_text, pointer_token
from arck.reference.engine import Engine
from arck.reference.mutants.base import serve
from arck.reference.projection import (
    MAX_PRESERVED_DEPTH,
    MAX_PRESERVED_VALUE_BYTES,
    PRESERVED_KEYS,
    Projector,
)

UNLIMITED_DEPTH = 64


class StringifiedPreservedProjector(Projector):
    """Keeps each preserved value as its JSON text (`"ok"` becomes `"\\"ok\\""`)."""

    def preserved_candidates(self, value: Any) -> list[tuple[str, Any]]:
        return [(p, canonical_text(v)) for p, v in super().preserved_candidates(value)]


class InventedStatusProjector(Projector):
    """Adds `/status: "truncated"` when the result has no top-level status kept."""

    def preserve(
        self,
        value: Any,
        projection: dict[str, Any],
        budget: int,
        attachments: list[Any] | None,
    ) -> dict[str, Any]:
        kept = super().preserve(value, projection, budget, attachments)
        if "/status" not in kept:
            trial = {**kept, "/status": "truncated"}
            if self.text_size({**projection, "preserved_fields": trial}, attachments) <= budget:
                kept = trial
        return kept


class NothingPreservedProjector(Projector):
    def preserve(
        self,
        value: Any,
        projection: dict[str, Any],
        budget: int,
        attachments: list[Any] | None,
    ) -> dict[str, Any]:
        return {}


class DeepPreservedProjector(Projector):
    """Looks for status-like fields at any depth and through list items."""

    max_depth = UNLIMITED_DEPTH

    def preserved_candidates(self, value: Any) -> list[tuple[str, Any]]:
        found: list[tuple[int, str, Any]] = []
        level: list[tuple[str, Any]] = [("", value)]
        for depth in range(1, self.max_depth + 1):
            deeper: list[tuple[str, Any]] = []
            for path, node in level:
                if not isinstance(node, dict | list):
                    continue
                items = node.items() if isinstance(node, dict) else enumerate(node)
                for key, child in items:
                    pointer = f"{path}/{pointer_token(key)}"
                    if isinstance(child, dict | list):
                        deeper.append((pointer, child))
                    elif (
                        isinstance(node, dict)
                        and key in PRESERVED_KEYS
                        and self.measure(child) <= MAX_PRESERVED_VALUE_BYTES
                    ):
                        found.append((depth, pointer, child))
            level = deeper
        found.sort(key=lambda item: (item[0], item[1]))
        return [(pointer, scalar) for _, pointer, scalar in found]


class ListItemsPreservedProjector(DeepPreservedProjector):
    """The 2026-11 rule: depth <= 3, but list items' fields are candidates too."""

    max_depth = MAX_PRESERVED_DEPTH


class UncappedPreservedProjector(Projector):
    """No quarter-of-the-budget cap on `preserved_fields`: only the whole projection bounds it."""

    def preserved_limit(self, budget: int) -> int:
        return budget


class InOrderPreservedProjector(Projector):
    """Fills `preserved_fields` in order and stops at the first candidate that does not fit."""

    def preserve(
        self,
        value: Any,
        projection: dict[str, Any],
        budget: int,
        attachments: list[Any] | None,
    ) -> dict[str, Any]:
        kept: dict[str, Any] = {}
        for pointer, scalar in self.preserved_candidates(value):
            trial = {**kept, pointer: scalar}
            fits = self.text_size({**projection, "preserved_fields": trial}, attachments)
            if self.measure(trial) > self.preserved_limit(budget) or fits > budget:
                break
            kept = trial
        return kept


class TextPartTruncationProjector(Projector):
    """`truncation.original_bytes` of a multimodal result counts only its text part."""

    def project_text(
        self,
        value: Any,
        text: str,
        original_bytes: int,
        budget: int,
        attachments: list[Any] | None,
    ) -> dict[str, Any]:
        if attachments is not None:
            original_bytes -= self.measure(attachments)
        return super().project_text(value, text, original_bytes, budget, attachments)


class TextOnlyProjector(Projector):
    def split_attachments(self, result: Any) -> tuple[dict[str, Any], list[Any]] | None:
        return None


class ReversedAttachmentsProjector(Projector):
    """Moves the non-text blocks out in reverse order (placeholders renumbered to match)."""

    def split_attachments(self, result: Any) -> tuple[dict[str, Any], list[Any]] | None:
        split = super().split_attachments(result)
        if split is None:
            return None
        remainder, attachments = split
        last = len(attachments) - 1
        content = [
            b if b["type"] == "text" else {**b, "attachment": last - b["attachment"]}
            for b in remainder["content"]
        ]
        return {**remainder, "content": content}, attachments[::-1]


class LimitlessEngine(Engine):
    def check_result(self, result: Any, path: str) -> None:
        return None


def preserved_altered() -> FastAPI:
    return serve(projector=StringifiedPreservedProjector())


def preserved_invented() -> FastAPI:
    return serve(projector=InventedStatusProjector())


def no_preserved() -> FastAPI:
    return serve(projector=NothingPreservedProjector())


def preserved_too_deep() -> FastAPI:
    return serve(projector=DeepPreservedProjector())


def preserved_list_items() -> FastAPI:
    return serve(projector=ListItemsPreservedProjector())


def preserved_uncapped() -> FastAPI:
    return serve(projector=UncappedPreservedProjector())


def preserved_in_order() -> FastAPI:
    return serve(projector=InOrderPreservedProjector())


def truncation_text_part() -> FastAPI:
    return serve(projector=TextPartTruncationProjector())


def image_counted() -> FastAPI:
    return serve(projector=TextOnlyProjector())


def attachments_reordered() -> FastAPI:
    return serve(projector=ReversedAttachmentsProjector())


def limits_unchecked() -> FastAPI:
    return serve(LimitlessEngine())
