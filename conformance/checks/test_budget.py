"""BUD: tool result context budgets, observed through dry-run (SPEC §1, §3).

Every expectation is computed here by the oracle from the requirement text; the target's own
numbers are only ever compared against it.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from typing import Any

from hypothesis import strategies as st

from arck.conformance import oracle
from arck.conformance import strategies as s
from arck.conformance.checking import check, expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure
from arck.conformance.judge import answer, context_preview, refused

PRESERVED_KEYS = ("id", "status", "state", "next_cursor", "cursor", "has_more", "total", "code",
                  "error", "type")  # BUD-22
SLACK_BYTES = 16  # BUD-13


def _preview(ctx: CheckContext, budget: int, result: Any, rid: str | tuple[str, ...]) -> Any:
    return context_preview(ctx.dry_run(ctx.version(budget), result), rid)


def _text_projection(preview: dict[str, Any], rid: str | tuple[str, ...]) -> tuple[str, str]:
    projected = preview["result"]
    box = projected.get("preview") if isinstance(projected, dict) else None
    head = box.get("head") if isinstance(box, dict) else None
    tail = box.get("tail") if isinstance(box, dict) else None
    if not isinstance(head, str) or not isinstance(tail, str):
        raise CheckFailure(
            rid,
            "a projection object holding string preview.head and preview.tail",
            f"{json.dumps(projected, ensure_ascii=False)[:300]}",
        )
    return head, tail


cases_any = st.one_of(s.within_budget_cases(), s.over_budget_cases())
MULTIBYTE_UNITS = (
    "中文", "😀", "é", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "e\u0301", "1️⃣", "\u1100\u1161\u11a8", "ж\n",
)


@st.composite
def _multibyte_cases(draw: st.DrawFn) -> tuple[int, Any]:
    """Over-budget text with no ASCII run to cut in: every cut lands next to a multibyte
    character or cluster, where byte, code-unit and code-point cuts go wrong."""
    budget = draw(s.budgets())
    unit = draw(st.sampled_from(MULTIBYTE_UNITS))
    factor = draw(st.sampled_from((1, 2, 5)))
    return budget, unit * (factor * budget // oracle.escaped_size(unit) + 1)


cut_cases = st.one_of(s.over_budget_cases(), _multibyte_cases())
# Cuts that split a surrogate pair, a UTF-8 sequence, a ZWJ family, a combining sequence or an
# escape, whichever way the bytes fall (odd and even budgets).
CUT_EXAMPLES = (
    *(
        (budget, unit * (2 * budget // oracle.escaped_size(unit)))
        for budget in (1024, 1025)
        for unit in ("😀", "中文", "👨‍👩‍👧‍👦", "e\u0301", "\\\n\u0000")
    ),
    (1024, {"z": [1, {"b": "x", "a": None}] * 200, "status": "ok"}),  # separators, key order
    # Every phase of a repeating escape or cluster under both cuts: consecutive budgets move
    # each cut by about half a byte, so a cut that may land inside one is made to, whatever
    # the seed and however few examples are drawn.
    *(
        (budget, unit * (2 * budget // oracle.escaped_size(unit)))
        for unit, phases in (("\\\n\u0000", 32), ("👨‍👩‍👧‍👦", 16), ("a\u0301\"", 8))
        for budget in range(1026, 1026 + phases)
    ),
    # clusters longer than a segmenter's window, right after an escape (in the canonical text
    # `\n` then 40 combining marks make one cluster on the `n`): a cut must look back past
    # the window and the escape to the cluster's start, not give up with an empty head
    *((budget, (unit * 60)) for unit in ("\n" + "\u0301" * 40, "x\n" + "\u0301" * 80)
      for budget in range(1024, 1040)),
)
# Floats where fast serializers differ from the canonical spelling (orjson: 1e-7 vs 1e-07).
_float_lists = st.lists(
    st.one_of(st.sampled_from(s.TRAP_FLOATS), st.floats(allow_nan=False, allow_infinity=False)),
    min_size=1,
    max_size=8,
)


SIZE_EXAMPLES = (
    (1024, {"f": [1e-7, 1e16, 1e-5, 5e-324, -0.0], "t": "中😀\n\""}),
    (1024, {"n": [10**30, -(2**64)], "t": "\u2028<&>"}),
)


@property_check(
    "BUD-01",
    cases=st.one_of(cases_any, st.tuples(st.just(1024), _float_lists)),
    examples=SIZE_EXAMPLES,
)
def test_size_is_canonical_utf8(ctx: CheckContext, case: Any) -> None:
    """original_bytes is the length of the canonical compact JSON in UTF-8."""
    budget, result = case
    preview = _preview(ctx, budget, result, "BUD-01")
    want = oracle.size(result)
    expect(
        preview["original_bytes"] == want,
        "BUD-01",
        f"original_bytes == {want} (canonical compact JSON, UTF-8)",
        lambda: f"original_bytes == {preview['original_bytes']!r}",
        hint="Measure with json.dumps(v, ensure_ascii=False, sort_keys=True, "
        "separators=(',', ':'), allow_nan=False).encode('utf-8').",
    )


@st.composite
def _envelopes(draw: st.DrawFn) -> tuple[Any, str]:
    result = draw(s.json_values(max_leaves=6))
    receipt_id = "arck-" + draw(s.adversarial_text(min_bytes=1, max_bytes=300))
    return result, receipt_id


@property_check("BUD-02", cases=_envelopes())
def test_only_result_is_measured(ctx: CheckContext, case: Any) -> None:
    """The receipt envelope (here a long, escaped receipt_id) never counts."""
    result, receipt_id = case
    exchange = ctx.dry_run(ctx.version(1024), result, receipt_id=receipt_id)
    preview = context_preview(exchange, "BUD-02")
    want = oracle.size(result)
    expect(
        preview["original_bytes"] == want,
        "BUD-02",
        f"original_bytes == {want}, the size of `result` alone",
        lambda: f"{preview['original_bytes']!r} with a receipt_id of "
        f"{oracle.size(receipt_id)} bytes",
    )


@property_check("BUD-03", "BUD-07", cases=s.over_budget_cases())
def test_projection_fits_budget(ctx: CheckContext, case: Any) -> None:
    """An over-budget result is projected, and everything the projection adds is counted."""
    budget, result = case
    preview = _preview(ctx, budget, result, "BUD-07")
    expect(preview["truncated"] is True, "BUD-07", "truncated == true",
           lambda: f"truncated == {preview['truncated']!r}")
    got = oracle.size(preview["result"])
    expect(
        got <= budget,
        "BUD-03",
        f"the projection's canonical size <= budget {budget} (quotes, escapes, markers count)",
        f"{got} bytes",
    )
    expect(
        preview["retained_bytes"] == got,
        "BUD-03",
        f"retained_bytes == {got}, the projection's canonical size",
        lambda: f"retained_bytes == {preview['retained_bytes']!r}",
    )


@st.composite
def _byte_edges(draw: st.DrawFn) -> tuple[int, str, int]:
    budget = draw(s.budgets())
    unit = draw(st.sampled_from(("中", "😀", "é", "\\", '"', "\n", "\u2028", "ж")))
    over = draw(st.sampled_from((0, 1)))
    return budget, unit, over


def _exact_string(unit: str, total: int) -> str:
    """A string whose canonical size is exactly `total` bytes: units, then ASCII padding."""
    cost = oracle.escaped_size(unit)
    n = max(0, (total - 2) // cost)
    text = unit * n
    return text + "x" * (total - oracle.size(text))


@property_check("BUD-04", "BUD-06", "BUD-07", cases=_byte_edges())
def test_budget_is_bytes(ctx: CheckContext, case: Any) -> None:
    """At exactly the budget nothing is cut; one byte over, it is (multibyte text, escapes)."""
    budget, unit, over = case
    result = _exact_string(unit, budget + over)
    preview = _preview(ctx, budget, result, "BUD-04")
    want = bool(over)
    expect(
        preview["truncated"] is want,
        "BUD-04",
        f"truncated == {str(want).lower()} for a {budget + over}-byte result "
        f"({len(result)} characters) under a {budget}-byte budget",
        lambda: f"truncated == {preview['truncated']!r}",
        hint="The budget is bytes of canonical UTF-8, not characters, escapes or tokens.",
    )


@property_check("BUD-05", cases=s.unencodable_results())
def test_unencodable_result_refused(ctx: CheckContext, case: Any) -> None:
    """NaN, ±Infinity and lone surrogates are refused, never coerced (e.g. NaN → null)."""
    version = ctx.version(1024)
    body = {
        "agent_version": version.agent_version,
        "tool_name": version.tool_name,
        "arguments": {},
        "mock_receipts": [{"receipt_id": "arck-bad", "kind": "completed", "result": case}],
    }
    raw = json.dumps(body, ensure_ascii=True, allow_nan=True).encode("ascii")
    exchange = ctx.target.dry_run(raw)
    expect(
        refused(exchange),
        "BUD-05",
        "the receipt refused with a 4xx error (the value cannot be encoded as JSON)",
        exchange.describe,
        hint=f"Reproduce: {exchange.as_curl()}",
    )


@property_check("BUD-06", cases=s.within_budget_cases())
def test_within_budget_unchanged(ctx: CheckContext, case: Any) -> None:
    budget, result = case
    preview = _preview(ctx, budget, result, "BUD-06")
    want = oracle.size(result)
    seen = (preview["truncated"], preview["retained_bytes"], preview["original_bytes"])
    expect(
        seen == (False, want, want),
        "BUD-06",
        f"truncated == false and retained_bytes == original_bytes == {want}",
        f"(truncated, retained, original) == {seen!r}",
    )
    expect(
        oracle.canonically_equal(preview["result"], result),
        "BUD-06",
        "the result byte-identical to the original in canonical form",
        lambda: f"{oracle.canonical_text(preview['result'])[:200]!r}",
    )


@property_check("BUD-08", cases=cut_cases, examples=CUT_EXAMPLES)
def test_projection_is_valid_json_and_unicode(ctx: CheckContext, case: Any) -> None:
    """The answer decodes and parses strictly; no cut leaves a surrogate or adds U+FFFD."""
    budget, result = case
    preview = context_preview(ctx.dry_run(ctx.version(budget), result), "BUD-08")
    original = oracle.canonical_text(result)
    cut = preview["result"]
    if isinstance(cut, dict):  # preserved fields are copies, judged by BUD-11
        cut = {k: v for k, v in cut.items() if k != "preserved_fields"}
    projected = oracle.canonical_text(cut)
    expect(
        not oracle.introduced_replacement_chars(original, projected),
        "BUD-08",
        "no U+FFFD beyond those in the original",
        f"{projected.count(chr(0xFFFD))} U+FFFD in the projection, "
        f"{original.count(chr(0xFFFD))} in the original",
        hint="A cut inside a UTF-8 sequence, decoded with errors='replace', does this.",
    )


@property_check("BUD-09", cases=cut_cases, examples=CUT_EXAMPLES)
def test_preview_is_head_and_tail(ctx: CheckContext, case: Any) -> None:
    budget, result = case
    head, tail = _text_projection(_preview(ctx, budget, result, "BUD-09"), "BUD-09")
    text = oracle.canonical_text(result)
    expect(text.startswith(head), "BUD-09", "preview.head a prefix of the canonical text",
           lambda: f"head ending {head[-40:]!r}; text begins {text[:len(head)][-40:]!r}")
    expect(text.endswith(tail), "BUD-09", "preview.tail a suffix of the canonical text",
           lambda: f"tail starting {tail[:40]!r}; text ends {text[len(text) - len(tail):][:40]!r}")
    expect(len(head) + len(tail) < len(text), "BUD-09",
           "head and tail not overlapping and shorter than the text",
           f"{len(head)} + {len(tail)} characters of {len(text)}")


@property_check("BUD-10", cases=cut_cases, examples=CUT_EXAMPLES)
def test_cuts_keep_clusters_and_escapes_whole(ctx: CheckContext, case: Any) -> None:
    budget, result = case
    head, tail = _text_projection(_preview(ctx, budget, result, "BUD-10"), "BUD-10")
    text = oracle.canonical_text(result)
    for which, cut in (("head", len(head)), ("tail", len(text) - len(tail))):
        around = text[max(0, cut - 8) : cut + 8]
        why = oracle.split_cluster_at(text, cut)
        expect(why is None, "BUD-10", f"the {which} cut on a grapheme cluster boundary",
               lambda: f"cut at {cut} ({why}) in {around!r}")  # noqa: B023
        expect(not oracle.inside_escape_at(text, cut), "BUD-10",
               f"the {which} cut outside JSON escapes", f"cut at {cut} inside {around!r}")


@property_check("BUD-11", cases=s.over_budget_cases())
def test_preserved_fields_are_copied_exactly(ctx: CheckContext, case: Any) -> None:
    budget, result = case
    projected = _preview(ctx, budget, result, "BUD-11")["result"]
    preserved = projected.get("preserved_fields") if isinstance(projected, dict) else None
    if preserved is None:
        return
    expect(isinstance(preserved, dict), "BUD-11", "preserved_fields an object",
           f"{type(preserved).__name__}")
    for location, value in preserved.items():
        found, original = oracle.resolve_location(result, location)
        expect(found, "BUD-11", f"location {location!r} to exist in the original",
               "nothing there (an invented field)")
        expect(oracle.canonically_equal(value, original), "BUD-11",
               f"{location!r} == {oracle.canonical_text(original)[:120]}",
               f"{oracle.canonical_text(value)[:120]}")


@st.composite
def _status_cases(draw: st.DrawFn) -> tuple[int, Any, str]:
    budget, result = draw(s.over_budget_cases())
    status = draw(st.sampled_from(("ok", "pending", "failed", "completed", "partial")))
    return budget, {"status": status, "data": result}, status


@property_check("BUD-12", cases=_status_cases())
def test_status_fields_kept(ctx: CheckContext, case: Any) -> None:
    budget, result, status = case
    projected = _preview(ctx, budget, result, "BUD-12")["result"]
    preserved = projected.get("preserved_fields") if isinstance(projected, dict) else None
    kept = isinstance(preserved, dict) and any(
        v == status and oracle.resolve_location(result, k) == (True, status)
        for k, v in preserved.items()
    )
    expect(kept, "BUD-12", f"top-level status {status!r} kept in preserved_fields",
           f"preserved_fields == {preserved!r}")


def _kept_out(text: str, cut: int, step: int) -> int:
    """Cost of the stretch from a cut to the next certain boundary, in direction `step`.

    Between two ASCII characters outside an escape there is always a cluster boundary, so a
    cut that stopped early to keep a cluster whole gave up at most this much.
    """
    escapes = oracle.EscapeIndex(text)
    i = cut
    while 0 < i < len(text):
        nxt = i + step
        if 0 < nxt < len(text) and text[nxt - 1].isascii() and text[nxt].isascii() \
                and not escapes.inside(nxt):
            i = nxt
            break
        i = nxt
    lo, hi = sorted((cut, i))
    return oracle.escaped_size(text[lo:hi])


@property_check("BUD-13", cases=s.over_budget_cases(), examples=CUT_EXAMPLES)
def test_budget_is_used(ctx: CheckContext, case: Any) -> None:
    budget, result = case
    preview = _preview(ctx, budget, result, "BUD-13")
    head, tail = _text_projection(preview, "BUD-13")
    text = oracle.canonical_text(result)
    allowance = SLACK_BYTES + _kept_out(text, len(head), 1) + \
        _kept_out(text, len(text) - len(tail), -1)
    retained = oracle.size(preview["result"])
    expect(
        retained >= budget - allowance,
        "BUD-13",
        f"retained_bytes >= {budget - allowance} (budget {budget} − 16 − clusters kept out)",
        f"{retained}",
    )


@property_check("BUD-14", cases=s.over_budget_cases())
def test_projection_is_deterministic(ctx: CheckContext, case: Any) -> None:
    budget, result = case
    version = ctx.version(budget)
    first = context_preview(ctx.dry_run(version, result), "BUD-14")["result"]
    second = context_preview(ctx.dry_run(version, result, receipt_id="arck-again"), "BUD-14")
    expect(
        oracle.canonical_bytes(first) == oracle.canonical_bytes(second["result"]),
        "BUD-14",
        "the same projection for the same result and budget",
        "two different projections",
    )


def _list_punctuation(blocks: list[Any]) -> int:
    return 2 + max(0, len(blocks) - 1)


@property_check("BUD-19", cases=s.multimodal_over_budget_cases())
def test_multimodal_only_text_is_cut(ctx: CheckContext, case: Any) -> None:
    budget, result = case
    preview = _preview(ctx, budget, result, "BUD-19")
    projected = preview["result"]
    blocks = oracle.non_text_blocks(result)
    for i, block in enumerate(blocks):
        expect(oracle.find_value(projected, block), "BUD-19",
               f"non-text block {i} ({block['type']}) byte-identical in the projection",
               "it is missing or altered")
    text_part = oracle.size(projected) - sum(oracle.size(b) for b in blocks)
    limit = budget + _list_punctuation(blocks)
    expect(text_part <= limit, "BUD-19",
           f"the text part of the projection <= {limit} bytes (the budget {budget} + "
           f"{_list_punctuation(blocks)} bytes of list punctuation around {len(blocks)} "
           "non-text blocks, which are excluded)",
           f"{text_part} bytes ({oracle.size(projected)} in all, non-text blocks "
           f"{sum(oracle.size(b) for b in blocks)})",
           hint="Images, audio and files must not use the text budget.")


@property_check("BUD-21", cases=st.one_of(s.over_budget_cases(), s.multimodal_over_budget_cases()))
def test_projection_shape(ctx: CheckContext, case: Any) -> None:
    """The reference profile's exact shape, text-only and multimodal."""
    budget, result = case
    preview = _preview(ctx, budget, result, "BUD-21")
    projected = preview["result"]
    blocks = oracle.non_text_blocks(result)
    keys = {"preview", "truncation"} | ({"attachments"} if blocks else set())
    got = set(projected) if isinstance(projected, dict) else set()
    expect(got - {"preserved_fields"} == keys, "BUD-21",
           f"keys {sorted(keys)} (+ preserved_fields)", f"{sorted(got)}")
    expect(projected.get("preserved_fields", None) != {}, "BUD-21",
           "preserved_fields left out when empty", "an empty preserved_fields")
    whole = oracle.size(result)
    expect(projected["truncation"] == {"original_bytes": whole}, "BUD-21",
           f"truncation == {{'original_bytes': {whole}}} ({whole} = the whole result's canonical "
           f"size{', attachments included' if blocks else ''}, as context_preview.original_bytes)",
           lambda: f"{projected['truncation']!r}" + (
               f" (the result without its attachments is {whole - oracle.size(blocks)} bytes)"
               if blocks else ""))
    source = result
    if blocks:
        expect(oracle.canonically_equal(projected["attachments"], blocks), "BUD-21",
               "attachments == the non-text blocks, in order", "a different list")
        source = {**result, "content": _placeholders(result["content"])}
        text_size = oracle.size(projected) - oracle.size(blocks)
        expect(text_size <= budget, "BUD-21",
               f"the projection's size minus its attachments array <= the budget {budget}",
               f"{text_size} bytes ({oracle.size(projected)} in all, attachments "
               f"{oracle.size(blocks)})")
    text = oracle.canonical_text(source)
    head, tail = _text_projection(preview, "BUD-21")
    expect(text.startswith(head) and text.endswith(tail), "BUD-21",
           "head and tail cut from the canonical text of the result with placeholders",
           lambda: f"head {head[:60]!r}…, tail …{tail[-60:]!r}")


