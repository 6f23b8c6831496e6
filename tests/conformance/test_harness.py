"""The harness's own parts: catalogue, outcomes, target files, the target seam."""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import pytest
import respx
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from arck.conformance import catalogue, outcomes
from arck.conformance.checking import expect, property_check, stateful_check
from arck.conformance.context import CheckContext
from arck.conformance.coverage import coverage
from arck.conformance.errors import CheckFailure, CheckTimeout, NotApplicable, NotTestable
from arck.conformance.session import _watchdog
from arck.reports.model import CheckResult, Failure, Status
from arck.simulator.errors import UsageError
from arck.simulator.factory import build_target, verify_credentials
from arck.simulator.target import WAITING, Exchange, RateLimiter
from arck.simulator.targetfile import load

SPEC = Path(__file__).resolve().parents[3] / "shared" / "SPEC.md"


@pytest.mark.skipif(not SPEC.exists(), reason="SPEC.md is not beside the repository "
                    "(a user's clone): the catalogue is the protocol's only copy")
def test_catalogue_matches_spec() -> None:
    """Every requirement row of SPEC.md (ID, level and text, in order) and its revision line."""
    cat = catalogue.load()
    spec = SPEC.read_text("utf-8")
    rows = re.findall(r"^\| ([A-Z]+-\d+) \| (core|recommended|profile) \| (.*) \|$", spec, re.M)
    assert rows == [(r.id, r.level, r.text) for r in cat.requirements]
    revision = re.search(r"^Revision \*\*.*?\.$", spec, re.M | re.S)
    assert revision is not None, "SPEC.md has no revision line"
    changes = "; ".join(cat.protocol.changes)
    assert " ".join(revision.group().split()) == (
        f"Revision **{cat.revision}** (changes since {cat.protocol.previous}: {changes})."
    )


def test_catalogue_refuses_duplicates() -> None:
    row = '[[requirement]]\nid = "BUD-01"\nlevel = "core"\narea = "BUD"\ntext = "x"\n'
    with pytest.raises(ValueError, match="Duplicate requirement ID: BUD-01"):
        catalogue.parse('[protocol]\nrevision = "x"\n' + row + row)


def test_selection_by_area_and_id() -> None:
    cat = catalogue.load()
    chosen = cat.select("dry,BUD-07")
    assert "BUD-07" in chosen
    assert {r.id for r in cat.requirements if r.area == "DRY"} <= chosen
    with pytest.raises(ValueError, match="neither an area nor an ID"):
        cat.select("NOPE")


def test_every_check_names_known_requirements() -> None:
    cat = catalogue.load()
    covered = coverage()
    assert covered, "no checks found"
    for rid in covered:
        cat.get(rid)  # raises for an unknown ID
    pending_but_covered = [r.id for r in cat.requirements if r.pending and r.id in covered]
    assert not pending_but_covered, "drop `pending` from requirements that now have checks"


@pytest.mark.parametrize(
    ("exc", "level", "status"),
    [
        (None, "core", Status.PASS),
        (CheckFailure("BUD-07", "a", "b"), "core", Status.FAIL),
        (CheckFailure("BUD-10", "a", "b"), "recommended", Status.WARN),
        (CheckFailure("BUD-21", "a", "b"), "profile", Status.FAIL),
        (NotApplicable("x"), "core", Status.NOT_APPLICABLE),
        (NotTestable("x"), "core", Status.NOT_TESTABLE),
        (CheckTimeout("x"), "core", Status.NOT_TESTABLE),
        (KeyError("x"), "core", Status.NOT_TESTABLE),
        (ExceptionGroup("flaky", [CheckFailure("BUD-14", "a", "b")]), "core", Status.FAIL),
        # A failure found beside an error stands (the error is listed with it).
        (ExceptionGroup("mixed", [CheckFailure("BUD-14", "a", "b"), KeyError("x")]), "core",
         Status.FAIL),
        (ExceptionGroup("errors", [KeyError("x"), NotTestable("y")]), "core",
         Status.NOT_TESTABLE),
        (ExceptionGroup("n/a", [NotApplicable("x"), NotApplicable("y")]), "core",
         Status.NOT_APPLICABLE),
    ],
)
def test_classify(exc: BaseException | None, level: str, status: Status) -> None:
    assert outcomes.classify(exc, level)[0] is status


def _result(rid: str, status: Status) -> CheckResult:
    return CheckResult(f"x/{rid}", rid, [rid], status)


