"""What kind of input failed: the traits of a failing case, in words an implementer can act on.

A shrunk example can be kilobytes of JSON; "escape-heavy; a 2,129-byte result under a
1,024-byte budget" says at a glance which code path to look at. Sizes and nesting come from
the oracle, so the numbers here are the ones the checks judged by.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from typing import Any

from arck.conformance import oracle

__all__ = ["describe"]

DEEP_LEVELS = 8  # nesting at which a value counts as deep
WIDE_MEMBERS = 100  # members or items of one container at which it counts as wide
LONG_STRING_BYTES = 1000  # escaped bytes of one string at which it counts as long
ESCAPE_SHARE = 0.1  # share of escaped characters at which text counts as escape-heavy
MIN_ESCAPES = 8
SAFE_INTEGER = 2**53  # beyond it, integers lose precision in JavaScript and many parsers
ZWJ = "\u200d"
_EMOJI_BLOCKS = ((0x2600, 0x27BF), (0x2B00, 0x2BFF), (0x1F000, 0x1FAFF))
_REGIONAL = (0x1F1E6, 0x1F1FF)
_MODIFIERS = (0x1F3FB, 0x1F3FF)  # skin tones: part of an emoji, not one themselves


def describe(case: Any) -> str:
    """The traits of a failing case; for a `(budget, result)` case, the result's size too.

    E.g. `multimodal (2 non-text blocks), escape-heavy (412 escaped characters); a 2,129-byte
    result under a 1,024-byte budget`.
    """
    budget, value = _budget_case(case)
    traits = ", ".join(_traits(value))
    size = _size(value)
    if budget is None:
        kind = _kind(value)
        what = f"a {size:,}-byte {kind}" if size is not None else f"{_article(kind)} {kind}"
    elif size is None:
        what = f"a result under a {budget:,}-byte budget"
    else:
        where = "under" if size > budget else "within"
        what = f"a {size:,}-byte result {where} a {budget:,}-byte budget"
    return f"{traits}; {what}" if traits else what


def _budget_case(case: Any) -> tuple[int | None, Any]:
    """`(budget, result)` split when the case has that shape, else `(None, case)`."""
    if (
        isinstance(case, tuple | list)
        and len(case) == 2
        and isinstance(case[0], int)
        and not isinstance(case[0], bool)
        and case[0] > 0
    ):
        return case[0], case[1]
    return None, case


def _size(value: Any) -> int | None:
    try:
        return oracle.size(value)
    except (ValueError, TypeError, RecursionError):  # NaN, lone surrogates, 4,301 digits
        return None


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, bool) or value is None:
        return "literal"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else type(value).__name__


def _traits(value: Any) -> list[str]:
    strings: list[str] = []
    numbers: list[int | float] = []
    widest: tuple[int, str] = (0, "")
    for _, node in oracle.walk(value):
        if isinstance(node, dict):
            strings.extend(k for k in node if isinstance(k, str))
            widest = max(widest, (len(node), "an object of {:,} members"))
        elif isinstance(node, list | tuple):
            widest = max(widest, (len(node), "an array of {:,} items"))
        elif isinstance(node, str):
            strings.append(node)
        elif isinstance(node, int | float) and not isinstance(node, bool):
            numbers.append(node)
    traits: list[str] = []
    if oracle.is_multimodal(value):
        blocks = len(oracle.non_text_blocks(value))
        traits.append(f"multimodal ({_plural(blocks, 'non-text block')})")
    escapes, unicode = _text_traits(strings)
    traits += escapes  # first after multimodal: the most common cause of a wrong size
    depth = oracle.nesting_depth(value)
    if depth >= DEEP_LEVELS:
        traits.append(f"deep ({depth:,} levels)")
    if widest[0] >= WIDE_MEMBERS:
        traits.append(f"wide ({widest[1].format(widest[0])})")
    return traits + unicode + _number_traits(numbers)


def _text_traits(strings: list[str]) -> tuple[list[str], list[str]]:
    """Escape-heaviness (a list of at most one), and the Unicode and length traits found."""
    counts: Counter[str] = Counter()
    chars = 0
    for s in strings:
        chars += len(s)
        for ch in s:
            cp = ord(ch)
            if cp < 0x80:
                if ch in '"\\' or cp < 0x20:
                    counts["escape"] += 1
                continue
            if 0xD800 <= cp <= 0xDFFF:
                counts["surrogate"] += 1
                continue
            counts["non-ascii"] += 1
            if ch == ZWJ:
                counts["zwj"] += 1
            elif _REGIONAL[0] <= cp <= _REGIONAL[1]:
                counts["regional"] += 1
            elif any(lo <= cp <= hi for lo, hi in _EMOJI_BLOCKS) and not (
                _MODIFIERS[0] <= cp <= _MODIFIERS[1]
            ):
                counts["emoji"] += 1
            elif unicodedata.combining(ch) or unicodedata.category(ch) == "Me":
                counts["combining"] += 1
    escapes = counts["escape"]
    heavy = escapes >= MIN_ESCAPES and escapes >= ESCAPE_SHARE * chars
    escaping = [f"escape-heavy ({_plural(escapes, 'escaped character')})"] if heavy else []
    out: list[str] = []
    if counts["emoji"] or counts["zwj"]:
        joined = f", {_plural(counts['zwj'], 'ZWJ')}" if counts["zwj"] else ""
        out.append(f"emoji ({counts['emoji']:,}{joined})")
    if counts["regional"] >= 2:
        out.append(f"regional-indicator flags ({counts['regional'] // 2:,})")
    if counts["combining"]:
        out.append(f"combining marks ({counts['combining']:,})")
    if counts["non-ascii"]:
        out.append(f"non-ASCII ({_plural(counts['non-ascii'], 'multibyte character')})")
    if counts["surrogate"]:
        out.append(f"lone surrogates ({counts['surrogate']:,})")
    long = [n for s in strings if (n := _escaped_size(s)) >= LONG_STRING_BYTES]
    if len(long) == 1:
        out.append(f"a long string ({long[0]:,} bytes)")
    elif long:
        out.append(f"long strings ({len(long):,}, the longest {max(long):,} bytes)")
    return escaping, out


def _number_traits(numbers: list[int | float]) -> list[str]:
    out: list[str] = []
    huge = [n for n in numbers if isinstance(n, int) and abs(n) > SAFE_INTEGER]
    if huge:
        digits = max(_digits(n) for n in huge)
        out.append(f"huge integers ({len(huge):,}, up to {digits:,} digits)")
    floats = [n for n in numbers if isinstance(n, float)]
    if any(not math.isfinite(f) for f in floats):
        out.append("NaN or Infinity")
    if floats:
        out.append(f"floats ({len(floats):,})")
    return out


def _digits(n: int) -> int:
    """Decimal digits of |n|, also beyond Python's 4,300-digit str() limit."""
    n = abs(n)
    if n.bit_length() < 10_000:
        return len(str(n))
    digits = int((n.bit_length() - 1) * math.log10(2)) + 1  # of the smallest n of this length
    smallest_longer: int = 10**digits
    return digits + 1 if n >= smallest_longer else digits


def _escaped_size(s: str) -> int:
    """Bytes inside a JSON string literal; for lone surrogates, what UTF-8 would take."""
    try:
        return oracle.escaped_size(s)
    except ValueError:
        return len(s.encode("utf-8", "surrogatepass"))


def _article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
