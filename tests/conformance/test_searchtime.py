"""`--more-failures-seconds` (conformance/searchtime.py): how long hypothesis looks for
other distinct failures after the first, which its engine fixes at 10 s."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import arck
from hypothesis import given, settings
from hypothesis import strategies as st

from arck.conformance import searchtime


@pytest.fixture(autouse=True)
def restored() -> Iterator[None]:
    yield
    searchtime.set_more_failures_seconds(searchtime.BUILT_IN_SECONDS)


class TooBig(Exception):
    pass


class TooLong(Exception):
    pass


def _two_bugs() -> None:
    """Two failures on two branches of the input: shrinking one (to the simplest failing
    value of its own branch) never meets the other, so only the search that goes on after
    the first finds the second."""

    @settings(max_examples=300, derandomize=True, database=None, deadline=None)
    @given(st.one_of(st.tuples(st.just("big"), st.integers(min_value=0)),
                     st.tuples(st.just("long"), st.text())))
    def prop(case: tuple[str, object]) -> None:
        kind, value = case
        if kind == "big" and isinstance(value, int) and value > 1000:
            raise TooBig(value)
        if kind == "long" and isinstance(value, str) and len(value) > 5:
            raise TooLong(value)

    prop()


def test_by_default_both_distinct_failures_are_reported() -> None:
    with pytest.raises(BaseExceptionGroup) as group:
        _two_bugs()
    kinds = {type(e) for e in group.value.exceptions}
    assert kinds == {TooBig, TooLong}


def test_zero_stops_at_the_first_failure() -> None:
    searchtime.set_more_failures_seconds(0)
    with pytest.raises((TooBig, TooLong)):
        _two_bugs()


def test_bad_values_are_refused() -> None:
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="seconds"):
            searchtime.set_more_failures_seconds(bad)


def test_arck_run_takes_the_setting_and_reports_it(tmp_path: Path) -> None:
    done = arck("run", "--target", "mutant:chars-not-bytes", "--requirements", "BUD-01",
                "--more-failures-seconds", "0", "--report-dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    assert report["settings"]["more_failures_seconds"] == 0
    refused = arck("run", "--target", "reference", "--more-failures-seconds", "-1", cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
