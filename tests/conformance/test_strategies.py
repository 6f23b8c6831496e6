"""The strategies produce what they promise, fast enough for the default health checks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arck.conformance import strategies as S
from arck.conformance.oracle import (
    canonical_bytes,
    canonical_text,
    canonically_equal,
    escaped_size,
    is_multimodal,
    nesting_depth,
    non_text_blocks,
    size,
    unicode_problems,
)

# Default settings (health checks on) except the example count; no deadline, since two shared
# cores make timings of ~200 KB examples noisy.
FEW = settings(max_examples=30, deadline=None)


@FEW
@given(S.budgets())
def test_budgets_in_range(budget: int) -> None:
    assert 1024 <= budget <= 32768


def test_budget_edges_are_weighted() -> None:
    seen: set[int] = set()

    @settings(max_examples=200, database=None, derandomize=True)
    @given(S.budgets())
    def collect(budget: int) -> None:
        seen.add(budget)

    collect()
    assert set(S.EDGE_BUDGETS) <= seen


def test_snippets_are_json_encodable() -> None:
    for snippet in S.SNIPPETS:
        assert snippet
        assert unicode_problems(snippet) == []
        assert json.loads(canonical_bytes(snippet)) == snippet


@FEW
@given(st.data())
def test_adversarial_text_sizes(data: st.DataObject) -> None:
    low = data.draw(st.integers(0, 300))
    high = low + data.draw(st.integers(0, 300))
    text = data.draw(S.adversarial_text(min_bytes=low, max_bytes=high))
    assert low <= escaped_size(text) <= high
    assert unicode_problems(text) == []


@FEW
@given(S.json_values())
def test_json_values_round_trip(value: Any) -> None:
    assert canonically_equal(json.loads(canonical_bytes(value)), value)


@FEW
@given(st.data())
def test_large_results_land_in_range(data: st.DataObject) -> None:
    low = data.draw(st.integers(2, 100_000))
    high = low + data.draw(st.sampled_from((0, 1, 64, 100_000)))
    result = data.draw(S.large_results(low, high))
    assert low <= size(result) <= high


def test_large_results_rejects_bad_range() -> None:
    @given(S.large_results(10, 5))
    def draw(_: Any) -> None:
        pass

    with pytest.raises(ValueError, match="min_bytes"):
        draw()


@FEW
@given(S.over_budget_cases())
def test_over_budget_cases_are_over(case: tuple[int, Any]) -> None:
    budget, result = case
    assert 1024 <= budget <= 32768
    assert budget < size(result) <= 6 * budget


@FEW
@given(S.within_budget_cases())
def test_within_budget_cases_fit(case: tuple[int, Any]) -> None:
    budget, result = case
    assert size(result) <= budget


@FEW
@given(S.multimodal_results())
def test_multimodal_results(result: dict[str, Any]) -> None:
    assert is_multimodal(result)
    for block in non_text_blocks(result):
        assert 1024 <= len(block["source"]["data"]) <= 60 * 1024


@FEW
@given(S.multimodal_over_budget_cases())
def test_multimodal_over_budget_text_part(case: tuple[int, dict[str, Any]]) -> None:
    budget, result = case
    assert is_multimodal(result)
    assert size(result) - size(non_text_blocks(result)) > budget


@FEW
@given(st.sampled_from((1024, 2048, 4096)).flatmap(
    lambda b: st.tuples(st.just(b), S.buried_fields_results(b))))
def test_buried_fields_sit_where_a_projection_drops_them(case: tuple[int, Any]) -> None:
    """Between two runs of text each as long as the budget, in the canonical text's middle:
    at least one status-like field under an array index, five levels deep, or over 128 bytes."""
    budget, result = case
    text = canonical_text(result)
    middle = canonical_text(result["m"])
    start = text.index('"m":')
    assert size(result["a_log"]) >= budget
    assert size(result["z_log"]) >= budget
    assert len(text[:start].encode()) > budget
    assert len(text[start + len(middle):].encode()) > budget
    buried = result["m"]
    assert ("items" in buried or "records" in buried
            or size(buried.get("page", {}).get("next_cursor", "")) > 128
            or "cursor" in buried.get("meta", {}).get("paging", {}).get("links", {})
            .get("next", {}))


@FEW
@given(S.unencodable_results())
def test_unencodable_results_have_no_canonical_bytes(value: Any) -> None:
    with pytest.raises(ValueError, match=r"JSON compliant|surrogate"):
        canonical_bytes(value)


def test_strategies_are_deterministic_under_a_seed() -> None:
    def sample() -> list[str]:
        out: list[str] = []

        @settings(max_examples=10, database=None, derandomize=True, deadline=None)
        @given(S.over_budget_cases())
        def collect(case: tuple[int, Any]) -> None:
            out.append(canonical_text(case))

        collect()
        return out

    first = sample()
    assert first == sample()
    assert len(set(first)) > 1


def test_deep_nesting_and_huge_ints() -> None:
    assert S.deep_nesting(2) == [[None]]
    assert S.deep_nesting(0, leaf=1) == 1
    assert nesting_depth(S.deep_nesting(100_000)) == 100_000
    with pytest.raises(RecursionError):
        canonical_text(S.deep_nesting(100_000))
    assert size(S.huge_int_digits(4300)) == 4300
    assert size(S.huge_int_digits(3, negative=True)) == 4
    with pytest.raises(ValueError, match="4300"):
        canonical_text(S.huge_int_digits(4301))
