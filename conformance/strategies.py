"""Hypothesis strategies for BUD checks: adversarial JSON results and byte budgets.

Everything is pure Hypothesis (deterministic under a seed) and independent of the reference.
Large values are built by repeating a small drawn unit, so generation stays fast, passes the
health checks and still shrinks: the shape, the unit and the target size all shrink.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

from hypothesis import strategies as st

from arck.conformance.oracle import escaped_size, non_text_blocks, size

__all__ = [
    "EDGE_BUDGETS",
    "PRESERVED_KEYS",
    "SIZED_UNITS",
    "SNIPPETS",
    "TRAP_FLOATS",
    "adversarial_snippets",
    "adversarial_text",
    "budgets",
    "buried_fields_results",
    "deep_nesting",
    "huge_int_digits",
    "json_keys",
    "json_values",
    "large_results",
    "multimodal_over_budget_cases",
    "multimodal_results",
    "over_budget_cases",
    "preserved_first_entry_case",
    "preserved_quarter_case",
    "preserved_quarter_cases",
    "sized_string",
    "unencodable_results",
    "within_budget_cases",
]

MIN_BUDGET, MAX_BUDGET = 1024, 32768
EDGE_BUDGETS = (1024, 1025, 16384, 32767, 32768)

# fmt: off
# The keys BUD-22 preserves, plus keys that need RFC 6901 escaping.
PRESERVED_KEYS = ("id", "status", "state", "next_cursor", "cursor", "has_more", "total",
                  "code", "error", "type")
_POINTER_KEYS = ("~", "/", "a/b", "m~n", "~1", "~0/", "", "0", "-", "data.next_cursor")

TRAP_FLOATS = (1e16, 1e-7, 1e-5, 5e-324, -0.0, 1.7976931348623157e308, 0.1, 1.0, 2.5e-8)
_TRAP_INTS = (0, -1, 2**53, 2**53 + 1, 2**63 - 1, -(2**63), 2**64, 10**40, -(10**40))

_ESCAPES = ('"', "\\", "\n", "\r", "\t", "\b", "\f", *(chr(c) for c in range(0x20)), "\x7f",
            "\u2028", "\u2029", "</script>", "\\n", "\\u0041", "<>&", "'", "/")
# Plain ASCII first: Hypothesis shrinks sampled_from towards the start of the pool.
# Invisible code points are written as escapes (ZWJ 200D, VS16 FE0F, tags E00xx).
SNIPPETS: tuple[str, ...] = (
    "lorem", " ipsum", "status ok", "0123456789", "a", " ",
    "👨\u200d👩\u200d👧\u200d👦",  # ZWJ family: 7 code points, 25 bytes
    "🇫🇷🇯🇵", "🇫🇷🇯", "🇺",  # flags, an odd run of regional indicators
    "1\ufe0f\u20e3", "#\ufe0f\u20e3",  # keycaps
    "👍🏽", "❤\ufe0f", "😀", "🏽", "\u200d", "\ufe0f",
    "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # tag sequence
    "🏳\ufe0f\u200d🌈", "👩🏽\u200d💻",
    "e\u0301\u0308", "a\u0301", "\u0301", "Z\u0351\u0316\u0334\u0358\u035c\u0322\u0489",
    "\u1100\u1161\u11a8", "\u1100", "\u1161\u11a8", "\uac00\u11a8", "한국어",  # Hangul
    "中文字符", "مَرْحَبًا", "שָׁלוֹם", "क्षि", "กำ", "\r\n", "\ufffd", "\ufeff",
    *_ESCAPES,
)
# fmt: on


def budgets() -> st.SearchStrategy[int]:
    """Budgets in 1,024–32,768 (DEF-02), with extra weight on the edges."""
    return st.one_of(st.sampled_from(EDGE_BUDGETS), st.integers(MIN_BUDGET, MAX_BUDGET))


def adversarial_snippets() -> st.SearchStrategy[str]:
    """One snippet from the hand-picked pool (clusters, scripts, every escape trigger)."""
    return st.sampled_from(SNIPPETS)


@lru_cache(maxsize=4096)
def _cost(ch: str) -> int:
    return escaped_size(ch)


def _filler(n: int) -> str:
    """Exactly ``n`` bytes of plain ASCII (1 byte each in the canonical form)."""
    return ("lorem ipsum dolor sit amet " * (n // 27 + 1))[:n]


def _trim(text: str, max_bytes: int) -> str:
    total, k = escaped_size(text), len(text)
    while total > max_bytes:
        k -= 1
        total -= _cost(text[k])
    return text[:k]


@st.composite
def adversarial_text(draw: st.DrawFn, min_bytes: int = 0, max_bytes: int = 256) -> str:
    """Concatenated snippets whose escaped size is in ``[min_bytes, max_bytes]``.

    Joins may continue a cluster (a base letter then a combining mark) and the final trim
    may cut one: both are what real text looks like.
    """
    parts = draw(st.lists(adversarial_snippets(), max_size=max(1, min(24, max_bytes // 3))))
    text = "".join(parts)
    if text and escaped_size(text) < min_bytes:
        text *= math.ceil(min_bytes / escaped_size(text))
    text = _trim(text, max_bytes)
    return text + _filler(max(0, min_bytes - escaped_size(text)))


def json_keys() -> st.SearchStrategy[str]:
    """Keys BUD-22 preserves, keys that need pointer escaping, and adversarial text."""
    return st.one_of(
        st.sampled_from(PRESERVED_KEYS),
        st.sampled_from(_POINTER_KEYS),
        adversarial_text(max_bytes=24),
    )


def json_values(max_leaves: int = 10) -> st.SearchStrategy[Any]:
    """JSON values with trap floats, huge integers, adversarial strings and keys."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**40), 10**40),
        st.sampled_from(_TRAP_INTS),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(TRAP_FLOATS),
        adversarial_text(max_bytes=128),
    )
    return st.recursive(
        scalars,
        lambda kids: st.one_of(
            st.lists(kids, max_size=4), st.dictionaries(json_keys(), kids, max_size=4)
        ),
        max_leaves=max_leaves,
    )