def _placeholders(content: list[Any]) -> list[Any]:
    out, n = [], 0
    for block in content:
        if block["type"] == "text":
            out.append(block)
        else:
            out.append({"type": block["type"], "attachment": n})
            n += 1
    return out


def _expected_preserved(result: Any, budget: int) -> dict[str, Any]:
    """BUD-22 recomputed from its text: candidates through object members only, order, and
    greedy filling within both bounds (the whole projection with empty previews fits the
    budget; `preserved_fields` within floor(budget / 4) bytes)."""
    candidates: list[tuple[int, str, Any]] = []
    stack: list[tuple[str, Any, int]] = [("", result, 0)]
    while stack:
        path, node, depth = stack.pop()
        if depth >= 3 or not isinstance(node, dict):
            continue
        for key, child in node.items():
            pointer = f"{path}/{key.replace('~', '~0').replace('/', '~1')}"
            if isinstance(child, dict):
                stack.append((pointer, child, depth + 1))
            elif not isinstance(child, list) and key in PRESERVED_KEYS \
                    and oracle.size(child) <= 128:
                candidates.append((depth + 1, pointer, child))
    candidates.sort(key=lambda c: (c[0], c[1]))
    shell: dict[str, Any] = {"preview": {"head": "", "tail": ""},
                             "truncation": {"original_bytes": oracle.size(result)}}
    kept: dict[str, Any] = {}
    for _, pointer, value in candidates:
        trial = {**kept, pointer: value}
        if oracle.size(trial) <= budget // 4 and \
                oracle.size({**shell, "preserved_fields": trial}) <= budget:
            kept = trial
    return kept