def test_matrix_and_exit_codes() -> None:
    cat = catalogue.load()
    everything = set(cat.ids())
    rows = outcomes.requirement_matrix(
        cat, [_result("BUD-07", Status.PASS), _result("BUD-10", Status.WARN)], everything,
        "reference")
    by_id = {r.id: r for r in rows}
    assert by_id["BUD-07"].status is Status.PASS
    assert by_id["BUD-10"].status is Status.WARN
    assert by_id["EXE-06"].status is Status.NOT_COVERED
    assert "duty of the executor" in by_id["EXE-06"].reason
    assert outcomes.exit_code(rows, strict=False) == 0
    assert outcomes.exit_code(rows, strict=True) == 1
    rows = outcomes.requirement_matrix(cat, [_result("BUD-07", Status.NOT_TESTABLE)], everything,
                                       "reference")
    assert outcomes.exit_code(rows, strict=False) == 1


def _multi(status: Status, failed: list[str]) -> CheckResult:
    return CheckResult("budget/test_bytes", "test_bytes", ["BUD-04", "BUD-06", "BUD-07"],
                       status, failed=failed)


def test_a_failure_counts_only_against_the_requirements_it_names() -> None:
    cat = catalogue.load()
    everything = set(cat.ids())
    rows = {r.id: r for r in outcomes.requirement_matrix(
        cat, [_multi(Status.FAIL, ["BUD-04"]), _result("BUD-06", Status.PASS)], everything,
        "reference")}
    assert rows["BUD-04"].status is Status.FAIL
    for other in ("BUD-06", "BUD-07"):  # not judged by the check that stopped: never a pass
        assert rows[other].status is Status.NOT_TESTABLE
        assert "stopped at a failure of BUD-04" in rows[other].reason
    # a failure naming no requirement counts against all the check covers
    rows = {r.id: r for r in outcomes.requirement_matrix(
        cat, [_multi(Status.FAIL, [])], everything, "reference")}
    assert {rows[i].status for i in ("BUD-04", "BUD-06", "BUD-07")} == {Status.FAIL}
    # behind a known failure the others are known too: a baseline entry must be enough
    rows = {r.id: r for r in outcomes.requirement_matrix(
        cat, [_multi(Status.KNOWN_FAILURE, ["BUD-04"])], everything, "reference")}
    assert {rows[i].status for i in ("BUD-04", "BUD-06", "BUD-07")} == {Status.KNOWN_FAILURE}
    assert "before judging" in rows["BUD-07"].reason
    assert outcomes.exit_code(list(rows.values()), strict=True) == 0


def test_profile_requirements_not_applicable_elsewhere() -> None:
    cat = catalogue.load()
    rows = outcomes.requirement_matrix(cat, [_result("BUD-21", Status.FAIL)], set(cat.ids()),
                                       "core")
    row = next(r for r in rows if r.id == "BUD-21")
    assert row.status is Status.NOT_APPLICABLE
    assert "reference profile" in row.reason


def test_target_file_errors_name_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "t.toml"
    bad.write_text('[target]\nbase_url = "http://x"\nprofile = "fancy"\n[safety]\nnope = 1\n')
    with pytest.raises(UsageError) as info:
        load(bad)
    assert "target.profile" in str(info.value)
    assert "safety.nope" in str(info.value)
    with pytest.raises(UsageError, match="does not exist"):
        load(tmp_path / "missing.toml")


def test_target_file_reads_tokens_from_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.toml"
    path.write_text('[target]\nbase_url = "http://x"\n[credentials]\nfull = "env:ARCK_T"\n')
    config = load(path)
    with pytest.raises(UsageError, match="ARCK_T is not set"):
        config.token("full")
    monkeypatch.setenv("ARCK_T", "secret")
    assert config.token("full") == "secret"


def test_curl_never_carries_the_credential() -> None:
    exchange = Exchange("POST", "http://x/v1/tools/dry-run", b'{"a":1}', 200, b"{}")
    line = exchange.as_curl()
    assert "$ARCK_TOKEN" in line
    assert line.startswith("curl")


