"""The pacing check (CAP-08) on what the mutant table cannot show: a core target may count
with a fixed window (the protocol allows it), the profile may not; and the oracle agrees with
a brute-force count."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arck.conformance import pacing_oracle as oracle
from arck.conformance.checks.test_capability_pacing import test_dispatches_are_paced as check
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure
from arck.simulator.factory import build_target
from arck.simulator.target import Target

SEARCH = settings(max_examples=4, database=None, deadline=None)
# Bursts of one call a window apart, then a tenth of a window: one dispatch either side of a
# fixed window's edge, where a sliding window still holds the first.
EDGE = (1, "10s", [(1, 0.9), (1, 0.1), (1, 0.05)])


@pytest.fixture
def fixed_window(request: pytest.FixtureRequest) -> Iterator[Target]:
    target = build_target("mutant:pacing-fixed-window")
    target.info = dataclasses.replace(target.info, profile=request.param)
    try:
        yield target
    finally:
        target.close()


@pytest.mark.parametrize("fixed_window", ["core"], indirect=True)
def test_a_fixed_window_keeps_the_core_bound(fixed_window: Target) -> None:
    check(CheckContext(fixed_window, seed=3, settings=SEARCH), EDGE)  # raises on failure


@pytest.mark.parametrize("fixed_window", ["reference"], indirect=True)
def test_the_profile_wants_the_sliding_window(fixed_window: Target) -> None:
    with pytest.raises(CheckFailure) as failed:
        check(CheckContext(fixed_window, seed=3, settings=SEARCH), EDGE)
    assert failed.value.requirements == ("CAP-14",)
    assert "sliding window" in str(failed.value)


_TIMES = st.lists(st.integers(0, 60), max_size=12)


@given(_TIMES, st.integers(1, 3), st.integers(1, 20))
@settings(max_examples=300, database=None, deadline=None)
def test_the_core_bound_is_every_interval(times: list[int], count: int, window: int) -> None:
    """Brute force: every closed interval [a, a + k × window] over the whole range."""
    worst = None
    for a in range(-1, 62):
        for k in range(1, 64 // window + 2):
            inside = sum(1 for t in times if a <= t <= a + k * window)
            if inside > (k + 1) * count:
                worst = (a, k)
    assert (oracle.over_core_bound(times, count, window) is None) == (worst is None)


@given(_TIMES, st.integers(0, 70), st.integers(1, 3), st.integers(1, 20))
@settings(max_examples=300, database=None, deadline=None)
def test_room_and_the_wait_follow_the_sliding_window(
    times: list[int], at: int, count: int, window: int
) -> None:
    times = [t for t in times if t <= at]  # dispatches so far
    inside = [t for t in times if at - window < t <= at]
    assert oracle.room(times, at, count, window) == max(0, count - len(inside))
    wait = oracle.retry_after_ms(times, at, count, window)
    if len(inside) < count:
        assert wait == 0
    else:  # the first moment the window has room again, a millisecond at a time
        later = next(d for d in range(1, window + 2)
                     if sum(1 for t in times if at + d - window < t <= at + d) < count)
        assert wait == later