# --- large results: a unit repeated n times, then padded to the exact target size ---------

Builder = Callable[[int, str], Any]  # (repeat count, ASCII pad) -> value; size linear in both


# Units whose escaped cost differs from their character count: 1, 2, 3, 4 and 6 bytes.
SIZED_UNITS = ("a", "é", "中", "😀", "\\", '"', "\u0001", "\n")


def sized_string(unit: str, total: int) -> str:
    """A string whose canonical size (quotes included) is exactly ``total`` (>= 2) bytes:
    as many ``unit``s as fit, then ASCII padding."""
    text = unit * max(0, (total - 2) // escaped_size(unit))
    return text + _filler(total - 2 - escaped_size(text))


def _edge_scalars() -> st.SearchStrategy[Any]:
    """Scalars at BUD-22's 128-byte limit: 126 to 131 canonical bytes, in every byte width,
    and integers of 127 to 130 digits; they are preserved up to 128 bytes and never past it."""
    return st.one_of(
        st.builds(sized_string, st.sampled_from(SIZED_UNITS), st.integers(126, 131)),
        st.builds(lambda n, sign: sign * (10**n - 1), st.integers(127, 130),
                  st.sampled_from((1, -1))),
    )


def _scalar_fields() -> st.SearchStrategy[dict[str, Any]]:
    """Status-like fields, sometimes longer than BUD-22's 128 bytes, sometimes just at it."""
    cursor = st.one_of(
        st.text("abcdefXYZ0123456789-_=", min_size=1, max_size=40),
        adversarial_text(min_bytes=1, max_bytes=60),
        st.builds(lambda t: t * 20, st.sampled_from(("c0ffee", "中", "\\"))),
    )
    return st.fixed_dictionaries(
        {
            "next_cursor": st.one_of(cursor, _edge_scalars()),
            "status": st.sampled_from(("ok", "done", "pending", "failed", '"quoted"')),
            "has_more": st.booleans(),
            "id": st.one_of(
                st.integers(0, 10**20), st.text("0123456789abcdef", min_size=1, max_size=32)
            ),
        },
        optional={"code": _edge_scalars(), "error": _edge_scalars()},
    )


def _units() -> st.SearchStrategy[Any]:
    return json_values(max_leaves=6)


def _text_units() -> st.SearchStrategy[str]:
    return adversarial_text(min_bytes=1, max_bytes=200)


def _string_shape() -> st.SearchStrategy[Builder]:
    return st.builds(lambda u: lambda n, pad: u * n + pad, _text_units())


def _array_shape() -> st.SearchStrategy[Builder]:
    return st.builds(lambda u: lambda n, pad: [*([u] * n), pad], _units())


def _object_shape() -> st.SearchStrategy[Builder]:
    def make(u: Any, f: dict[str, Any]) -> Builder:
        return lambda n, pad: {**f, **{f"k{i:06d}": u for i in range(n)}, "note": pad}

    return st.builds(make, _units(), _scalar_fields())


def _pages_shape() -> st.SearchStrategy[Builder]:
    def make(u: Any, f: dict[str, Any], depth: int) -> Builder:
        def build(n: int, pad: str) -> Any:
            node: dict[str, Any] = {
                "items": [u] * n,
                "next_cursor": f["next_cursor"],
                "has_more": f["has_more"],
            }
            if depth >= 3:
                node = {"page": node, "state": "open"}
            if depth >= 2:
                node = {"data": node, "status": f["status"]}
            return {**node, "id": f["id"], "summary": pad}

        return build

    return st.builds(make, _units(), _scalar_fields(), st.integers(1, 3))


def _escapes_shape() -> st.SearchStrategy[Builder]:
    unit = st.lists(st.sampled_from(_ESCAPES), min_size=1, max_size=12).map("".join)
    return st.builds(lambda u, f: lambda n, pad: {"log": u * n + pad, **f}, unit, _scalar_fields())


def _deep_shape() -> st.SearchStrategy[Builder]:
    def make(u: Any, depth: int, f: dict[str, Any]) -> Builder:
        def build(n: int, pad: str) -> Any:
            node: Any = {"items": [u] * n, "note": pad}
            for level in range(depth):
                node = {"level": level, "child": node}
            return {**f, "data": node}

        return build

    return st.builds(make, _units(), st.integers(1, 40), _scalar_fields())


def _keyed_shape() -> st.SearchStrategy[Builder]:
    """Records keyed by id in an object: every record's status-like fields are candidates
    (`/records/r00001/status`), so the quarter-of-the-budget cap of BUD-22 decides."""

    def make(record: dict[str, Any], f: dict[str, Any]) -> Builder:
        return lambda n, pad: {**f, "records": {f"r{i:05d}": record for i in range(n)},
                               "summary": pad}

    record = st.dictionaries(
        st.sampled_from(PRESERVED_KEYS),
        st.one_of(_edge_scalars(), st.integers(0, 10**6), adversarial_text(max_bytes=40)),
        min_size=1,
        max_size=4,
    )
    return st.builds(make, record, _scalar_fields())


def _text_blocks_shape() -> st.SearchStrategy[Builder]:
    """`content` holding only text blocks: not multimodal, so projected as text-only."""

    def make(unit: str, f: dict[str, Any]) -> Builder:
        return lambda n, pad: {**f, "content": [{"type": "text", "text": unit}] * n, "note": pad}

    return st.builds(make, _text_units(), _scalar_fields())


_SHAPES = (_string_shape, _array_shape, _object_shape, _pages_shape, _escapes_shape, _deep_shape,
           _keyed_shape, _text_blocks_shape)


@cache
def _shape_strategies() -> tuple[st.SearchStrategy[Builder], ...]:
    """Each shape's strategy, built once: hypothesis validates a strategy the first time it
    is drawn from, and a fresh one per example spent more time in that than in drawing."""
    return tuple(shape() for shape in _SHAPES)


def _fit(build: Builder, target: int) -> Any:
    """The value of exactly ``target`` bytes: n repeats below it, then ASCII padding."""
    s0, s1 = size(build(0, "")), size(build(1, ""))
    if s0 > target:  # wrapper alone too big: plain string
        return _filler(max(0, target - 2))
    if s1 > target:
        value = build(0, _filler(target - s0))
    else:
        step = size(build(2, "")) - s1
        n = 1 + (target - s1) // step
        value = build(n, _filler(target - s1 - (n - 1) * step))
    if size(value) != target:  # a shape that is not linear is a bug here, not in the target
        raise AssertionError(f"large_results built {size(value)} bytes, wanted {target}")
    return value


@st.composite
def large_results(draw: st.DrawFn, min_bytes: int, max_bytes: int) -> Any:
    """Results whose canonical size lies in ``[min_bytes, max_bytes]`` (≥ 2 bytes)."""
    if not 2 <= min_bytes <= max_bytes:
        raise ValueError(f"need 2 <= min_bytes <= max_bytes, got {min_bytes}, {max_bytes}")
    target = draw(st.integers(min_bytes, max_bytes))
    build = draw(draw(st.sampled_from(_shape_strategies())))
    return _fit(build, target)


@st.composite
def over_budget_cases(draw: st.DrawFn) -> tuple[int, Any]:
    """``(budget, result)`` with ``size(result) > budget``: just over, 2× or up to ~6×."""
    budget = draw(budgets())
    high = draw(st.sampled_from((budget + 64, 2 * budget, 6 * budget)))
    return budget, draw(large_results(budget + 1, high))


@st.composite
def within_budget_cases(draw: st.DrawFn) -> tuple[int, Any]:
    """``(budget, result)`` with ``size(result) <= budget``, often exactly at the budget."""
    budget = draw(budgets())
    small = json_values(max_leaves=8).filter(lambda v: size(v) <= budget)
    low = draw(st.sampled_from((budget, budget - 1, budget // 2, 2)))
    return budget, draw(st.one_of(large_results(low, budget), small))


def preserved_quarter_case(budget: int, unit: str, key: str, over: int) -> tuple[int, Any]:
    """``(budget, result)`` whose preserved-field candidates fill floor(budget / 4) bytes of
    `preserved_fields` exactly (``over == 0``), or miss it by ``over`` bytes (BUD-22).

    Candidates sit at `/gNNN/<key>` in pointer order, values of ``unit`` padded to exact sizes;
    the last sized one lands on the edge, and a short `/g999/id` follows that fits only when
    the one before it was skipped: greedy filling keeps it, filling in order and stopping does
    not.
    """
    target = budget // 4 + over
    result: dict[str, Any] = {}
    total = 2  # the braces of preserved_fields
    for i in range(999):
        base = (1 if i else 0) + size(f"/g{i:03d}/{key}") + 1  # comma, "pointer", colon
        remaining = target - total - base
        last = remaining <= 128
        value = remaining if last else 100  # leaves > 28 bytes: room for one more entry
        result[f"g{i:03d}"] = {key: sized_string(unit, value)}
        total += base + value
        if last:
            break
    result["g999"] = {"id": 0}
    result["note"] = _filler(budget)
    return budget, result


def preserved_first_entry_case(budget: int, over: int) -> tuple[int, Any]:
    """``(budget, result)`` whose first preserved-field candidate alone makes `preserved_fields`
    floor(budget / 4) + ``over`` bytes (a long key in its pointer), then a short `/z/id` that
    fits only when the first was skipped (BUD-22)."""
    key = "k" * (budget // 4 + over - 2 - 1 - 100 - size("//status"))  # braces, colon, value
    result = {key: {"status": sized_string("a", 100)}, "z": {"id": 0}, "note": _filler(budget)}
    return budget, result


def preserved_quarter_cases() -> st.SearchStrategy[tuple[int, Any]]:
    """`preserved_quarter_case` over budgets, units of every byte width, keys, and the fit
    exactly / one byte short / one byte over."""
    return st.builds(
        preserved_quarter_case,
        budgets(),
        st.sampled_from(SIZED_UNITS),
        st.sampled_from(PRESERVED_KEYS),
        st.sampled_from((-1, 0, 1)),
    )


# --- values JSON cannot hold (BUD-05) ----------------------------------------------------

_SURROGATES = ("\ud800", "\udfff", "\ud83d", "\ude00\ud83d", "\udbff")


@st.composite
def unencodable_results(draw: st.DrawFn) -> Any:
    """A result holding NaN, ±Infinity or a lone surrogate (key or string) at depth 0–4."""
    kind = draw(st.sampled_from(("nan", "inf", "-inf", "string", "key")))
    bad = "".join(
        (
            draw(adversarial_text(max_bytes=16)),
            draw(st.sampled_from(_SURROGATES)),
            draw(adversarial_text(max_bytes=16)),
        )
    )
    value: Any = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(kind, bad)
    if kind == "key":
        value = {bad: draw(json_values(max_leaves=2))}
    for key in reversed(draw(st.lists(st.one_of(st.none(), json_keys()), max_size=4))):
        value = [draw(json_values(max_leaves=2)), value] if key is None else {key: value}
    return value


# --- multimodal results (BUD-19, BUD-21) -------------------------------------------------

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_MEDIA = {"image": "image/png", "audio": "audio/wav", "file": "application/pdf"}


@st.composite
def _non_text_block(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(tuple(_MEDIA)))
    unit = draw(st.text(_B64, min_size=4, max_size=64))
    length = draw(st.integers(1024, 60 * 1024))
    block: dict[str, Any] = {
        "type": kind,
        "source": {
            "type": "base64",
            "media_type": _MEDIA[kind],
            "data": (unit * (length // len(unit) + 1))[:length],
        },
    }
    if kind == "file":
        block["name"] = draw(adversarial_text(min_bytes=1, max_bytes=40))
    return block


@st.composite
def _text_block(draw: st.DrawFn) -> dict[str, Any]:
    text = draw(adversarial_text(max_bytes=512)) * draw(st.sampled_from((1, 1, 10, 100)))
    return {"type": "text", "text": text}


@st.composite
def multimodal_results(draw: st.DrawFn) -> dict[str, Any]:
    """``{"content": [...], ...}`` with text blocks and at least one non-text block."""
    blocks = draw(st.lists(_non_text_block(), min_size=1, max_size=3))
    blocks += draw(st.lists(_text_block(), max_size=3))
    result: dict[str, Any] = {"content": draw(st.permutations(blocks))}
    result.update(
        draw(
            st.dictionaries(
                st.sampled_from(("id", "status", "model", "is_error")),
                json_values(max_leaves=3),
                max_size=3,
            )
        )
    )
    return result


def _text_part(result: Any) -> int:
    """Profile reading of BUD-21: size minus the size of the attachments array."""
    return size(result) - size(non_text_blocks(result))


@st.composite
def multimodal_over_budget_cases(draw: st.DrawFn) -> tuple[int, dict[str, Any]]:
    """``(budget, result)`` whose text part (size − attachments) exceeds the budget."""
    budget = draw(budgets())
    result = draw(multimodal_results())
    content = result["content"]
    if draw(st.booleans()):  # only non-text blocks: the text part is the other members
        content[:] = [b for b in content if b["type"] != "text"]
        holder: dict[str, Any] = result
        field = "summary"
        holder[field] = ""
    else:
        texts = [b for b in content if b["type"] == "text"]
        if not texts:
            texts = [{"type": "text", "text": ""}]
            content.insert(draw(st.integers(0, len(content))), texts[0])
        holder, field = texts[0], "text"
    need = budget + 1 + draw(st.integers(0, budget)) - _text_part(result)
    if need > 0:
        unit = draw(adversarial_text(min_bytes=1, max_bytes=64))
        holder[field] += unit * math.ceil(need / escaped_size(unit))
    return budget, result


# --- cursors, ids and status where a projection drops them (BUD-20) ----------------------

_STATUSES = ("ok", "done", "pending", "failed", '"quoted"', "中文", "a\\b")


@st.composite
def buried_fields_results(draw: st.DrawFn, budget: int) -> dict[str, Any]:
    """A result over ``budget`` whose cursors, ids and status sit where a projection drops
    them, between two runs of text each at least ``budget`` bytes long (keys sort them
    there: `a_log` < `m` < `z_log`): a cursor five levels deep, the ids and status of a long
    list's items, a cursor longer than BUD-22's 128 bytes, many records keyed by id; and,
    sometimes, shallow status-like fields beside them, which a projection may keep."""
    cursor = st.one_of(st.text("abcdefXYZ0123456789-_=", min_size=1, max_size=40),
                       adversarial_text(min_bytes=1, max_bytes=60))
    status = st.sampled_from(_STATUSES)
    kinds = draw(st.sets(st.sampled_from(("deep", "items", "long", "records")), min_size=1))
    buried: dict[str, Any] = {}
    if "deep" in kinds:
        buried["meta"] = {"paging": {"links": {"next": {"cursor": draw(cursor)}}}}
    if "items" in kinds:
        buried["items"] = [{"id": f"it-{i:04d}", "status": draw(status)}
                           for i in range(draw(st.integers(1, 40)))]
    if "long" in kinds:
        long = st.builds(sized_string, st.sampled_from(SIZED_UNITS), st.integers(130, 400))
        buried["page"] = {"next_cursor": draw(long), "has_more": draw(st.booleans())}
    if "records" in kinds:
        buried["records"] = {f"r{i:03d}": {"state": draw(status), "total": i}
                             for i in range(draw(st.integers(1, 30)))}
    shallow = draw(st.dictionaries(st.sampled_from(("id", "status", "next_cursor", "has_more")),
                                   st.one_of(cursor, st.booleans(), st.integers(0, 10**9)),
                                   max_size=4))
    runs = st.builds(sized_string, st.sampled_from(SIZED_UNITS),
                     st.integers(budget, 2 * budget))
    return {"a_log": draw(runs), "m": buried, "z_log": draw(runs), **shallow}


# --- plain helpers -----------------------------------------------------------------------


def deep_nesting(depth: int, leaf: Any = None) -> Any:
    """``leaf`` inside ``depth`` nested lists (``deep_nesting(2) == [[None]]``), built
    iteratively. Note json.dumps itself raises RecursionError near depth 1,000 on 3.11."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def huge_int_digits(n: int, negative: bool = False) -> int:
    """An integer of exactly ``n`` decimal digits (4,301 is past Python's str limit)."""
    value: int = 10**n - 1
    return -value if negative else value