@st.composite
def _nested_status_cases(draw: st.DrawFn) -> tuple[int, Any]:
    """Status-like fields at depths 1-5 beside an over-budget note: BUD-22 stops at depth 3,
    and a list on the way (`/items/0/status`) makes none of them a candidate."""
    budget = draw(s.budgets())
    node: Any = {"status": draw(st.sampled_from(("ok", "done"))),
                 "id": draw(st.integers(0, 10**6)), "note": "x" * (budget + 64)}
    for key in draw(st.lists(st.sampled_from(("data", "page", "0", "[]")), max_size=4)):
        node = [node] if key == "[]" else {key: node}
    return budget, node if isinstance(node, dict) else {"items": node}


_PAD = "x" * 2000
BUD22_EXAMPLES = (
    (1024, {"a": {"b": {"c": {"status": "deep"}}}, "id": 7, "pad": _PAD}),
    # depth 3 is the deepest: /data/page/next_cursor is kept, /data/page/x/id is not
    (1024, {"data": {"page": {"next_cursor": "c-9", "x": {"id": 1}}, "state": "open"},
            "pad": _PAD}),
    # a 126-character ASCII value is 128 bytes: a candidate; 127 characters are not
    (2048, {"code": "a" * 126, "error": "b" * 127, "pad": _PAD * 2}),
    # greedy, not in order: /code fits, /error would pass the quarter (256 bytes), /id fits
    (1024, {"code": "c" * 120, "error": "e" * 120, "id": 1, "pad": _PAD}),
    # list items' fields are not candidates; the result's own are
    (1024, {"items": [{"id": i, "status": "ok"} for i in range(40)], "status": "ok",
            "next_cursor": "abc", "pad": _PAD}),
    # values of 128 bytes are candidates, of 129 bytes not (escapes and multibyte count)
    (2048, {"code": s.sized_string("é", 128), "error": s.sized_string("\n", 129),
            "state": 10**127 + 1, "total": -(10**127), "pad": _PAD * 2}),
    # preserved_fields that fill the quarter exactly, or miss it by one byte either way, in
    # every byte width (off-by-one in fitting or in sizing a value shows here)
    *(s.preserved_quarter_case(1024, unit, key, over) for unit in s.SIZED_UNITS
      for key, over in (("status", -1), ("status", 0), ("id", 0), ("code", 1))),
    *(s.preserved_first_entry_case(budget, over) for budget in (1024, 32768) for over in (0, 1)),
)


