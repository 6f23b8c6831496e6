"""Projection of an over-budget result into a head/tail preview (BUD-06..14, BUD-19..22).

The preview cuts the result's canonical text, not its structure: a head prefix and a tail
suffix, each cut on an extended grapheme cluster boundary and never inside a JSON escape, so
both stay valid Unicode and valid JSON strings. The canonical text is built once and gives the
size too; the cuts are found by bisection over escaped costs computed with str methods, and only
a few dozen characters around each cut are segmented. Preserved-field candidates are
generated lazily in pointer order, skipping the objects whose candidates could no longer fit,
so a result with thousands of them is seldom walked whole. That keeps the cost close to the
one `json.dumps` the size needs anyway (benchmarks/bench_projection.py).

Every step is a method so a known-bad variant (reference/mutants) can replace exactly one.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Iterator
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
# The shortest pointer segment a candidate ends in: `/` and a preserved key.
_LAST_SEGMENT = 1 + min(len(k) for k in PRESERVED_KEYS)
# The smallest preserved entry, `,"/id":0`: a pointer ends in a preserved key (2+ characters).
_MIN_ENTRY = 5 + _LAST_SEGMENT
_UNBOUNDED = sys.maxsize
_STR_ONLY = frozenset({str})
_CONTAINERS = (dict, list)
# Objects larger than this are searched for preserved keys by set intersection.
_FEW_MEMBERS = 2 * len(PRESERVED_KEYS)
# The methods sizes come from: while none is replaced, sizes are the canonical ones.
_SIZE_SEAMS = ("sized_text", "measure", "text_size", "string_cost")
# The steps whose results `cut_preview` may take apart to reuse the costs they found.
_CUT_STEPS = ("cut_head", "cut_tail", "longest_prefix", "shortest_suffix", "string_cost")
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


class Reach:
    """The longest pointer a candidate may still have to be kept.

    `preserve` sets it from the quarter, then lowers it as its room shrinks; the candidate
    walk reads it between parents and skips the objects whose pointers below would all be
    longer, so a result with thousands of candidates is visited only as far as what is
    kept reaches.
    """

    __slots__ = ("longest",)

    def __init__(self, longest: int) -> None:
        self.longest = longest


class _Tied(Exception):
    """Two members of one object have the same pointer token (keys that are not strings,
    `1` and `"1"`): the walk cannot order what is below them, the full sort can."""


# An object's pointer tokens, sorted, and the mapping from each token to its member (the
# object itself when its keys are their tokens).
_Members = tuple[list[str], dict[Any, Any]]


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
            value: Any = result
            attachments: list[Any] | None = None
            attached = 0
        else:
            remainder, attachments = split
            original_bytes = self.measure(result)
            attached = self.measure(attachments)
            if original_bytes - attached <= budget:
                return Preview(result, original_bytes, original_bytes, False)
            text, _ = self.sized_text(remainder)
            value = remainder
        if self.unreplaced("project_text", "retained"):
            projected, size = self.sized_projection(
                value, text, original_bytes, budget, attachments
            )
            if size is not None:
                return Preview(projected, original_bytes, size + attached, True)
        else:
            projected = self.project_text(value, text, original_bytes, budget, attachments)
        return Preview(projected, original_bytes, self.retained(projected, attached), True)

    def unreplaced(self, *names: str) -> bool:
        """Whether none of these methods is replaced: only then may one step reuse what
        another computed instead of calling it."""
        cls = type(self)
        return all(getattr(cls, name) is getattr(Projector, name) for name in names)

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
        return self.sized_projection(value, text, original_bytes, budget, attachments)[0]

    def sized_projection(
        self,
        value: Any,
        text: str,
        original_bytes: int,
        budget: int,
        attachments: list[Any] | None,
    ) -> tuple[dict[str, Any], int | None]:
        """`project_text`, and with canonical sizes what `retained` would compute, less the
        attachments: the size with empty previews (which the cut needed anyway) plus the
        previews' escaped costs (which the cuts found), so the projection is not serialized
        again just to be measured."""
        projection = self.skeleton(original_bytes, attachments)
        size: int | None = None
        if self.unreplaced("preserve"):
            preserved, size = self.preserve_sized(value, projection, budget, attachments)
        else:
            preserved = self.preserve(value, projection, budget, attachments)
        if preserved:
            projection["preserved_fields"] = preserved
        if size is None:
            size = self.text_size(projection, attachments)
        available = budget - size
        costs: int | None = None
        if self.unreplaced("head_and_tail"):
            head, tail, head_cost, tail_cost = self.cut_preview(text, available)
            costs = head_cost + tail_cost
        else:
            head, tail = self.head_and_tail(text, available)
        projection["preview"] = {"head": head, "tail": tail}
        if not self.canonical_sizes():
            return projection, None
        if costs is None:
            costs = self.string_cost(head) + self.string_cost(tail)
        return projection, size + costs

    def head_and_tail(self, text: str, available: int) -> tuple[str, str]:
        """Head and tail of the canonical text whose escaped costs fit `available` bytes."""
        head, tail, _, _ = self.cut_preview(text, available)
        return head, tail

    def cut_preview(self, text: str, available: int) -> tuple[str, str, int, int]:
        """`head_and_tail`, and the escaped costs of the head and the tail.

        While no cut step is replaced, each cost is the one its bisection found, less the
        few characters the cut then moved by: the previews are not priced again.
        """
        if not self.unreplaced(*_CUT_STEPS):
            head_end = self.cut_head(text, available // 2)
            head = text[:head_end]
            head_cost = self.string_cost(head)
            tail = text[self.cut_tail(text, available - head_cost, head_end):]
            return head, tail, head_cost, self.string_cost(tail)
        i, cost = self.priced_prefix(text, available // 2)
        head_end = self.cut_back(text, i)
        head_cost = cost - self.string_cost(text[head_end:i])
        j, cost = self.priced_suffix(text, available - head_cost, head_end)
        tail_start = self.cut_forward(text, max(head_end, j))  # as cut_tail has it
        tail_cost = cost - self.string_cost(text[j:tail_start])
        return text[:head_end], text[tail_start:], head_cost, tail_cost

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
        or more) can. The candidates come lazily from `candidates_within`, told that bound,
        so the objects whose candidates could not fit are not visited at all.
        """
        return self.preserve_sized(value, projection, budget, attachments)[0]

    def preserve_sized(
        self,
        value: Any,
        projection: dict[str, Any],
        budget: int,
        attachments: list[Any] | None,
    ) -> tuple[dict[str, Any], int | None]:
        """`preserve`, and the projection's size with what it kept when sizes are canonical
        (the first field's trial plus each entry): then `project_text` need not serialize
        the preserved fields again to know it."""
        quarter = self.preserved_limit(budget)
        canonical = self.canonical_sizes()
        # With canonical sizes `{"pointer":0}` is the smallest first field: len(pointer) + 6.
        reach = Reach(quarter - 6 if canonical else _UNBOUNDED)
        candidates: Iterator[tuple[str, Any]]
        if self.unreplaced("preserved_candidates"):
            candidates = self.candidates_within(value, reach)
        else:
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
            return kept, None
        anchor, anchor_size = dict(kept), size
        room = min(budget - size, quarter - fields_size)
        reach.longest = room - 5
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
            size += entry
            reach.longest = room - 5
        return kept, size if canonical else None

    def preserved_limit(self, budget: int) -> int:
        """The most canonical bytes the `preserved_fields` object may take (BUD-22)."""
        return budget // 4

    def canonical_sizes(self) -> bool:
        """Whether sizes are this module's canonical ones (no size seam is replaced).

        Only then may preserve price entries by arithmetic instead of measuring projections.
        """
        return self.unreplaced(*_SIZE_SEAMS)

    def entry_bytes(self, pointer: str, scalar: Any, room: int) -> int | None:
        """Bytes of `,"pointer":scalar` in canonical JSON, or None when it exceeds `room`.

        A string is ruled out by its length before it is encoded: it takes at least one byte
        a character, plus two quotes.
        """
        if type(scalar) is str:
            if len(pointer) + len(scalar) + 6 > room:
                return None
            # escaping is per character: the two texts quoted as one, plus the other 2 quotes
            quoted = encode_basestring(pointer + scalar)
            entry = 4 + (len(quoted) if quoted.isascii() else len(quoted.encode("utf-8")))
        else:
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
        result, not of its list items. Shallowest first, then by pointer; `preservable` must
        accept the value. All of them: `preserve` takes them one by one from
        `candidates_within` instead.
        """
        return list(self.candidates_within(value, Reach(_UNBOUNDED)))

    def candidates_within(self, value: Any, reach: Reach) -> Iterator[tuple[str, Any]]:
        """The candidates in order, generated as they are taken; the objects all of whose
        candidates would be longer than `reach` allows are skipped unvisited.

        Each depth is walked from the root through object members in pointer order: the
        candidates of one depth sorted by pointer are their parents' candidates, parent after
        parent in the order of `parent + "/"` (every parent of a depth has as many `/`), each
        parent's sorted by key; and parents are ordered the same way by their own parents.
        So no depth is collected and sorted whole. Should two members of one object share a
        pointer (keys that are not all strings), the full sort takes over after the last
        candidate given.
        """
        if not isinstance(value, dict):
            return
        last: str | None = None
        try:
            canonical = self.canonical_sizes()
            orders: dict[int, _Members] = {}
            for depth in range(1, MAX_PRESERVED_DEPTH + 1):
                parents = self.parents_at("", value, depth - 1, reach, orders)
                for path, node in parents:
                    fields = self.fields_of(path, node, canonical, reach.longest)
                    if fields:
                        # _Tied comes only between parents: after all of this one is given
                        last = fields[-1][0]
                        yield from fields
        except _Tied:
            # a pointer's depth is its count of `/`: tokens escape theirs
            mark = (0, "") if last is None else (last.count("/"), last)
            for pointer, scalar in self._candidates_by_depth(value):
                if (pointer.count("/"), pointer) > mark:
                    yield pointer, scalar

    def parents_at(
        self,
        path: str,
        node: dict[Any, Any],
        levels: int,
        reach: Reach,
        orders: dict[int, _Members],
    ) -> Iterator[tuple[str, dict[Any, Any]]]:
        """The objects `levels` members below `node` (at `path`), in pointer order.

        The last level's members come straight from `object_members`: every generator
        stacked in between would be resumed once per parent.
        """
        if levels == 0:
            return iter(((path, node),))
        # Below a member: a `/` and a token (possibly empty) per level left, then `/key`.
        members = self.object_members(path, node, levels - 1 + _LAST_SEGMENT, reach, orders)
        if levels == 1:
            return members
        return self.parents_below(members, levels - 1, reach, orders)

    def parents_below(
        self,
        members: Iterator[tuple[str, dict[Any, Any]]],
        levels: int,
        reach: Reach,
        orders: dict[int, _Members],
    ) -> Iterator[tuple[str, dict[Any, Any]]]:
        """`parents_at` for each of `members`, one after the other."""
        for member_path, member in members:
            yield from self.parents_at(member_path, member, levels, reach, orders)

    def object_members(
        self,
        path: str,
        node: dict[Any, Any],
        below: int,
        reach: Reach,
        orders: dict[int, _Members],
    ) -> Iterator[tuple[str, dict[Any, Any]]]:
        """`node`'s members that are objects, as (pointer, member), by `pointer + "/"`.

        A member is skipped when its candidates, `below` characters or more under its
        pointer, would be longer than `reach` allows, and the rest once even the shortest
        token could not do (looked for only then). The tokens are sorted once per object
        (`orders`).
        """
        members = orders.get(id(node))
        if members is None:
            members = orders[id(node)] = self.member_order(node)
        tokens, by_token = members
        base = len(path) + 1 + below  # plus len(token): the shortest candidate under it
        shortest = -1  # the shortest token, once read
        for token in in_pointer_order(tokens):
            if base + len(token) > reach.longest:
                if shortest < 0:
                    if base > reach.longest:
                        return
                    shortest = min(map(len, tokens))
                if base + shortest > reach.longest:
                    return
                continue
            member = by_token[token]
            if isinstance(member, dict):
                yield f"{path}/{token}", member

    def member_order(self, node: dict[Any, Any]) -> _Members:
        """An object's pointer tokens sorted, and the member each names.

        The common object, a dict with string keys that need no escaping, is sorted in C on
        its keys: they are their tokens. Anything else is tokenized member by member.
        """
        if type(node) is dict:
            keys = list(node)
            if set(map(type, keys)) <= _STR_ONLY:
                joined = "".join(keys)
                if "~" not in joined and "/" not in joined:
                    keys.sort()
                    return keys, node
        by_token: dict[str, Any] = {}
        for key, child in node.items():
            if isinstance(child, dict):
                token = pointer_token(key)
                if token in by_token:
                    raise _Tied
                by_token[token] = child
        return sorted(by_token), by_token

    def fields_of(
        self, path: str, node: dict[Any, Any], canonical: bool, longest: int
    ) -> list[tuple[str, Any]]:
        """One parent's candidates, by key: preserved keys holding a scalar `preservable`
        accepts (a short string decided without a call).

        Those whose pointer is longer than `longest` are left out, and with canonical sizes
        the strings with len(pointer) + len(value) + 1 > `longest`: `longest` allows one
        byte for the value, a string takes its characters and two quotes. A large object is
        first asked for each preserved key (none, in a collection keyed by ids), then its
        own key objects are found in C rather than by visiting its members.
        """
        members: Iterable[tuple[Any, Any]]
        ordered = False
        if type(node) is dict and len(node) > _FEW_MEMBERS:
            if not any(map(node.__contains__, PRESERVED_KEYS)):
                return []  # a collection keyed by ids, typically
            keys = PRESERVED_KEYS.intersection(node)  # the node's own key objects
            ordered = set(map(type, keys)) <= _STR_ONLY
            members = [(key, node[key]) for key in sorted(keys)] if ordered else node.items()
        else:
            members = node.items()
        room = longest - len(path) - 1  # for the token (and a string's characters, less 1)
        here: list[tuple[str, Any]] = []
        for key, child in members:
            if key not in PRESERVED_KEYS:
                continue
            token = key if type(key) is str else pointer_token(key)
            if len(token) > room:
                continue
            if type(child) is str:
                if canonical and len(token) + len(child) + 1 > room:
                    continue
                if not (canonical and len(child) <= _SHORT_STR) and \
                        not self.preservable(child, canonical):
                    continue
            elif isinstance(child, _CONTAINERS) or not self.preservable(child, canonical):
                continue
            here.append((f"{path}/{token}", child))
        if len(here) > 1 and not ordered:
            here.sort(key=_POINTER)
        return here

    def _candidates_by_depth(self, value: Any) -> list[tuple[str, Any]]:
        """All candidates, each depth collected breadth first and sorted whole (stable, as
        one sort on (depth, pointer) would be): the order even for keys that tie."""
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
        return self.cut_back(text, self.longest_prefix(text, limit))

    def cut_back(self, text: str, i: int) -> int:
        """The largest allowed cut at or before i (0 if none is)."""
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
        return self.cut_forward(text, max(floor, self.shortest_suffix(text, limit, floor)))

    def cut_forward(self, text: str, j: int) -> int:
        """The smallest allowed cut at or after j (len(text) if none is)."""
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
        """The largest i with string_cost(text[:i]) <= limit, by bisection."""
        return self.priced_prefix(text, limit)[0]

    def priced_prefix(self, text: str, limit: int) -> tuple[int, int]:
        """`longest_prefix`, and the cost of that prefix, which the bisection knows.

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
        return lo, lo_cost

    def shortest_suffix(self, text: str, limit: int, floor: int) -> int:
        """The smallest j >= floor with string_cost(text[j:]) <= limit, by bisection."""
        return self.priced_suffix(text, limit, floor)[0]

    def priced_suffix(self, text: str, limit: int, floor: int) -> tuple[int, int]:
        """`shortest_suffix`, and the cost of that suffix, which the bisection knows.

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
        return hi, hi_cost

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


def in_pointer_order(tokens: list[str]) -> Iterator[str]:
    """Sorted tokens in the order of `token + "/"`, that of the pointers below them.

    The two orders differ only where a token is a prefix of the next one (`ab`, `ab!`: `ab!/`
    sorts first): from the first such token on, the rest is sorted again with the `/`. No
    `/` is appended to every token of a large object up front.
    """
    last = len(tokens) - 1
    for i, token in enumerate(tokens):
        if i < last and tokens[i + 1].startswith(token):
            yield from sorted(tokens[i:], key=_with_slash)
            return
        yield token


def _with_slash(token: str) -> str:
    return token + "/"


def unicode_version() -> str:
    """The Unicode version of the segmentation rules (BUD-10, BUD-23 asks for 15.1 or later)."""
    for version, probe in _VERSION_PROBES:
        if regex.match(r"\p{Assigned}", probe):
            return f"{version} or later" if version == _VERSION_PROBES[0][0] else version
    return "older than 15.1"
