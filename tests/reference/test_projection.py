"""The reference projection, tested directly (the conformance suite tests it over HTTP)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from arck.conformance import strategies as s
from arck.reference.canonical import (
    ResultLimitError,
    canonical_text,
    check_limits,
    measure,
    pointer_token,
)
from arck.reference.projection import PRESERVED_KEYS, Projector, unicode_version

P = Projector()
CASES = settings(max_examples=60, deadline=None)


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ("中", 5),
        ("😀", 6),
        ("\u0000", 8),
        ({"b": 1, "a": [1.0, None]}, 22),
        (1e16, 5),
        (1e-7, 5),
        (-0.0, 4),
        (5e-324, 6),
        (10**30, 31),
    ],
)
def test_sizes(value: Any, size: int) -> None:
    assert measure(value) == size


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=20,
    )
)
@CASES
def test_measure_is_the_canonical_dumps(value: Any) -> None:
    try:
        want = len(
            json.dumps(
                value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
            ).encode("utf-8")
        )
    except (ValueError, UnicodeEncodeError):
        with pytest.raises((ValueError, UnicodeEncodeError)):
            measure(value)
        return
    assert measure(value) == want


@given(s.over_budget_cases())
@CASES
@example((1024, "👨‍👩‍👧‍👦" * 200))
@example((1024, '\\"\n' * 900))
@example((1024, {"status": "ok", "data": "🇫🇷" * 300}))
def test_projection_invariants(case: tuple[int, Any]) -> None:
    budget, result = case
    preview = P.project(result, budget)
    assert preview.truncated
    assert measure(preview.result) == preview.retained_bytes <= budget
    text = canonical_text(result)
    head, tail = preview.result["preview"]["head"], preview.result["preview"]["tail"]
    assert text.startswith(head)
    assert text.endswith(tail)
    assert len(head) + len(tail) < len(text)
    clusters = {0}
    for m in regex.finditer(r"\X", text):
        clusters.add(m.end())
    assert len(head) in clusters
    assert len(text) - len(tail) in clusters
    assert P.project(result, budget) == preview  # deterministic


@given(s.within_budget_cases())
@CASES
def test_within_budget_is_unchanged(case: tuple[int, Any]) -> None:
    budget, result = case
    preview = P.project(result, budget)
    assert not preview.truncated
    assert preview.result is result
    assert preview.original_bytes == preview.retained_bytes == measure(result)


@given(s.multimodal_over_budget_cases())
@settings(max_examples=25, deadline=None)
def test_multimodal_keeps_attachments(case: tuple[int, Any]) -> None:
    budget, result = case
    preview = P.project(result, budget)
    blocks = [b for b in result["content"] if b["type"] != "text"]
    assert preview.result["attachments"] == blocks
    assert measure(preview.result) - measure(blocks) <= budget
    assert preview.retained_bytes == measure(preview.result)  # computed, not measured


def test_limits_name_the_path() -> None:
    deep: Any = None
    for _ in range(513):
        deep = [deep]
    with pytest.raises(ResultLimitError) as info:
        check_limits({"a": deep})
    assert info.value.path.startswith("/a/0/0")
    with pytest.raises(ResultLimitError, match="4300 digits"):
        check_limits({"n": [1, 10**4300]})
    check_limits({"n": 10**4299})  # 4,300 digits pass
    check_limits(deep[0])  # 512 levels pass


def test_unicode_version_is_recent() -> None:
    major, minor = (int(x) for x in unicode_version().split()[0].split("."))
    assert (major, minor) >= (15, 1)


# -- the pieces of the fast projection ---------------------------------------------------------


def _escaped_size(s: str) -> int:
    """What a piece of text costs inside a JSON string literal, by the codec itself."""
    return len(json.dumps(s, ensure_ascii=False).encode("utf-8")) - 2


def _clusters(text: str) -> set[int]:
    """Cluster boundaries of the whole text, segmented from its start."""
    return {0} | {m.end() for m in regex.finditer(r"\X", text)}


def _escape_interiors(text: str) -> set[int]:
    """Positions strictly inside a JSON escape, found by one scan from the start (canonical
    text has backslashes only as escape starts)."""
    inside: set[int] = set()
    k = 0
    while k < len(text):
        if text[k] == "\\":
            length = 6 if text[k + 1] == "u" else 2
            inside.update(range(k + 1, k + length))
            k += length
        else:
            k += 1
    return inside


def _allowed(text: str) -> set[int]:
    return _clusters(text) - _escape_interiors(text)


_runs = st.sampled_from(
    ("🇫🇷" * 40, "e" + "\u0301" * 90, "\\" * 70, '"' * 30, "👨‍👩‍👧‍👦" * 12, "\u0000" * 20)
)
canonical_texts = st.one_of(
    st.builds(canonical_text, s.json_values(max_leaves=12)),
    st.builds(canonical_text, s.adversarial_text(max_bytes=600)),
    st.builds(lambda a, r, b: canonical_text([a, r + b]), s.adversarial_text(), _runs, _runs),
)


@st.composite
def texts_and_limits(draw: st.DrawFn) -> tuple[str, int]:
    text = draw(canonical_texts)
    return text, draw(st.integers(0, _escaped_size(text) + 4))


@given(canonical_texts, st.data())
@CASES
def test_string_cost_is_the_escaped_size(text: str, data: st.DataObject) -> None:
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    assert P.string_cost(text[a:b]) == _escaped_size(text[a:b])
    assert P.string_cost(text[:a]) + P.string_cost(text[a:]) == P.string_cost(text)


@given(texts_and_limits())
@CASES
@example(("x" * 10, 0))
@example(('"\\"', 3))
def test_longest_prefix_is_the_largest_that_fits(case: tuple[str, int]) -> None:
    text, limit = case
    i = P.longest_prefix(text, limit)
    assert _escaped_size(text[:i]) <= limit
    assert i == len(text) or _escaped_size(text[: i + 1]) > limit


@st.composite
def texts_limits_and_floors(draw: st.DrawFn) -> tuple[str, int, int]:
    text, limit = draw(texts_and_limits())
    return text, limit, draw(st.integers(0, len(text)))


@given(texts_limits_and_floors())
@CASES
def test_shortest_suffix_is_the_smallest_that_fits(case: tuple[str, int, int]) -> None:
    text, limit, floor = case
    j = P.shortest_suffix(text, limit, floor)
    assert floor <= j <= len(text)
    assert _escaped_size(text[j:]) <= limit
    assert j == floor or _escaped_size(text[j - 1 :]) > limit


@given(texts_and_limits())
@CASES
@example(('"' + "e" + "\u0301" * 300 + '"', 200))  # one cluster longer than any window
@example(('"' + "🇫🇷" * 100 + '"', 301))  # regional indicators pair from the start
@example(('"' + "\\\\" * 100 + '"', 101))  # a cut inside the run must not split a `\\`
def test_head_cut_is_allowed_fitting_and_maximal(case: tuple[str, int]) -> None:
    text, limit = case
    i = P.cut_head(text, limit)
    allowed = _allowed(text)
    assert i == 0 or i in allowed
    assert _escaped_size(text[:i]) <= limit
    fits = P.longest_prefix(text, limit)
    assert not any(k in allowed for k in range(i + 1, fits + 1))


@given(texts_limits_and_floors())
@CASES
@example(('"' + "e" + "\u0301" * 300 + 'x"', 3, 0))  # one cluster longer than any window
@example(('"' + "🇫🇷" * 100 + '"', 301, 1))
@example(('"' + "\\\\" * 100 + '"', 101, 0))
def test_tail_cut_is_allowed_fitting_and_minimal(case: tuple[str, int, int]) -> None:
    text, limit, floor = case
    j = P.cut_tail(text, limit, floor)
    allowed = _allowed(text)
    assert floor <= j <= len(text)
    assert j == len(text) or j in allowed
    assert _escaped_size(text[j:]) <= limit
    fits = P.shortest_suffix(text, limit, floor)
    assert not any(k in allowed for k in range(fits, j))


@given(canonical_texts, st.data())
@CASES
def test_safe_start_is_a_boundary_segmentation_can_start_from(
    text: str, data: st.DataObject
) -> None:
    position = data.draw(st.integers(0, len(text)))
    start = P.safe_start(text, position)
    assert 0 <= start <= position
    whole = _clusters(text)
    assert start in whole
    assert P.boundaries(text[start:], start, True) == {b for b in whole if b >= start}


@pytest.mark.parametrize("run", [0, 1, 2, 5, 6, 999, 1000])
def test_escape_starts_at_counts_the_whole_run(run: int) -> None:
    text = "a" + "\\" * run + "\\n"
    assert P.escape_starts_at(text, 1 + run) is (run % 2 == 0)


@given(s.multimodal_results())
@settings(max_examples=25, deadline=None)
def test_text_size_excludes_attachments_without_measuring_them(result: dict[str, Any]) -> None:
    split = P.split_attachments(result)
    assert split is not None
    _, attachments = split
    projection = P.skeleton(measure(result), attachments)
    projection["preserved_fields"] = {"/status": "ok"}
    want = measure(projection) - measure(attachments)
    assert P.text_size(projection, attachments) == want


def _greedy_preserve(
    value: Any, projection: dict[str, Any], budget: int, sizer: Projector = P
) -> dict[str, Any]:
    """BUD-22's rule as written: keep each candidate in turn if the whole trial still fits
    and the preserved_fields object stays within a quarter of the budget."""
    kept: dict[str, Any] = {}
    for pointer, scalar in sizer.preserved_candidates(value):
        trial = {**kept, pointer: scalar}
        if sizer.measure(trial) <= budget // 4 and \
                sizer.measure({**projection, "preserved_fields": trial}) <= budget:
            kept = trial
    return kept


_fields = st.dictionaries(st.sampled_from(sorted(PRESERVED_KEYS)), s.json_values(max_leaves=1))


@given(
    st.lists(_fields, max_size=60),
    s.json_values(max_leaves=12),
    st.integers(80, 1200),
)
@CASES
def test_preserve_matches_the_greedy_rule(
    records: list[dict[str, Any]], extra: Any, budget: int
) -> None:
    value = {"results": records, "extra": extra, **(records[0] if records else {})}
    projection = P.skeleton(10**6, None)
    want = _greedy_preserve(value, projection, budget)
    got = P.preserve(value, projection, budget, None)
    assert list(got.items()) == list(want.items())


def _naive_candidates(value: Any) -> list[tuple[str, Any]]:
    """BUD-22's candidates as written: every scalar under a preserved key down to depth 3,
    reached through object members only, whose canonical size is at most 128 bytes, by
    (depth, pointer), each value measured."""
    found: list[tuple[int, str, Any]] = []
    stack: list[tuple[int, str, Any]] = [(0, "", value)]
    while stack:
        depth, path, node = stack.pop()
        if depth >= 3 or not isinstance(node, dict):
            continue
        for key, child in node.items():
            pointer = f"{path}/{pointer_token(key)}"
            if isinstance(child, dict | list):
                stack.append((depth + 1, pointer, child))
            elif key in PRESERVED_KEYS and measure(child) <= 128:
                found.append((depth + 1, pointer, child))
    found.sort(key=lambda item: (item[0], item[1]))
    return [(pointer, scalar) for _, pointer, scalar in found]


def _sized_strings(size: int) -> st.SearchStrategy[str]:
    """Strings whose canonical size is exactly `size` bytes (quotes included)."""
    n = size - 2
    return st.sampled_from(
        [
            "a" * n,
            "é" * (n // 2) + "a" * (n % 2),
            "😀" * (n // 4) + "a" * (n % 4),
            "\u0001" * (n // 6) + "a" * (n % 6),
            '"' * (n // 2) + "a" * (n % 2),
        ]
    )


_preserved_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(10**130), 10**130),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.text(min_size=20, max_size=130),
    st.text(alphabet='"\\\x00\x1f\x7fa', max_size=30),
    _sized_strings(127),
    _sized_strings(128),
    _sized_strings(129),
    st.sampled_from(["a" * 126, "a" * 127, "\x00" * 21, "\x00" * 22]),
)
_wide_records = st.lists(
    st.dictionaries(
        st.sampled_from([*sorted(PRESERVED_KEYS), "title", "a/b~c"]),
        _preserved_scalars | s.json_values(max_leaves=2),
        max_size=5,
    ),
    max_size=150,
)
_wide_values = st.builds(
    # Records in a list (never candidates: no array index in a pointer) or keyed by id in an
    # object (candidates through object members).
    lambda records, keyed, key, extra: {
        key: {f"r{i}": r for i, r in enumerate(records)} if keyed else records, **extra
    },
    _wide_records,
    st.booleans(),
    st.sampled_from(["results", "a/b", "~", "é" * 20, "x" * 70]),
    st.dictionaries(st.sampled_from([*sorted(PRESERVED_KEYS), "data"]), _preserved_scalars),
)


@given(_wide_values | s.json_values(max_leaves=30))
@CASES
def test_preserved_candidates_are_the_rule_as_written(value: Any) -> None:
    assert P.preserved_candidates(value) == _naive_candidates(value)


@given(_wide_values, st.integers(80, 4000))
@CASES
def test_preserve_matches_the_greedy_rule_on_wide_results(value: Any, budget: int) -> None:
    projection = P.skeleton(10**6, None)
    want = _greedy_preserve(value, projection, budget)
    got = P.preserve(value, projection, budget, None)
    assert list(got.items()) == list(want.items())


@given(_preserved_scalars, st.text(min_size=1, max_size=40), st.integers(0, 300))
@CASES
def test_entry_bytes_is_the_measured_entry(scalar: Any, pointer: str, room: int) -> None:
    assert P.scalar_bytes(scalar) == measure(scalar)
    assert P.preservable(scalar, True) is P.preservable(scalar, False)
    assert P.preservable(scalar, True) is (measure(scalar) <= 128)
    base = "/" if pointer != "/" else "//"  # a key of its own, or the entry replaces it
    entry = measure({base: 0, pointer: scalar}) - measure({base: 0})
    assert P.entry_bytes(pointer, scalar, room) == (entry if entry <= room else None)


class _CharsProjector(Projector):
    """Sizes in characters: a replaced size seam, so entries must be measured, not computed."""

    def sized_text(self, value: Any) -> tuple[str, int]:
        text = canonical_text(value)
        return text, len(text)


def test_canonical_sizes_only_while_no_size_seam_is_replaced() -> None:
    assert P.canonical_sizes()
    assert not _CharsProjector().canonical_sizes()


@given(st.one_of(s.over_budget_cases(), s.multimodal_over_budget_cases()))
@CASES
def test_retained_bytes_follow_a_replaced_size_seam(case: tuple[int, Any]) -> None:
    """With a size seam replaced, retained_bytes is measured by that seam, not computed."""
    budget, result = case
    chars = _CharsProjector()
    preview = chars.project(result, budget)
    assert preview.retained_bytes == chars.measure(preview.result)


@given(_wide_values, st.integers(80, 2000))
@CASES
def test_preserve_follows_a_replaced_size_seam(value: Any, budget: int) -> None:
    chars = _CharsProjector()
    projection = chars.skeleton(10**6, None)
    kept = _greedy_preserve(value, projection, budget, chars)
    assert list(chars.preserve(value, projection, budget, None).items()) == list(kept.items())
