"""What every mutant is built from: the reference app around one replaced seam.

`CutProjector` splits the reference `project_text` at the one step the cut mutants replace
(how head and tail are taken); tests/test_mutants.py checks it still projects exactly like the
reference, so a mutant differs from the reference only where it means to.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from arck.reference.app import create_app
from arck.reference.canonical import canonical_text
from arck.reference.engine import Engine
from arck.reference.projection import Projector

__all__ = ["CutProjector", "serve"]


def serve(engine: Engine | None = None, projector: Projector | None = None) -> FastAPI:
    """The reference app around `engine` (default: the reference engine with `projector`)."""
    return create_app(engine if engine is not None else Engine(projector=projector))


class CutProjector(Projector):
    """The reference projection with head and tail taken by one overridable method."""

    def project_text(
        self, value: Any, original_bytes: int, budget: int, attachments: list[Any] | None
    ) -> dict[str, Any]:
        projection = self.skeleton(original_bytes, attachments)
        preserved = self.preserve(value, projection, budget, attachments)
        if preserved:
            projection["preserved_fields"] = preserved
        available = budget - self.text_size(projection, attachments)
        head, tail = self.head_and_tail(value, available)
        projection["preview"] = {"head": head, "tail": tail}
        return projection

    def head_and_tail(self, value: Any, available: int) -> tuple[str, str]:
        """Head and tail whose escaped costs add up to at most `available` bytes."""
        text = canonical_text(value)
        head_end = self.cut_head(text, available // 2)
        head = text[:head_end]
        tail_start = self.cut_tail(text, available - self.string_cost(head), head_end)
        return head, text[tail_start:]
