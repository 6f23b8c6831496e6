"""Projection of an over-budget result into a head/tail preview (BUD-06..14, BUD-19..22).

The preview cuts the result's canonical text, not its structure: a head prefix and a tail
suffix, each cut on an extended grapheme cluster boundary and never inside a JSON escape, so
both stay valid Unicode and valid JSON strings. The canonical text is built once and gives the
size too; the cuts are found by bisection over escaped costs computed with str methods, and only
a few dozen characters around each cut are segmented. That keeps the cost close to the one
`json.dumps` the size needs anyway (benchmarks/bench_projection.py).

Every step is a method so a known-bad variant (reference/mutants) can replace exactly one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from json.encoder import encode_basestring
from operator import itemgetter
from typing import Any

import regex

from arck.reference.canonical import canonical_text, pointer_token, utf8_length

PRESERVED_KEYS = frozenset(
    {"id", "status", "state", "next_cursor", "cursor", "has_more", "total", "code", "error", "type"}
)
MAX_PRESERVED_DEPTH = 3
MAX_PRESERVED_VALUE_BYTES = 128
# The smallest preserved entry, `,"/id":0`: a pointer ends in a preserved key (2+ characters).
_MIN_ENTRY = 5 + 1 + min(len(k) for k in PRESERVED_KEYS)
# The methods sizes come from: while none is replaced, sizes are the canonical ones.
_SIZE_SEAMS = ("sized_text", "measure", "text_size", "string_cost")
_POINTER = itemgetter(0)
# Strings this short are preservable whatever they hold: no character takes more than 6 bytes.
_SHORT_STR = (MAX_PRESERVED_VALUE_BYTES - 2) // 6
# Characters segmented on each side of a cut; doubled while no allowed cut is found in reach.
CUT_WINDOW = 32

_CLUSTER = regex.compile(r"\X")
# Two characters with a cluster boundary between them whatever surrounds them: ASCII (the
# canonical text holds no raw CR or LF) or Grapheme_Cluster_Break=Other on both sides, where no
# rule but GB999 applies. Searched right to left, so the match found is the last one.
_SAFE_PAIR = regex.compile(r"(?r)[\x00-\x7f\p{Grapheme_Cluster_Break=Other}]{2}")
_LAST_NON_BACKSLASH = regex.compile(r"(?r)[^\\]")

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
        split = self.split_attachments(result)
        if split is None:
            text, original_bytes = self.sized_text(result)
            if original_bytes <= budget:
                return Preview(result, original_bytes, original_bytes, False)
            projected = self.project_text(result, text, original_bytes, budget, None)
            attached = 0
        else:
            remainder, attachments = split
            original_bytes = self.measure(result)
            attached = self.measure(attachments)
            if original_bytes - attached <= budget:
                return Preview(result, original_bytes, original_bytes, False)
            text, _ = self.sized_text(remainder)
            projected = self.project_text(remainder, text, original_bytes, budget, attachments)
        return Preview(projected, original_bytes, self.retained(projected, attached), True)

    def retained(self, projected: dict[str, Any], attached: int) -> int:
        """The projection's size, without serializing its previews again when sizes are the
        canonical ones: the frame around empty previews, plus each preview's escaped cost,
        plus the attachments (`attached` bytes, measured once already)."""
        if not self.canonical_sizes():
            return self.measure(projected)
        box = projected["preview"]
        frame = {**projected, "preview": {"head": "", "tail": ""}}
        if attached:
            frame["attachments"] = []
            attached -= 2  # the attachments array replaces the `[]` measured in the frame
        return (self.measure(frame) + self.string_cost(box["head"])
                + self.string_cost(box["tail"]) + attached)

    # -- sizes -------------------------------------------------------------------------------

    def sized_text(self, value: Any) -> tuple[str, int]:
        """The text a preview is cut from and the value's size, from one serialization.

        A large result is serialized once: its size and its preview come from the same text.
        """
        text = canonical_text(value)
        return text, utf8_length(text)

    def measure(self, value: Any) -> int:
        """The size of a value (BUD-01): whatever `sized_text` says, so the two never differ."""
        return self.sized_text(value)[1]

    def string_cost(self, s: str) -> int:
        """Bytes a piece of the canonical text takes inside a JSON string literal.

        The canonical text has no raw control characters (they are escaped), so only the quote
        and the backslash grow when escaped again. Additive over concatenation, which the cut
        searches rely on; str methods keep it linear in C, not in Python.
        """
        return utf8_length(s) + s.count('"') + s.count("\\")

    def text_size(self, projection: dict[str, Any], attachments: list[Any] | None) -> int:
        """The part of a projection that counts against the budget (BUD-03, BUD-19).

        Attachments are excluded, so they are measured as an empty list: serializing them for
        every preserved-field trial would cost a full pass over them each time.
        """
        if attachments is None:
            return self.measure(projection)
        return self.measure({**projection, "attachments": []}) - self.measure([])

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
        self,
        value: Any,
        text: str,
        original_bytes: int,
        budget: int,
        attachments: list[Any] | None,
    ) -> dict[str, Any]:
        """The projection of `value`, whose preview text `text` is already built."""
        projection = self.skeleton(original_bytes, attachments)
        preserved = self.preserve(value, projection, budget, attachments)
        if preserved:
            projection["preserved_fields"] = preserved
        available = budget - self.text_size(projection, attachments)
        head, tail = self.head_and_tail(text, available)
        projection["preview"] = {"head": head, "tail": tail}
        return projection

    def head_and_tail(self, text: str, available: int) -> tuple[str, str]:
        """Head and tail of the canonical text whose escaped costs fit `available` bytes."""
        head_end = self.cut_head(text, available // 2)
        head = text[:head_end]
        tail_start = self.cut_tail(text, available - self.string_cost(head), head_end)
        return head, text[tail_start:]

    def preserve(
        self,
        value: Any,
        projection: dict[str, Any],
        budget: int,
        attachments: list[Any] | None,
    ) -> dict[str, Any]:
        """Keep short status-like scalars, greedily, within both BUD-22 bounds.

        A candidate is kept when, with it, the projection with empty previews fits the budget
        and the `preserved_fields` object stays within floor(budget / 4) bytes; one that does
        not fit is skipped and later, shorter ones are still tried (the profile's reading).

        A value serializes the same wherever it sits, so an entry added to a non-empty
        preserved_fields adds the same bytes to the object and to any projection. The first
        field kept is priced on the whole projection; each later one only by its entry
        `,"pointer":value`: by arithmetic on canonical sizes (`entry_bytes`) when the
        projector's sizes are the canonical ones, else on the projection holding only the
        first field and the new one. A candidate is skipped unpriced when even its smallest
        entry, `,"pointer":0` (the pointer's characters plus 5 bytes), cannot fit, and the
        search stops once no entry (a pointer ends in a preserved key, so takes 3 characters
        or more) can.
        """
        quarter = self.preserved_limit(budget)
        candidates = iter(self.preserved_candidates(value))
        kept: dict[str, Any] = {}
        for pointer, scalar in candidates:
            first = {pointer: scalar}
            fields_size = self.measure(first)
            if fields_size > quarter:
                continue
            size = self.text_size({**projection, "preserved_fields": first}, attachments)
            if size <= budget:
                kept = first
                break
        if not kept:
            return kept
        anchor, anchor_size = dict(kept), size
        canonical = self.canonical_sizes()
        room = min(budget - size, quarter - fields_size)
        for pointer, scalar in candidates:
            if len(pointer) + 5 > room:
                if room < _MIN_ENTRY:
                    break
                continue
            if canonical:
                entry = self.entry_bytes(pointer, scalar, room)
                if entry is None:
                    continue
            else:
                trial = {**projection, "preserved_fields": {**anchor, pointer: scalar}}
                entry = self.text_size(trial, attachments) - anchor_size
                if entry > room:
                    continue
            kept[pointer] = scalar
            room -= entry
        return kept

    def preserved_limit(self, budget: int) -> int:
        """The most canonical bytes the `preserved_fields` object may take (BUD-22)."""
        return budget // 4

    def canonical_sizes(self) -> bool:
        """Whether sizes are this module's canonical ones (no size seam is replaced).

        Only then may preserve price entries by arithmetic instead of measuring projections.
        """
        cls = type(self)
        return all(getattr(cls, name) is getattr(Projector, name) for name in _SIZE_SEAMS)

    def entry_bytes(self, pointer: str, scalar: Any, room: int) -> int | None:
        """Bytes of `,"pointer":scalar` in canonical JSON, or None when it exceeds `room`.

        A string is ruled out by its length before it is encoded: it takes at least one byte
        a character, plus two quotes.
        """
        if type(scalar) is str and len(pointer) + len(scalar) + 6 > room:
            return None
        entry = 2 + utf8_length(encode_basestring(pointer)) + self.scalar_bytes(scalar)
        return entry if entry <= room else None

    def scalar_bytes(self, scalar: Any) -> int:
        """`measure(scalar)` for a JSON scalar, without the encoder's set-up for common types."""
        kind = type(scalar)
        if kind is str:
            return utf8_length(encode_basestring(scalar))
        if scalar is None or scalar is True:
            return 4
        if scalar is False:
            return 5
        if kind is int:
            return len(int.__repr__(scalar))
        if kind is float and math.isfinite(scalar):
            return len(float.__repr__(scalar))
        return self.measure(scalar)

    def preservable(self, scalar: Any, canonical: bool) -> bool:
        """Whether a scalar is small enough to preserve: measure(scalar) <= 128 bytes.

        With canonical sizes a string is decided by its length when that settles it: more
        than 126 characters take more than 128 bytes, and 21 or fewer at most 128 (no
        character takes more than 6, `\\u001f`).
        """
        if not canonical:
            return self.measure(scalar) <= MAX_PRESERVED_VALUE_BYTES
        if type(scalar) is str:
            if len(scalar) > MAX_PRESERVED_VALUE_BYTES - 2:
                return False
            if len(scalar) <= _SHORT_STR:
                return True
        return self.scalar_bytes(scalar) <= MAX_PRESERVED_VALUE_BYTES

    def preserved_candidates(self, value: Any) -> list[tuple[str, Any]]:
        """Scalars under a preserved key down to depth 3, through object members only.

        No pointer passes through an array index (revision 2026-12): the status of the
        result, not of its list items. Shallowest first, then by pointer. Levels are found
        breadth first, so each depth's candidates are sorted on their own (stable, as one
        sort on (depth, pointer) would be); at the last depth only preserved keys are looked
        at, and `preservable` must accept the value.
        """
        found: list[tuple[str, Any]] = []
        canonical = self.canonical_sizes()
        level: list[tuple[str, dict[Any, Any]]] = [("", value)] if isinstance(value, dict) else []
        for depth in range(1, MAX_PRESERVED_DEPTH + 1):
            last = depth == MAX_PRESERVED_DEPTH
            here: list[tuple[str, Any]] = []
            deeper: list[tuple[str, dict[Any, Any]]] = []
            for path, node in level:
                for key, child in node.items():
                    if isinstance(child, dict):
                        if not last:
                            deeper.append((f"{path}/{pointer_token(key)}", child))
                    elif isinstance(child, list):
                        continue
                    elif key in PRESERVED_KEYS and (
                        # the common case, a short string, decided without a call
                        (canonical and type(child) is str and len(child) <= _SHORT_STR)
                        or self.preservable(child, canonical)
                    ):
                        token = key if type(key) is str else pointer_token(key)
                        here.append((f"{path}/{token}", child))
            here.sort(key=_POINTER)
            found.extend(here)
            level = deeper
        return found

    # -- cuts ----------------------------------------------------------------------------------

    def cut_head(self, text: str, limit: int) -> int:
        """The largest allowed cut i with cost(text[:i]) <= limit (0 if none is)."""
        i = self.longest_prefix(text, limit)
        reach = CUT_WINDOW
        while i > 0:
            start = self.safe_start(text, max(0, i - reach))
            end = min(len(text), i + 1)  # the boundary at i depends on text[i]
            boundaries = self.boundaries(text[start:end], start, end == len(text))
            while i >= start and i > 0:
                if self.cut_allowed(text, i, boundaries):
                    return i
                i -= 1
            reach *= 2
        return 0

    def cut_tail(self, text: str, limit: int, floor: int) -> int:
        """The smallest allowed cut j >= floor with cost(text[j:]) <= limit (len(text) if none)."""
        j = max(floor, self.shortest_suffix(text, limit, floor))
        reach = CUT_WINDOW
        while j < len(text):
            start = self.safe_start(text, j)
            end = min(len(text), j + reach)
            boundaries = self.boundaries(text[start:end], start, end == len(text))
            while j < end:
                if self.cut_allowed(text, j, boundaries):
                    return j
                j += 1
            reach *= 2
        return len(text)

    def longest_prefix(self, text: str, limit: int) -> int:
        """The largest i with string_cost(text[:i]) <= limit, by bisection.

        Every character costs at least one byte, so i <= limit. Each step prices only the
        slice between the bounds, so the whole search costs about one pass over `limit`
        characters.
        """
        lo, lo_cost = 0, 0  # string_cost(text[:lo]) == lo_cost <= limit
        hi = max(0, min(len(text), limit))  # the answer is at most hi
        while lo < hi:
            mid = (lo + hi + 1) // 2
            cost = lo_cost + self.string_cost(text[lo:mid])
            if cost <= limit:
                lo, lo_cost = mid, cost
            else:
                hi = mid - 1
        return lo

    def shortest_suffix(self, text: str, limit: int, floor: int) -> int:
        """The smallest j >= floor with string_cost(text[j:]) <= limit, by bisection.

        len(text) when even the empty suffix does not fit (a negative limit).
        """
        lo = max(0, floor, len(text) - max(0, limit))  # every character costs at least 1
        hi, hi_cost = len(text), 0  # string_cost(text[hi:]) == hi_cost <= limit
        while lo < hi:
            mid = (lo + hi) // 2
            cost = hi_cost + self.string_cost(text[mid:hi])
            if cost <= limit:
                hi, hi_cost = mid, cost
            else:
                lo = mid + 1
        return hi

    def safe_start(self, text: str, position: int) -> int:
        """A position at or before `position` that is certainly a cluster boundary.

        Segmentation started there agrees with segmenting the whole text, so a window of a
        few dozen characters can be segmented instead of everything before the cut.
        """
        if position >= len(text):
            return len(text)
        match = _SAFE_PAIR.search(text, 0, position + 1) if position > 0 else None
        return match.start() + 1 if match else 0

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
        """A backslash starts an escape when an even number of backslashes precede it.

        The run is measured by a search in C: a long run of escaped backslashes would make a
        loop over it the slowest part of a projection.
        """
        match = _LAST_NON_BACKSLASH.search(text, 0, start)
        run = start - (match.end() if match else 0)
        return run % 2 == 0


def unicode_version() -> str:
    """The Unicode version of the segmentation rules (BUD-10, BUD-23 asks for 15.1 or later)."""
    for version, probe in _VERSION_PROBES:
        if regex.match(r"\p{Assigned}", probe):
            return f"{version} or later" if version == _VERSION_PROBES[0][0] else version
    return "older than 15.1"
