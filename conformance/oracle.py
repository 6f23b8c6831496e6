"""The oracle: what is right for BUD (SPEC §1), decided without the reference engine.

Sizes come from the canonical ``json.dumps`` call itself; Unicode validity from the codec;
"this cut splits a grapheme cluster" from a small rule set over :mod:`unicodedata` that only
flags clusters stable across Unicode versions (the reference uses ``regex``'s
``\\X`` — two independent tools, so a bug in one is not copied into the other). Nothing here
imports ``arck.reference``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import jsonpointer

__all__ = [
    "EscapeIndex",
    "canonical_bytes",
    "canonical_text",
    "canonically_equal",
    "certain_boundary",
    "escape_spans",
    "escaped_size",
    "find_value",
    "inside_escape_at",
    "introduced_replacement_chars",
    "is_multimodal",
    "nesting_depth",
    "non_text_blocks",
    "pointer",
    "resolve_location",
    "size",
    "split_cluster_at",
    "unicode_problems",
]


# --- sizes (BUD-01, BUD-03) -------------------------------------------------------------


def canonical_text(value: Any) -> str:
    """The canonical compact JSON text of SPEC §1 (raises ValueError for NaN/±Infinity)."""
    return json.dumps(
        value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
    )


def canonical_bytes(value: Any) -> bytes:
    """Canonical text as UTF-8; a lone surrogate raises UnicodeEncodeError (a ValueError)."""
    return canonical_text(value).encode("utf-8")


def size(value: Any) -> int:
    """The size of a value: the length of its canonical bytes (BUD-01)."""
    return len(canonical_bytes(value))


def escaped_size(s: str) -> int:
    """Bytes ``s`` takes inside a canonical JSON string literal, quotes excluded."""
    return size(s) - 2


def canonically_equal(a: Any, b: Any) -> bool:
    """Equal canonical forms: ``1``, ``1.0`` and ``true`` differ; key order does not matter.

    Texts are compared (UTF-8 is injective, so this equals comparing bytes where those
    exist); a value with no canonical form (NaN, ±Infinity) equals nothing.
    """
    try:
        return canonical_text(a) == canonical_text(b)
    except (ValueError, TypeError, RecursionError):
        return False


def nesting_depth(value: Any) -> int:
    """Containers nested around the deepest value: ``0`` → 0, ``[]`` → 1, ``[[1]]`` → 2."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in _children(node))
    return deepest


def _children(node: dict[Any, Any] | list[Any]) -> Iterator[Any]:
    return iter(node.values()) if isinstance(node, dict) else iter(node)


# --- Unicode validity (BUD-05, BUD-08) --------------------------------------------------