@property_check(
    "BUD-22",
    cases=st.one_of(s.over_budget_cases(), _nested_status_cases(), s.preserved_quarter_cases()),
    examples=BUD22_EXAMPLES,
)
def test_preserved_fields_rule(ctx: CheckContext, case: Any) -> None:
    budget, result = case
    projected = _preview(ctx, budget, result, "BUD-22")["result"]
    want = _expected_preserved(result, budget)
    got = projected.get("preserved_fields", {}) if isinstance(projected, dict) else None
    if oracle.canonically_equal(got, want):
        return
    extra = sorted(set(got) - set(want)) if isinstance(got, dict) else []
    missing = sorted(set(want) - set(got)) if isinstance(got, dict) else sorted(want)
    expect(False, "BUD-22",
           f"preserved_fields == {json.dumps(want, ensure_ascii=False)[:300]} "
           f"({oracle.size(want)} bytes of the {budget // 4} allowed, a quarter of {budget})",
           f"{json.dumps(got, ensure_ascii=False)[:300]} ({_sized(got)}); "
           f"not expected: {extra[:5]}, missing: {missing[:5]}",
           hint="Candidates: scalars at depth <= 3 through object members only (no array "
           "index), <= 128 bytes, shallowest then by pointer, each kept greedily while the "
           "projection fits and preserved_fields stays within floor(budget / 4) bytes.")


