"""Mutants that cut the preview wrongly (BUD-03, BUD-08..10, BUD-13, BUD-14).

Wrong costs (the wrapper or the escapes not counted), cuts in the wrong units (UTF-8 bytes,
UTF-16 code units), cuts that ignore clusters or escapes, text that is not the canonical one,
half the budget left unused, and a random split.
"""

from __future__ import annotations

import json
import random
from typing import Any

from fastapi import FastAPI, Request, Response

from arck.reference.canonical import canonical_text, measure, utf8_length
from arck.reference.mutants.base import serve
from arck.reference.projection import CUT_WINDOW, Projector

_ESCAPED_AGAIN = frozenset(b'"\\')  # bytes that take two bytes inside a JSON string


class PreviewOnlyProjector(Projector):
    """Counts only the preview strings, not the wrapper, marker or preserved fields."""

    def text_size(self, projection: dict[str, Any], attachments: list[Any] | None) -> int:
        box = projection.get("preview", {})
        return sum(self.string_cost(box.get(k, "")) + 2 for k in ("head", "tail"))


class EscapesFreeProjector(Projector):
    def string_cost(self, s: str) -> int:
        return utf8_length(s)


def _byte_cost(data: bytes) -> list[int]:
    """costs[n]: escaped cost of data[:n] (multibyte sequences never hold `"` or `\\`)."""
    costs = [0]
    for b in data:
        costs.append(costs[-1] + (2 if b in _ESCAPED_AGAIN else 1))
    return costs


class ByteCutProjector(Projector):
    """Cuts the UTF-8 bytes and decodes each piece with errors="replace"."""

    def head_and_tail(self, text: str, available: int) -> tuple[str, str]:
        data = text.encode("utf-8")
        costs = _byte_cost(data)
        n = max(i for i, c in enumerate(costs) if c <= available // 2)
        head = data[:n].decode("utf-8", "replace")
        room = available - self.string_cost(head)
        start = min(
            (j for j in range(n, len(data) + 1) if costs[-1] - costs[j] <= room), default=len(data)
        )
        return head, data[start:].decode("utf-8", "replace")


class CodeUnitCutProjector(Projector):
    """Cuts UTF-16 code units, as `String.prototype.slice` would: a pair can be split."""

    def sized_text(self, value: Any) -> tuple[str, int]:
        # Sizes as `Buffer.byteLength` gives them: a lone surrogate counts as U+FFFD, 3 bytes.
        text = canonical_text(value)
        return text, len(text.encode("utf-8", "surrogatepass"))

    def head_and_tail(self, text: str, available: int) -> tuple[str, str]:
        units = text.encode("utf-16-le", "surrogatepass")
        count = len(units) // 2
        unit = [units[2 * i : 2 * i + 2].decode("utf-16-le", "surrogatepass") for i in range(count)]
        cost = [2 if 0xD800 <= ord(u) <= 0xDFFF else self.string_cost(u) for u in unit]
        used, n = 0, 0
        while n < count and used + cost[n] <= available // 2:
            used, n = used + cost[n], n + 1
        room, start = available - used, count
        while start > n and cost[start - 1] <= room:
            room, start = room - cost[start - 1], start - 1
        head = units[: 2 * n].decode("utf-16-le", "surrogatepass")
        return head, units[2 * start :].decode("utf-16-le", "surrogatepass")


class CodePointCutProjector(Projector):
    def cut_allowed(self, text: str, i: int, boundaries: set[int]) -> bool:
        return not self.inside_escape(text, i)


class EscapeBlindProjector(Projector):
    def cut_allowed(self, text: str, i: int, boundaries: set[int]) -> bool:
        return i in boundaries


class SpacedTextProjector(Projector):
    """Takes head and tail from `json.dumps` with its default `", "` and `": "` separators."""

    def sized_text(self, value: Any) -> tuple[str, int]:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
        return text, measure(value)  # the size stays canonical: only the preview text is wrong


class HalfBudgetProjector(Projector):
    def head_and_tail(self, text: str, available: int) -> tuple[str, str]:
        return super().head_and_tail(text, available // 2)


class GivingUpProjector(Projector):
    """The head's cut searches one window back from its limit and, finding no allowed cut
    there (a cluster longer than the window, after an escape), gives up with an empty head."""

    def cut_head(self, text: str, limit: int) -> int:
        i = self.longest_prefix(text, limit)
        start = self.safe_start(text, max(0, i - CUT_WINDOW))
        end = min(len(text), i + 1)
        boundaries = self.boundaries(text[start:end], start, end == len(text))
        while i >= start and i > 0:
            if self.cut_allowed(text, i, boundaries):
                return i
            i -= 1
        return 0


class RandomSplitProjector(Projector):
    """Splits the bytes between head and tail at random (unseeded on purpose: the defect)."""

    def head_and_tail(self, text: str, available: int) -> tuple[str, str]:
        head_end = self.cut_head(text, random.Random().randint(0, available))
        head = text[:head_end]
        tail_start = self.cut_tail(text, available - self.string_cost(head), head_end)
        return head, text[tail_start:]


def marker_not_counted() -> FastAPI:
    return serve(projector=PreviewOnlyProjector())


def escapes_not_counted() -> FastAPI:
    return serve(projector=EscapesFreeProjector())


def utf8_byte_cut() -> FastAPI:
    return serve(projector=ByteCutProjector())


def utf16_cut() -> FastAPI:
    """Lone surrogates go out as `\\uD83D` escapes, as `JSON.stringify` writes them."""
    app = serve(projector=CodeUnitCutProjector())

    async def escape_surrogates(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, UnicodeEncodeError)
        text = exc.object if isinstance(exc.object, str) else ""
        body = text.encode("utf-8", "backslashreplace")  # a lone U+D83D becomes \ud83d
        return Response(body, media_type="application/json")

    app.add_exception_handler(UnicodeEncodeError, escape_surrogates)
    return app


def grapheme_split() -> FastAPI:
    return serve(projector=CodePointCutProjector())


def escape_split() -> FastAPI:
    return serve(projector=EscapeBlindProjector())


def spaced_preview() -> FastAPI:
    return serve(projector=SpacedTextProjector())


def wasteful_cut() -> FastAPI:
    return serve(projector=HalfBudgetProjector())


def cut_gives_up() -> FastAPI:
    return serve(projector=GivingUpProjector())


def random_projection() -> FastAPI:
    return serve(projector=RandomSplitProjector())
