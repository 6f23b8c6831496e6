"""Verdicts raised inside a search (issue 17): "not applicable" and "not testable" end a
property or stateful check at once, a failure found stands beside them, and a check that
could not judge names every error behind it, with its request."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from arck.conformance import outcomes
from arck.conformance.checking import expect, property_check, stateful_check, step
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotApplicable, NotTestable
from arck.reports.model import Status
from arck.simulator.target import Exchange

SEARCH = settings(max_examples=50, database=None, deadline=None)


class _Recorder:
    """A target that only keeps the exchanges a check says it sent."""

    def __init__(self) -> None:
        self.recent: deque[Exchange] = deque(maxlen=6)

    def send(self, n: int, status: int = 200) -> Exchange:
        exchange = Exchange("POST", f"http://target.invalid/{n}", b"{}", status, b'{"n": 1}')
        self.recent.append(exchange)
        return exchange


def _ctx() -> CheckContext:
    return CheckContext(_Recorder(), seed=5, settings=SEARCH)  # type: ignore[arg-type]


def _outcome(test: Any, ctx: CheckContext) -> tuple[Status, str, BaseException | None]:
    try:
        test(ctx, None)
    except BaseException as exc:
        return (*outcomes.classify(exc, "core"), exc)
    return Status.PASS, "", None


calls: list[Any] = []


@property_check("BUD-07", cases=st.integers(0, 1000))
def _area_missing(ctx: CheckContext, case: int) -> None:
    calls.append(case)
    raise NotApplicable("the target has no such area")


@property_check("BUD-07", cases=st.integers(0, 1000))
def _setup_refused(ctx: CheckContext, case: int) -> None:
    calls.append(case)
    refused = ctx.target.send(case, 500)  # type: ignore[attr-defined]
    raise NotTestable(f"setup could not publish: {refused.describe()}", exchange=refused)


def test_not_applicable_in_an_example_ends_the_check_at_once() -> None:
    calls.clear()
    status, message, exc = _outcome(_area_missing, _ctx())
    assert (status, message) == (Status.NOT_APPLICABLE, "the target has no such area")
    assert isinstance(exc, NotApplicable)  # not a group of "distinct failures"
    assert len(calls) == 1  # nothing shrunk, nothing searched for after it


def test_a_setup_failure_ends_the_check_at_once_and_names_its_request() -> None:
    calls.clear()
    status, message, exc = _outcome(_setup_refused, _ctx())
    assert status is Status.NOT_TESTABLE
    assert message.startswith("setup could not publish: POST http://target.invalid/")
    assert len(calls) == 1
    [problem] = outcomes.problems(exc)
    assert (problem.type, problem.origin, problem.where) == ("NotTestable", "target", None)
    assert problem.request is not None
    assert problem.request.startswith(f"curl -sS -X POST http://target.invalid/{calls[0]}")
    assert "# → 500" in problem.request


dropped: list[int] = []


@property_check("BUD-07", cases=st.integers(0, 1000))
def _fails_beside_setup_trouble(ctx: CheckContext, case: int) -> None:
    """Fails from 10 on; once it has failed, odd inputs cannot be set up (shrink
    candidates a target refuses, say)."""
    if calls and case % 2:
        dropped.append(case)
        raise NotTestable(f"setup failed for {case}")
    if case >= 10:
        calls.append(case)
    expect(case < 10, "BUD-07", "a case under 10", f"case {case}")


def test_a_failure_found_stands_and_later_setup_trouble_only_drops_inputs() -> None:
    calls.clear()
    dropped.clear()
    status, message, exc = _outcome(_fails_beside_setup_trouble, _ctx())
    assert status is Status.FAIL, message
    [failure] = outcomes.check_failures(exc)
    assert failure.example == 10  # shrunk on, past the inputs whose setup failed
    assert dropped  # such inputs were met, and only dropped


@property_check("BUD-07", cases=st.integers(0, 1000))
def _two_errors(ctx: CheckContext, case: int) -> None:
    ctx.target.send(case)  # type: ignore[attr-defined]
    if case % 2:
        raise KeyError("answer has no 'id'")
    raise TypeError("unsupported operand")


def test_could_not_judge_names_every_error_with_its_request_and_where() -> None:
    status, message, exc = _outcome(_two_errors, _ctx())
    assert status is Status.NOT_TESTABLE
    assert message.startswith("check could not judge: 2 errors: (1) ")
    assert "KeyError: \"answer has no 'id'\"" in message
    assert "TypeError: unsupported operand" in message
    assert "ExceptionGroup" not in message
    problems = outcomes.problems(exc)
    assert sorted(p.type for p in problems) == ["KeyError", "TypeError"]
    for problem in problems:
        assert problem.origin == "arck"
        assert problem.where is not None
        assert problem.where.startswith("conformance/checking.py:")
        assert problem.request is not None
        assert problem.request.startswith("curl -sS -X POST http://target.invalid/")


def _by_profile(ctx: CheckContext) -> st.SearchStrategy[str]:
    return st.sampled_from(["core", "profile"] if ctx.profile == "reference" else ["core"])


@property_check("BUD-07", cases=_by_profile)
def _chosen_by_profile(ctx: CheckContext, case: str) -> None:
    calls.append(case)


def test_cases_chosen_by_profile() -> None:
    class Info:
        profile = "core"

    ctx = _ctx()
    ctx.target.info = Info()  # type: ignore[attr-defined]
    calls.clear()
    assert _outcome(_chosen_by_profile, ctx)[0] is Status.PASS
    assert set(calls) == {"core"}
    Info.profile = "reference"
    calls.clear()
    _outcome(_chosen_by_profile, ctx)
    assert set(calls) == {"core", "profile"}


class _Missing(RuleBasedStateMachine):
    """A machine whose setup (in an initialize rule, through `step`) finds no such area."""

    def __init__(self, ctx: CheckContext) -> None:
        super().__init__()
        self.ctx = ctx

    @initialize()
    def setup(self) -> None:
        step(lambda ctx: _missing(ctx), self.ctx, {"actions": []})

    @rule()
    def act(self) -> None:
        calls.append("act")


def _missing(ctx: CheckContext) -> None:
    calls.append("setup")
    raise NotApplicable("no runs here")


class _MissingAtOnce(_Missing):
    def __init__(self, ctx: CheckContext) -> None:
        super().__init__(ctx)
        _missing(ctx)


@pytest.mark.parametrize("machine", [_Missing, _MissingAtOnce])
def test_stateful_checks_end_at_once_when_the_area_is_missing(machine: Any) -> None:
    @stateful_check("RUN-08", machine=machine)
    def _check(ctx: CheckContext, case: Any) -> None:
        raise AssertionError("replays only")

    calls.clear()
    status, message, exc = _outcome(_check, _ctx())
    assert (status, message) == (Status.NOT_APPLICABLE, "no runs here")
    assert isinstance(exc, NotApplicable)
    assert calls == ["setup"]


def test_replaying_a_case_raises_the_verdict_itself() -> None:
    with pytest.raises(NotApplicable):
        _area_missing.arck_replay(_ctx(), 3)