def pointer(parts: list[str | int]) -> str:
    """RFC 6901 pointer for a path of keys and indices (``~`` → ``~0``, ``/`` → ``~1``)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def walk(value: Any) -> Iterator[tuple[list[str | int], Any]]:
    """Every value (document order) with its path; iterative, so depth is no problem."""
    stack: list[tuple[list[str | int], Any]] = [([], value)]
    while stack:
        path, node = stack.pop()
        yield path, node
        if isinstance(node, dict):
            stack.extend(([*path, k], v) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend(([*path, i], v) for i, v in reversed(list(enumerate(node))))


def _surrogate(s: str) -> str | None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"lone surrogate U+{ord(s[exc.start]):04X} at index {exc.start}"
    return None


def unicode_problems(value: Any) -> list[str]:
    """Lone surrogates in keys and strings, each named by JSON Pointer (``!r``-escaped)."""
    problems: list[str] = []
    for path, node in walk(value):
        if isinstance(node, dict):
            for key in node:
                if isinstance(key, str) and (why := _surrogate(key)):
                    problems.append(f"{pointer([*path, key])!r}: key has {why}")
        elif isinstance(node, str) and (why := _surrogate(node)):
            problems.append(f"{pointer(path)!r}: string has {why}")
    return problems


def introduced_replacement_chars(original_text: str, piece: str) -> bool:
    """True when ``piece`` holds more U+FFFD than the original could have supplied (BUD-08)."""
    return piece.count("\ufffd") > original_text.count("\ufffd")


# --- grapheme clusters stable across Unicode versions (BUD-10) --------------------------

ZWJ = "\u200d"

# Extended_Pictographic code points assigned by Unicode 14.0 (Python's unicodedata) within
# U+2600–27BF, U+2B00–2BFF and U+1F000–1FAFF that are still Extended_Pictographic in recent
# emoji data. Taken once from the data files, not computed at run time. Excludes the regional
# indicators and the skin-tone modifiers (which are Extend, not pictographs).
_PICTOGRAPHS = """
2600-2604 260E 2611 2614-2615 2618 261D 2620 2622-2623 2626 262A 262E-262F 2638-263A 2640 2642
2648-2653 265F-2660 2663 2665-2666 2668 267B 267E-267F 2692-2697 2699 269B-269C 26A0-26A1 26A7
26AA-26AB 26B0-26B1 26BD-26BE 26C4-26C5 26C8 26CE-26CF 26D1 26D3-26D4 26E9-26EA 26F0-26F5
26F7-26FA 26FD 2702 2705 2708-270D 270F 2712 2714 2716 271D 2721 2728 2733-2734 2744 2747 274C
274E 2753-2755 2757 2763-2764 2795-2797 27A1 27B0 27BF 2B05-2B07 2B1B-2B1C 2B50 2B55 1F004
1F0CF 1F170-1F171 1F17E-1F17F 1F18E 1F191-1F19A 1F201-1F202 1F21A 1F22F 1F232-1F23A
1F250-1F251 1F300-1F321 1F324-1F393 1F396-1F397 1F399-1F39B 1F39E-1F3F0 1F3F3-1F3F5
1F3F7-1F3FA 1F400-1F4FD 1F4FF-1F53D 1F549-1F54E 1F550-1F567 1F56F-1F570 1F573-1F57A 1F587
1F58A-1F58D 1F590 1F595-1F596 1F5A4-1F5A5 1F5A8 1F5B1-1F5B2 1F5BC 1F5C2-1F5C4 1F5D1-1F5D3
1F5DC-1F5DE 1F5E1 1F5E3 1F5E8 1F5EF 1F5F3 1F5FA-1F64F 1F680-1F6C5 1F6CB-1F6D2 1F6D5-1F6D7
1F6DD-1F6E5 1F6E9 1F6EB-1F6EC 1F6F0 1F6F3-1F6FC 1F7E0-1F7EB 1F7F0 1F90C-1F93A 1F93C-1F945
1F947-1F9FF 1FA70-1FA74 1FA78-1FA7C 1FA80-1FA86 1FA90-1FAAC 1FAB0-1FABA 1FAC0-1FAC5
1FAD0-1FAD9 1FAE0-1FAE7 1FAF0-1FAF6
"""


def _parse_ranges(spec: str) -> frozenset[int]:
    points: set[int] = set()
    for item in spec.split():
        lo, _, hi = item.partition("-")
        points.update(range(int(lo, 16), int(hi or lo, 16) + 1))
    return frozenset(points)


_PICTO = _parse_ranges(_PICTOGRAPHS)


def _is_extend(ch: str) -> bool:
    """Grapheme_Cluster_Break=Extend (or ZWJ) in every version since 9.0, conservatively."""
    cp = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Me")  # incl. VS FE00–FE0F, E0100–E01EF, U+20E3
        or cp in (0x200C, 0x200D)  # ZWNJ, ZWJ
        or 0x1F3FB <= cp <= 0x1F3FF  # emoji modifiers (Extend since 11.0; GB10 before)
        or 0xE0020 <= cp <= 0xE007F  # tag characters
    )


def _is_control(ch: str) -> bool:
    """GB4/GB5 controls: nothing extends them. Cf other than ZWNJ/ZWJ/tags counts, which is
    safe: treating a Prepend or Extend format character as a control only flags fewer cuts."""
    cat = unicodedata.category(ch)
    if cat == "Cf":
        return not _is_extend(ch)
    return cat in ("Cc", "Zl", "Zp", "Cs")


def _hangul(ch: str) -> str:
    cp = ord(ch)
    if 0x1100 <= cp <= 0x115F or 0xA960 <= cp <= 0xA97C:
        return "L"
    if 0x1160 <= cp <= 0x11A7 or 0xD7B0 <= cp <= 0xD7C6:
        return "V"
    if 0x11A8 <= cp <= 0x11FF or 0xD7CB <= cp <= 0xD7FB:
        return "T"
    if 0xAC00 <= cp <= 0xD7A3:
        return "LV" if (cp - 0xAC00) % 28 == 0 else "LVT"
    return ""


_HANGUL_JOINS = {
    "L": {"L", "V", "LV", "LVT"},  # GB6
    "V": {"V", "T"},  # GB7
    "LV": {"V", "T"},
    "T": {"T"},  # GB8
    "LVT": {"T"},
}


def _is_ri(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def split_cluster_at(text: str, i: int) -> str | None:
    """Why a cut before ``text[i]`` splits a grapheme cluster, or None if it does not.

    Flags only clusters every Unicode version since 9.0 agrees on: CR LF, extending marks
    (Mn, Me, ZWNJ/ZWJ, variation selectors, emoji modifiers, tags, keycap), pictograph ZWJ
    sequences, Hangul L/V/T syllables and regional-indicator pairs. Two emoji rules follow
    Unicode 11+ where 9.0/10.0 differed: a skin-tone modifier always extends (10.0 only after
    an emoji base), and GB11 needs a pictograph before the ZWJ (so ``a`` ZWJ 😀 is two
    clusters). Spacing marks (Mc, GB9a), Prepend and Indic conjuncts (GB9c, Unicode 15.1) are
    deliberately not flagged: segmenters disagree on them across versions.
    """
    if i <= 0 or i >= len(text):
        return None
    prev, cur = text[i - 1], text[i]
    if prev == "\r" and cur == "\n":
        return "splits CR LF (GB3)"
    if _is_control(prev):
        return None
    if _is_extend(cur):
        return f"U+{ord(cur):04X} extends the cluster before it (GB9)"
    if prev == ZWJ and ord(cur) in _PICTO:
        j = i - 2
        while j >= 0 and _is_extend(text[j]) and text[j] != ZWJ:
            j -= 1
        if j >= 0 and ord(text[j]) in _PICTO:
            return "splits an emoji ZWJ sequence (GB11)"
    if _hangul(cur) in _HANGUL_JOINS.get(_hangul(prev), set()):
        return "splits a Hangul syllable (GB6-GB8)"
    if _is_ri(prev) and _is_ri(cur):
        j = i - 1
        while j >= 0 and _is_ri(text[j]):
            j -= 1
        if (i - 1 - j) % 2 == 1:
            return "splits a regional-indicator pair (GB12/GB13)"
    return None


# Characters before which, and after which, no Unicode version joins a cluster: ASCII (bar
# CR before LF) and letters, digits and marks that are never Prepend, Extend, SpacingMark,
# Hangul, regional indicators or pictographs in the categories below.
_PLAIN_BEFORE = frozenset({"Mn", "Me", "Ll", "Lu", "Lt", "Nd"})
_PLAIN_AFTER = frozenset({"Ll", "Lu", "Lt", "Nd"})


def certain_boundary(text: str, i: int) -> bool:
    """Whether every Unicode version since 9.0 puts a cluster boundary before ``text[i]``.

    True only where no rule can join: the character after is ASCII (never Extend, ZWJ,
    SpacingMark, a Hangul jamo, a regional indicator or a pictograph) or a cased letter or
    digit, and the one before is ASCII or a letter, digit or combining mark (never Prepend,
    ZWJ, a regional indicator or a pictograph). CR before LF is the one ASCII pair joined.
    Where this says False a boundary may still be there; the answer is only ever certain.
    """
    if i <= 0 or i >= len(text):
        return i in (0, len(text))
    prev, cur = text[i - 1], text[i]
    if prev == "\r" and cur == "\n":
        return False
    before = prev.isascii() or unicodedata.category(prev) in _PLAIN_BEFORE
    after = cur.isascii() or (prev.isascii() and unicodedata.category(cur) in _PLAIN_AFTER)
    return before and after


# --- JSON escapes in canonical text (BUD-10) --------------------------------------------

_ESCAPE = re.compile(r"\\(?:u[0-9A-Fa-f]{4}|.)", re.DOTALL)


class EscapeIndex:
    """Escape sequences of a JSON text, scanned once; each query is a binary search.

    Scanning runs left to right, so ``\\\\n`` is an escaped backslash followed by a plain n.
    """

    def __init__(self, text: str) -> None:
        self.starts = array("q")  # compact: a 10 MB text may hold millions of escapes
        self.ends = array("q")
        for m in _ESCAPE.finditer(text):
            self.starts.append(m.start())
            self.ends.append(m.end())

    def spans(self) -> list[tuple[int, int]]:
        return list(zip(self.starts, self.ends, strict=True))

    def inside(self, i: int) -> bool:
        """True when a cut at ``i`` falls strictly inside an escape."""
        k = bisect_right(self.starts, i - 1) - 1
        return k >= 0 and i < self.ends[k]


def escape_spans(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of every escape sequence in ``text``, in order."""
    return EscapeIndex(text).spans()