def _sized(value: Any) -> str:
    try:
        return f"{oracle.size(value)} bytes"
    except (TypeError, ValueError):
        return "no canonical size"


@property_check("BUD-23", cases=st.sampled_from(("depth", "digits")))
def test_general_limits(ctx: CheckContext, case: Any) -> None:
    """512 levels and 4,300 digits pass; one more is refused with the path named."""
    inside, over = (
        ("[" * 512 + "]" * 512, "[" * 513 + "]" * 513)
        if case == "depth"
        else ("1" * 4300, "1" * 4301)
    )
    version = ctx.version(1024)
    at_limit = ctx.target.dry_run(ctx.raw_dry_run_body(version, inside.encode()))
    fine = answer(at_limit, "BUD-23", example=case)
    expect(isinstance(fine, dict) and fine.get("context_preview") is not None, "BUD-23",
           f"a result at the limit ({case}) measured", f"{str(fine)[:200]}")
    exchange = ctx.target.dry_run(ctx.raw_dry_run_body(version, over.encode()))
    expect(refused(exchange) and "/mock_receipts/0/result" in exchange.body.decode("utf-8",
           "replace"), "BUD-23", f"a result over the {case} limit refused naming "
           "/mock_receipts/0/result…", exchange.describe)


# -- head and tail split (profile, BUD-21) --------------------------------------------------

