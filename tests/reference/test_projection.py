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
)
from arck.reference.projection import Projector, unicode_version

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
