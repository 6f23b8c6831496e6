"""inputs.describe: the kind of a failing input, as a failure's message and case file say it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arck.conformance import oracle
from arck.conformance.inputs import describe
from arck.conformance.strategies import deep_nesting, huge_int_digits

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}


def test_budget_cases_say_size_against_budget() -> None:
    result = {"content": [{"type": "text", "text": 'say "hi"\\' * 200}, IMAGE, IMAGE]}
    size = oracle.size(result)
    assert describe((1024, result)) == (
        "multimodal (2 non-text blocks), escape-heavy (600 escaped characters), "
        f"a long string (2,400 bytes); a {size:,}-byte result under a 1,024-byte budget"
    )
    assert describe([2048, "abc"]) == "a 5-byte result within a 2,048-byte budget"  # a case file


@pytest.mark.parametrize(
    ("value", "trait"),
    [
        (deep_nesting(12, "x"), "deep (12 levels)"),
        ({f"k{i}": i for i in range(150)}, "wide (an object of 150 members)"),
        (list(range(120)), "wide (an array of 120 items)"),
        ("中文字符", "non-ASCII (4 multibyte characters)"),
        ("👨\u200d👩\u200d👧", "emoji (3, 2 ZWJs)"),
        ("e\u0301a\u0308", "combining marks (2)"),
        ("🇫🇷🇯🇵", "regional-indicator flags (2)"),
        ([huge_int_digits(40)], "huge integers (1, up to 40 digits)"),
        ([huge_int_digits(5000)], "huge integers (1, up to 5,000 digits)"),
        ([1.5, 1e-7], "floats (2)"),
        ([float("nan")], "NaN or Infinity"),
        (["a" * 1200, "b" * 1500], "long strings (2, the longest 1,500 bytes)"),
        ("x\ud800", "lone surrogates (1)"),
    ],
)
def test_each_trait_is_named(value: Any, trait: str) -> None:
    assert trait in describe((1024, value))
    assert trait in describe(value)


@pytest.mark.parametrize(
    "value",
    ["plain ascii text", {"id": 1, "status": "ok"}, [1, 2, 3], 'one "quote" in prose', "é"],
)
def test_ordinary_inputs_have_no_alarming_traits(value: Any) -> None:
    text = describe((1024, value))
    for trait in ("escape-heavy", "deep", "wide", "multimodal", "huge", "long string"):
        assert trait not in text


def test_other_cases_say_what_json_value_they_are() -> None:
    assert describe("16384") == "a 7-byte string"
    assert describe(1023) == "a 4-byte integer"
    assert describe(("name", 5)) == "a 10-byte array"  # not (budget, result): no budget
    assert describe(True) == "a 4-byte literal"
    assert describe([float("inf")]) == "NaN or Infinity, floats (1); an array"  # no canonical size


_ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats()
    | st.text() | st.sampled_from(["x\ud800", '\x00"\\', "👨\u200d👩🇫🇷e\u0301"])
    | st.binary(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(_ANY, st.tuples(st.integers(), _ANY)))
def test_any_case_is_described_without_error(case: Any) -> None:
    """The plugin describes whatever a check failed on; it must never be what breaks."""
    text = describe(case)
    assert text
    assert "\n" not in text
