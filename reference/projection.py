"""Projection of an over-budget result into a head/tail preview (BUD-06..14, BUD-19..22).

The preview cuts the result's canonical text, not its structure: a head prefix and a tail
suffix, each cut on an extended grapheme cluster boundary and never inside a JSON escape, so
both stay valid Unicode and valid JSON strings. Only windows near the two cuts are segmented,
which keeps the cost close to the one `json.dumps` the size needs anyway.

Every step is a method so a known-bad variant (reference/mutants) can replace exactly one.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import regex

from arck.reference.canonical import canonical_text, measure, pointer_token, utf8_length

PRESERVED_KEYS = frozenset(
    {"id", "status", "state", "next_cursor", "cursor", "has_more", "total", "code", "error", "type"}
)
MAX_PRESERVED_DEPTH = 3
MAX_PRESERVED_VALUE_BYTES = 128

_CLUSTER = regex.compile(r"\X")

# Characters first assigned in each Unicode version: the newest one the `regex` module knows
# tells which version its segmentation follows (it exposes no version number itself).
_VERSION_PROBES = (("17.0", "\U0001faea"), ("16.0", "\U0001cc00"), ("15.1", "\U0002ebf0"))


@dataclass(frozen=True)
class Preview:
    """What a result becomes on first entering the execution history."""

    result: Any
    original_bytes: int
    retained_bytes: int
    truncated: bool


class Projector:
    """The reference projection (profile BUD-21/22)."""

    def project(self, result: Any, budget: int) -> Preview:
        original_bytes = self.measure(result)
        split = self.split_attachments(result)
        if split is None:
            if original_bytes <= budget:
                return Preview(result, original_bytes, original_bytes, False)
            projected = self.project_text(result, original_bytes, budget, None)
        else:
            remainder, attachments = split
            if original_bytes - self.measure(attachments) <= budget:
                return Preview(result, original_bytes, original_bytes, False)
            projected = self.project_text(remainder, original_bytes, budget, attachments)
        return Preview(projected, original_bytes, self.measure(projected), True)

    # -- sizes -------------------------------------------------------------------------------

    def measure(self, value: Any) -> int:
        return measure(value)

    def char_cost(self, ch: str) -> int:
        """Bytes a character of the canonical text takes inside a JSON string literal.

        The canonical text has no raw control characters (they are escaped), so only the quote
        and the backslash grow when escaped again.
        """
        return 2 if ch in '"\\' else utf8_length(ch)

    def text_size(self, projection: dict[str, Any], attachments: list[Any] | None) -> int:
        """The part of a projection that counts against the budget (BUD-03, BUD-19)."""
        size = self.measure(projection)
        return size - self.measure(attachments) if attachments is not None else size

    # -- multimodal ----------------------------------------------------------------------------

    def split_attachments(self, result: Any) -> tuple[dict[str, Any], list[Any]] | None:
        """Take non-text blocks out of a multimodal result (BUD-21), or None if it is not one."""
        if not isinstance(result, dict):
            return None
        content = result.get("content")
        if not isinstance(content, list) or not content:
            return None
        if not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in content):
            return None
        if all(b["type"] == "text" for b in content):
            return None
        attachments: list[Any] = []
        blocks: list[Any] = []
        for block in content:
            if block["type"] == "text":
                blocks.append(block)
            else:
                blocks.append({"type": block["type"], "attachment": len(attachments)})
                attachments.append(block)
        return {**result, "content": blocks}, attachments

    # -- text projection -----------------------------------------------------------------------

    def skeleton(self, original_bytes: int, attachments: list[Any] | None) -> dict[str, Any]:
        shape: dict[str, Any] = {
            "preview": {"head": "", "tail": ""},
            "truncation": {"original_bytes": original_bytes},
        }
        if attachments is not None:
            shape["attachments"] = attachments
        return shape

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
        """Head and tail of the canonical text whose escaped costs fit `available` bytes."""
        text = canonical_text(value)
        head_end = self.cut_head(text, available // 2)
        head = text[:head_end]
        tail_start = self.cut_tail(text, available - self.string_cost(head), head_end)
        return head, text[tail_start:]

    def string_cost(self, s: str) -> int:
        return sum(self.char_cost(ch) for ch in s)

    def preserve(
        self,
        value: Any,
        projection: dict[str, Any],
        budget: int,
        attachments: list[Any] | None,
    ) -> dict[str, Any]:
        """Keep short status-like scalars while the projection with empty previews fits."""
        kept: dict[str, Any] = {}
        for pointer, scalar in self.preserved_candidates(value):
            trial = {**kept, pointer: scalar}
            if self.text_size({**projection, "preserved_fields": trial}, attachments) <= budget:
                kept = trial
        return kept

    def preserved_candidates(self, value: Any) -> list[tuple[str, Any]]:
        found: list[tuple[int, str, Any]] = []
        level: list[tuple[str, Any]] = [("", value)]
        for depth in range(1, MAX_PRESERVED_DEPTH + 1):
            deeper: list[tuple[str, Any]] = []
            for path, node in level:
                if isinstance(node, dict):
                    for key, child in node.items():
                        pointer = f"{path}/{pointer_token(key)}"
                        if isinstance(child, dict | list):
                            deeper.append((pointer, child))
                        elif key in PRESERVED_KEYS and (
                            self.measure(child) <= MAX_PRESERVED_VALUE_BYTES
                        ):
                            found.append((depth, pointer, child))
                elif isinstance(node, list):
                    deeper.extend((f"{path}/{i}", child) for i, child in enumerate(node))
            level = [(p, n) for p, n in deeper if isinstance(n, dict | list)]
        found.sort(key=lambda item: (item[0], item[1]))
        return [(pointer, scalar) for _, pointer, scalar in found]

    # -- cuts ----------------------------------------------------------------------------------

    def cut_head(self, text: str, limit: int) -> int:
        """The largest allowed cut i with cost(text[:i]) <= limit."""
        window = text[: limit + 2]
        costs = [0]
        for ch in window:
            costs.append(costs[-1] + self.char_cost(ch))
        i = bisect.bisect_right(costs, limit) - 1
        boundaries = self.boundaries(window, 0, len(window) == len(text))
        while i > 0 and not self.cut_allowed(text, i, boundaries):
            i -= 1
        return i

    def cut_tail(self, text: str, limit: int, floor: int) -> int:
        """The smallest allowed cut j >= floor with cost(text[j:]) <= limit."""
        start = self.safe_start(text, max(floor, len(text) - limit - 2))
        costs = [0]
        for ch in reversed(text[start:]):
            costs.append(costs[-1] + self.char_cost(ch))
        # costs[k] is the cost of the last k characters
        k = bisect.bisect_right(costs, limit) - 1
        j = len(text) - k
        boundaries = self.boundaries(text[start:], start, True)
        while j < len(text) and (j < floor or not self.cut_allowed(text, j, boundaries)):
            j += 1
        return j

    def safe_start(self, text: str, position: int) -> int:
        """A position at or before `position` that is certainly a cluster boundary.

        Between two ASCII characters there is always a boundary (the canonical text holds no
        raw CR or LF), so segmentation started there agrees with segmenting the whole text.
        """
        p = position
        while p > 0 and not (text[p - 1].isascii() and text[p].isascii()):
            p -= 1
        return p

    def boundaries(self, window: str, offset: int, ends_text: bool) -> set[int]:
        """Cluster boundaries of a window that starts on a boundary.

        The window's own end is a boundary only when it is the end of the text: the next
        character could extend the last cluster.
        """
        found = {offset}
        found.update(offset + m.end() for m in _CLUSTER.finditer(window))
        if not ends_text:
            found.discard(offset + len(window))
        return found

    def cut_allowed(self, text: str, i: int, boundaries: set[int]) -> bool:
        return i in boundaries and not self.inside_escape(text, i)

    def inside_escape(self, text: str, i: int) -> bool:
        """Whether a cut at i falls strictly inside a JSON escape of the canonical text."""
        for start in range(max(0, i - 5), i):
            if text[start] != "\\" or not self.escape_starts_at(text, start):
                continue
            length = 6 if text[start + 1 : start + 2] == "u" else 2
            if start + length > i:
                return True
        return False

    def escape_starts_at(self, text: str, start: int) -> bool:
        """A backslash starts an escape when an even number of backslashes precede it."""
        run = 0
        while start - run - 1 >= 0 and text[start - run - 1] == "\\":
            run += 1
        return run % 2 == 0


def unicode_version() -> str:
    """The Unicode version of the segmentation rules (BUD-10, BUD-23 asks for 15.1 or later)."""
    for version, probe in _VERSION_PROBES:
        if regex.match(r"\p{Assigned}", probe):
            return f"{version} or later" if version == _VERSION_PROBES[0][0] else version
    return "older than 15.1"