@lru_cache(maxsize=2)
def _index(text: str) -> EscapeIndex:
    return EscapeIndex(text)


def inside_escape_at(text: str, i: int) -> bool:
    """True if a cut at ``i`` falls strictly inside an escape (index cached per text)."""
    return _index(text).inside(i)


# --- locations and values (BUD-11, BUD-19) ----------------------------------------------

_INDEX = re.compile(r"0|[1-9][0-9]*")


def resolve_location(original: Any, location: str) -> tuple[bool, Any]:
    """The value at a JSON Pointer (``""`` or ``/…``) or dotted path (``data.next_cursor``).

    Pointer ``-`` and indices with leading zeros are not found. A dotted segment indexes an
    array only as a plain decimal; keys holding dots are matched by trying longer keys.
    """
    if location == "" or location.startswith("/"):
        try:
            found = jsonpointer.resolve_pointer(original, location)
        except jsonpointer.JsonPointerException:
            return False, None
        if isinstance(found, jsonpointer.EndOfList):
            return False, None
        return True, found
    return _dotted(original, location.split("."))


def _dotted(node: Any, segments: list[str]) -> tuple[bool, Any]:
    if not segments:
        return True, node
    if isinstance(node, list):
        head = segments[0]
        if _INDEX.fullmatch(head) and int(head) < len(node):
            return _dotted(node[int(head)], segments[1:])
        return False, None
    if isinstance(node, dict):
        for n in range(1, len(segments) + 1):
            key = ".".join(segments[:n])
            if key in node:
                found, value = _dotted(node[key], segments[n:])
                if found:
                    return True, value
    return False, None


def find_value(tree: Any, needle: Any) -> bool:
    """Whether some subtree of ``tree`` is canonically equal to ``needle``."""
    kind = type(needle)
    return any(type(node) is kind and canonically_equal(node, needle) for _, node in walk(tree))


def is_multimodal(result: Any) -> bool:
    """Object whose ``content`` is an array of objects with string ``type``, some not text."""
    if not isinstance(result, dict):
        return False
    content = result.get("content")
    return (
        isinstance(content, list)
        and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in content)
        and any(b["type"] != "text" for b in content)
    )


def non_text_blocks(result: Any) -> list[Any]:
    """The non-text blocks of a multimodal result, in order ([] if not multimodal)."""
    if not is_multimodal(result):
        return []
    return [b for b in result["content"] if b["type"] != "text"]