def test_rate_limiter_spaces_requests() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(4.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        limiter.wait()
    assert slept == [0.25, 0.25]


SERVICE = "http://runtime.example.test"


@pytest.mark.parametrize(("status", "refused"), [(401, True), (404, False), (403, False)])
def test_a_service_refusing_the_dev_credentials_stops_the_run(status: int, refused: bool) -> None:
    with respx.mock(assert_all_called=True) as mock:
        route = mock.get(url__regex=rf"{SERVICE}/v1/tool-sets/.*").respond(status, json={})
        target = build_target(SERVICE)
        if refused:
            with pytest.raises(UsageError, match=r"\[credentials\]"):
                verify_credentials(target)
        else:
            verify_credentials(target)
        assert route.calls.last.request.headers["authorization"] == "Bearer arck-dev-full"
        target.close()


def test_credentials_from_a_target_file_are_not_probed(tmp_path: Path) -> None:
    config = tmp_path / "t.toml"
    config.write_text(f'[target]\nbase_url = "{SERVICE}"\n[credentials]\nfull = "mine"\n')
    with respx.mock(assert_all_called=False) as mock:
        route = mock.get(url__regex=r".*").respond(401)
        target = build_target(None, config)
        verify_credentials(target)  # the user's own tokens: each check says what it saw
        assert not route.called
        target.close()


# -- distinct failures, their own exchanges, the matrix over failures ----------------------------


class _Recorder:
    """Just enough of a target for a check: every `send` is kept in `recent`, as HttpTarget does."""

    def __init__(self) -> None:
        self.recent: deque[Exchange] = deque(maxlen=6)

    def send(self, case: int) -> None:
        self.recent.append(Exchange("POST", f"http://target.invalid/{case}", None, 200, b"{}"))


@property_check("BUD-03", "BUD-07", cases=st.integers(0, 1000))
def _breaks_two(ctx: CheckContext, case: int) -> None:
    ctx.target.send(case)  # type: ignore[attr-defined]
    expect(case < 500, "BUD-07", "case < 500", f"case == {case}")  # other numbers, one failure
    expect(case % 2 == 0, "BUD-03", "an even case", f"case == {case}")


def _two_failures() -> list[CheckFailure]:
    ctx = CheckContext(_Recorder(), seed=3,  # type: ignore[arg-type]
                       settings=settings(max_examples=100, database=None, deadline=None))
    with pytest.raises(BaseExceptionGroup) as raised:
        _breaks_two(ctx, None)
    return outcomes.check_failures(raised.value)


def test_each_distinct_failure_is_shrunk_and_reported_with_its_own_exchanges() -> None:
    failures = _two_failures()
    assert [f.requirements for f in failures] == [("BUD-07",), ("BUD-03",)]  # in source order
    assert [f.example for f in failures] == [500, 1]  # each shrunk on its own
    # only the failing input's own exchange, not those of earlier examples
    assert [f.exchanges for f in failures] == [
        [Exchange("POST", f"http://target.invalid/{n}", None, 200, b"{}").reproduction()]
        for n in (500, 1)
    ]
    keys = [type(f).key for f in failures]
    assert all(k is not None and k[1] == __file__ for k in keys)  # the check's own line
    assert keys[0] != keys[1]


def test_check_failures_sees_into_groups() -> None:
    one, two = _two_failures()
    grouped = ExceptionGroup("two", [two, ExceptionGroup("flaky", [one])])
    assert outcomes.check_failures(grouped) == [one, two]
    assert outcomes.classify(grouped, "core") == (Status.FAIL, str(one))
    assert outcomes.check_failures(ExceptionGroup("again", [one, one])) == [one]
    mixed = ExceptionGroup("mixed", [one, KeyError("x")])
    assert outcomes.check_failures(mixed) == [one]
    assert [p.type for p in outcomes.problems(mixed)] == ["KeyError"]


def _two_ways(known: tuple[bool, bool]) -> CheckResult:
    status = Status.KNOWN_FAILURE if all(known) else Status.FAIL
    failures = [Failure(["BUD-04"], "a", known=known[0]), Failure(["BUD-07"], "b", known=known[1])]
    return CheckResult("budget/test_bytes", "test_bytes", ["BUD-04", "BUD-06", "BUD-07"], status,
                       failed=["BUD-04", "BUD-07"], failures=failures)


def test_each_requirement_counts_against_the_failures_that_named_it() -> None:
    cat = catalogue.load()
    everything = set(cat.ids())
    rows = {r.id: r for r in outcomes.requirement_matrix(
        cat, [_two_ways((False, False))], everything, "reference")}
    assert rows["BUD-04"].status is Status.FAIL
    assert rows["BUD-04"].reason == "budget/test_bytes (failure 1 of 2)"
    assert rows["BUD-07"].reason == "budget/test_bytes (failure 2 of 2)"
    assert rows["BUD-06"].status is Status.NOT_TESTABLE  # named by neither
    # one failure known to the baseline, the other new: each requirement gets its own
    rows = {r.id: r for r in outcomes.requirement_matrix(
        cat, [_two_ways((True, False))], everything, "reference")}
    assert (rows["BUD-04"].status, rows["BUD-07"].status) == (Status.KNOWN_FAILURE, Status.FAIL)


def test_a_requirement_outside_the_selection_is_judged_by_a_check_that_ran() -> None:
    cat = catalogue.load()
    ran = [CheckResult("budget/test_fits", "test_fits", ["BUD-03", "BUD-07"], Status.PASS),
           _two_ways((False, False))]
    rows = {r.id: r for r in outcomes.requirement_matrix(cat, ran, {"BUD-07"}, "reference")}
    assert rows["BUD-03"].status is Status.PASS
    assert "judged by budget/test_fits" in rows["BUD-03"].reason
    assert "not selected" in rows["BUD-03"].reason
    assert rows["BUD-04"].status is Status.FAIL  # unselected, but a selected check broke it
    assert rows["BUD-04"].reason.startswith("budget/test_bytes (failure 1 of 2); not selected")
    assert rows["BUD-01"].status is Status.NOT_COVERED  # no check that ran covers it
    assert rows["BUD-01"].reason == "not selected by --requirements"


def _timed_out(body: Callable[[], None]) -> CheckTimeout:
    with pytest.raises(CheckTimeout) as caught, _watchdog(0.2, "checks/test_x.py::test_x"):
        body()
    return caught.value


def test_a_check_out_of_time_says_whether_the_target_was_answering() -> None:
    """The watchdog blames the target only while a request waits for its answer; a check
    that spent its own time between requests says so, and is reported as arck's."""

    def waiting_on_target() -> None:
        with WAITING("GET /v1/runs/run-000001"):
            time.sleep(2)

    hung = _timed_out(waiting_on_target)
    assert hung.on_target
    assert "GET /v1/runs/run-000001 had been waiting" in str(hung)
    (problem,) = outcomes.problems(hung)
    assert problem.origin == "target"
    assert problem.message.startswith("the target did not answer in time")

    slow = _timed_out(lambda: time.sleep(2))
    assert not slow.on_target
    assert "no request waiting on the target (the last was answered" in str(slow)
    (problem,) = outcomes.problems(slow)
    assert problem.origin == "arck"
    assert problem.message.startswith("the check ran out of time")


@property_check("BUD-03", cases=st.integers(0, 1000))
def _slow_and_fine(ctx: CheckContext, case: int) -> None:
    time.sleep(0.02)  # a slow target: each input costs wall time
    expect(case >= 0, "BUD-03", "a case >= 0", f"case == {case}")


@property_check("BUD-03", cases=st.integers(0, 1000))
def _slow_and_failing(ctx: CheckContext, case: int) -> None:
    time.sleep(0.02)
    expect(case < 3, "BUD-03", "a case < 3", f"case == {case}")


def _bounded(seconds: float | None) -> CheckContext:
    return CheckContext(_Recorder(), seed=5, search_seconds=seconds,  # type: ignore[arg-type]
                        settings=settings(max_examples=200, database=None, deadline=None))


def test_a_search_stops_at_its_time_budget_and_says_how_far_it_got() -> None:
    """Half of --check-timeout bounds the generation: a slow target gets a pass on the inputs
    tried (counted, flagged), not a "not testable" for the profile's whole count."""
    ctx = _bounded(0.3)
    _slow_and_fine(ctx, None)
    assert ctx.stopped_by_time
    assert ctx.examples is not None
    assert 1 <= ctx.examples < 200

    unbounded = _bounded(None)
    _slow_and_fine(unbounded, None)
    assert not unbounded.stopped_by_time
    assert unbounded.examples == 200


class _SlowMachine(RuleBasedStateMachine):
    """A state machine whose every step costs wall time, as one over HTTP does."""

    def __init__(self, ctx: CheckContext) -> None:
        super().__init__()

    @rule(n=st.integers(0, 10))
    def act(self, n: int) -> None:
        time.sleep(0.02)


@stateful_check("RUN-08", machine=_SlowMachine, steps=5)
def _slow_machine(ctx: CheckContext, case: object) -> None:
    """Never replayed here: a search that finds nothing has no case."""


def test_a_state_machine_search_stops_at_its_time_budget_without_flakiness() -> None:
    """A state machine's search cut short at its time budget is seen by hypothesis as data
    generation that behaves otherwise (FlakyStrategyDefinition): over HTTP that was a false
    "not testable". With no failure found, it passes on the programs it tried."""
    ctx = _bounded(0.3)
    _slow_machine(ctx, None)
    assert ctx.stopped_by_time
    assert ctx.examples is not None
    assert 1 <= ctx.examples < 200


def test_a_failure_found_in_time_is_still_shrunk_past_the_budget() -> None:
    ctx = _bounded(0.3)
    with pytest.raises(CheckFailure) as raised:
        _slow_and_failing(ctx, None)
    assert raised.value.example == 3
    assert not ctx.stopped_by_time