_ASCII = st.characters(min_codepoint=0, max_codepoint=0x7F)


@st.composite
def _ascii_over_budget_cases(draw: st.DrawFn) -> tuple[int, Any]:
    """Over-budget results whose canonical text is ASCII, escapes included. Between two ASCII
    characters outside an escape there is always a cluster boundary (the canonical text holds
    no raw CR LF), so the profile's cuts can be computed exactly, with no segmenter."""
    budget = draw(s.budgets())
    unit = draw(st.text(_ASCII, min_size=1, max_size=16))
    text = unit * (draw(st.sampled_from((1, 2, 5))) * budget // oracle.escaped_size(unit) + 1)
    fields = draw(st.dictionaries(st.sampled_from((*PRESERVED_KEYS, "note")),
                                  st.one_of(st.integers(-(10**6), 10**6),
                                            st.text(_ASCII, max_size=24)), max_size=3))
    shape = draw(st.sampled_from(("string", "list", "object")))
    if shape == "string":
        return budget, text
    return budget, [fields, text] if shape == "list" else {**fields, "log": text}


def _prefix_costs(text: str) -> list[int]:
    """costs[i] = bytes text[:i] takes inside a JSON string (each character priced once)."""
    cost: dict[str, int] = {}
    costs = [0]
    for ch in text:
        if ch not in cost:
            cost[ch] = oracle.escaped_size(ch)
        costs.append(costs[-1] + cost[ch])
    return costs


def _profile_cuts(text: str, available: int) -> tuple[int, int]:
    """(head end, tail start) by the profile on an ASCII text: the head is the longest prefix
    costing at most floor(available / 2) bytes inside a JSON string, cut outside an escape;
    the tail the shortest suffix after it costing at most what the head left, likewise."""
    costs = _prefix_costs(text)
    escapes = oracle.EscapeIndex(text)
    head = bisect_right(costs, available // 2) - 1
    while head > 0 and escapes.inside(head):
        head -= 1
    tail = max(head, bisect_left(costs, costs[-1] - (available - costs[head])))
    while tail < len(text) and escapes.inside(tail):
        tail += 1
    return head, tail


SPLIT_EXAMPLES = (
    (1024, "x" * 3000),  # one of 1024 and 1025 leaves an odd number of bytes: head gets less
    (1025, "x" * 3000),
    (1024, "\u0001" * 1000),  # `\u0001` costs 7 bytes in a preview: cuts stop short of one
    (1031, {"status": "ok", "log": 'a"b\\c\n' * 600}),
)


@property_check("BUD-21", cases=_ascii_over_budget_cases(), examples=SPLIT_EXAMPLES)
def test_head_and_tail_split(ctx: CheckContext, case: Any) -> None:
    """The bytes left after the wrapper and preserved fields are split evenly, head first;
    whatever the head's cut leaves unused goes to the tail."""
    budget, result = case
    preview = _preview(ctx, budget, result, "BUD-21")
    head, tail = _text_projection(preview, "BUD-21")
    projected = preview["result"]
    available = budget - oracle.size({**projected, "preview": {"head": "", "tail": ""}})
    text = oracle.canonical_text(result)
    want_head, want_tail = _profile_cuts(text, available)
    seen = (len(head), len(text) - len(tail))
    expect(
        seen == (want_head, want_tail),
        "BUD-21",
        f"head = text[:{want_head}] and tail = text[{want_tail}:] ({available} bytes left for "
        f"the two: {available // 2} for the head, what it leaves for the tail)",
        f"head = text[:{seen[0]}] ({oracle.escaped_size(head)} bytes), tail = text[{seen[1]}:] "
        f"({oracle.escaped_size(tail)} bytes)",
    )


def _last_certain_cut(text: str, costs: list[int], limit: int, escapes: oracle.EscapeIndex,
                      floor: int = 0) -> int:
    """The largest i >= floor with cost(text[:i]) <= limit that is certainly a cluster boundary
    outside an escape (a cut the profile may take, so its own cut is at least there)."""
    i = bisect_right(costs, limit) - 1
    while i > floor and (escapes.inside(i) or not oracle.certain_boundary(text, i)):
        i -= 1
    return max(i, floor)


@property_check("BUD-21", cases=cut_cases, examples=CUT_EXAMPLES)
def test_cuts_not_short_of_a_certain_boundary(ctx: CheckContext, case: Any) -> None:
    """Any text: the head reaches at least the last certain cluster boundary within its half,
    and the tail at least back to the first certain boundary within what the head left; a cut
    may stop short only inside clusters and escapes, never give up on a cut it could take."""
    budget, result = case
    preview = _preview(ctx, budget, result, "BUD-21")
    head, tail = _text_projection(preview, "BUD-21")
    projected = preview["result"]
    if not isinstance(projected, dict) or "attachments" in projected:
        return  # multimodal layouts are judged by test_multimodal_detection_and_text_part
    available = budget - oracle.size({**projected, "preview": {"head": "", "tail": ""}})
    text = oracle.canonical_text(result)
    costs = _prefix_costs(text)
    escapes = oracle.EscapeIndex(text)
    want_head = _last_certain_cut(text, costs, available // 2, escapes)
    expect(len(head) >= want_head, "BUD-21",
           f"head = text[:n] with n >= {want_head}, the last certain cluster boundary within "
           f"{available // 2} bytes (half of the {available} left)",
           f"n = {len(head)} ({oracle.escaped_size(head)} bytes)")
    room = available - oracle.escaped_size(head)
    reversed_costs = [costs[-1] - c for c in costs]  # cost of text[i:]
    first = next((i for i in range(len(head), len(text) + 1)
                  if reversed_costs[i] <= room and not escapes.inside(i)
                  and oracle.certain_boundary(text, i)), len(text))
    start = len(text) - len(tail)
    expect(start <= first, "BUD-21",
           f"tail = text[m:] with m <= {first}, the first certain boundary whose suffix fits "
           f"the {room} bytes the head left", f"m = {start} ({oracle.escaped_size(tail)} bytes)")


# -- depth counts containers (profile, BUD-23) -----------------------------------------------

DEPTHS = (
    ("512 arrays around a scalar", b"[" * 512 + b"1" + b"]" * 512, True),
    ("512 objects around a scalar", b'{"a":' * 512 + b"1" + b"}" * 512, True),
    ("256 array-object pairs around a string", b'[{"a":' * 256 + b'"x"' + b"}]" * 256, True),
    ("513 objects around a scalar", b'{"a":' * 513 + b"1" + b"}" * 513, False),
    ("513 arrays around a scalar", b"[" * 513 + b"1" + b"]" * 513, False),
)


@check("BUD-23")
def test_depth_counts_containers(ctx: CheckContext) -> None:
    """Depth counts containers, not scalars: `[[1]]` is 2 levels, so 512 containers around a
    scalar pass and 513 are refused, naming /mock_receipts/0/result…."""
    version = ctx.version(1024)
    for what, raw, passes in DEPTHS:
        exchange = ctx.target.dry_run(ctx.raw_dry_run_body(version, raw))
        if passes:
            expect(200 <= exchange.status < 300, "BUD-23", f"{what} measured (2xx)",
                   exchange.describe)
        else:
            expect(refused(exchange) and "/mock_receipts/0/result" in exchange.body.decode(
                "utf-8", "replace"), "BUD-23",
                f"{what} refused naming /mock_receipts/0/result…", exchange.describe)


# -- which results are multimodal, and when they are cut (profile, BUD-21) --------------------


def _image(data_bytes: int) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": "A" * data_bytes}}


def _text_part_at(budget: int, over: int) -> dict[str, Any]:
    """A multimodal result whose text part (size − size of the attachments array) is
    `budget + over` bytes, and whose whole size is far over the budget."""
    image = _image(4 * budget)
    block: dict[str, Any] = {"type": "text", "text": ""}
    result: dict[str, Any] = {"content": [block, image], "status": "ok"}
    block["text"] = "t" * (budget + over - (oracle.size(result) - oracle.size([image])))
    return result


_NOT_MULTIMODAL: tuple[tuple[str, dict[str, Any]], ...] = (
    ("a block with no type", {"content": [_image(3000), {"text": "t" * 3000}]}),
    ("a block that is not an object", {"content": [_image(3000), "plain " * 500]}),
    ("a block whose type is not a string",
     {"content": [_image(3000), {"type": 1, "text": "t" * 3000}]}),
    ("content that is not an array", {"content": _image(3000), "note": "t" * 3000}),
)


@check("BUD-21")
def test_multimodal_detection_and_text_part(ctx: CheckContext) -> None:
    """A result is multimodal only when `content` is an array of objects each with a string
    `type`, one not "text"; otherwise it is projected as text-only. A multimodal result is
    left unchanged while its text part (size − size of the attachments array) fits the
    budget, and projected one byte past it, blocks replaced by {"type", "attachment": i}."""
    budget = 1024
    for what, plain in _NOT_MULTIMODAL:
        projected = _preview(ctx, budget, plain, "BUD-21")["result"]
        keys = sorted(projected) if isinstance(projected, dict) else type(projected).__name__
        expect(isinstance(projected, dict) and "attachments" not in projected
               and "preview" in projected, "BUD-21",
               f"a text-only projection (preview, no attachments) for content with {what}",
               f"a result with members {keys}")
    for over in (-1, 0):
        result = _text_part_at(budget, over)
        preview = _preview(ctx, budget, result, "BUD-21")
        expect(preview["truncated"] is False
               and oracle.canonically_equal(preview["result"], result), "BUD-21",
               f"a multimodal result left unchanged: its text part is {budget + over} bytes, "
               f"within the budget {budget} (its whole size is {oracle.size(result)})",
               f"truncated == {preview['truncated']!r}")
    result = _text_part_at(budget, 1)
    preview = _preview(ctx, budget, result, "BUD-21")
    head, tail = _text_projection(preview, "BUD-21")
    placeholder = {**result, "content": [result["content"][0], {"type": "image",
                                                                "attachment": 0}]}
    text = oracle.canonical_text(placeholder)
    expect(preview["truncated"] is True and text.startswith(head) and text.endswith(tail),
           "BUD-21", f"a text part of {budget + 1} bytes projected, head and tail cut from "
           'the text with the image replaced by {"attachment": 0, "type": "image"}',
           f"truncated == {preview['truncated']!r}, tail …{tail[-80:]!r}")


# -- the preserved-field rule's fixed details, each shown by one result (profile, BUD-22) ------

PRESERVED_EDGES = (
    ("values of 128 canonical bytes are candidates, of 129 or more not, whatever the width",
     2048, {"code": s.sized_string("é", 129), "error": s.sized_string("中", 128),
            "state": s.sized_string("😀", 130), "type": s.sized_string("\u0001", 129),
            "pad": _PAD * 3}),
    ("the same depth is ordered by pointer, not as written: /code and /id fit, /next_cursor "
     "would pass the quarter", 1024,
     {"next_cursor": "n" * 120, "code": "c" * 120, "id": 1, "pad": _PAD}),
    ("shallowest first: /type before /a/status, which would pass the quarter", 1024,
     {"a": {"status": "s" * 120}, "type": "t" * 120, "pad": _PAD}),
)


@check("BUD-22")
def test_preserved_fields_edges(ctx: CheckContext) -> None:
    """Results that tell the profile's rule from near readings: 128 bytes, not characters;
    shallowest first, then by pointer, not in document order."""
    for what, budget, result in PRESERVED_EDGES:
        projected = _preview(ctx, budget, result, "BUD-22")["result"]
        want = _expected_preserved(result, budget)
        got = projected.get("preserved_fields", {}) if isinstance(projected, dict) else None
        expect(oracle.canonically_equal(got, want), "BUD-22",
               f"preserved_fields keys {sorted(want)} ({what})",
               lambda: f"keys {sorted(got) if isinstance(got, dict) else got!r}")  # noqa: B023
