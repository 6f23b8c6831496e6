"""From exceptions to statuses, from checks to the requirement matrix, from that to an exit code.

One mapping each, used by the plugin, the CLI and the reports alike.
"""

from __future__ import annotations

import traceback
from collections.abc import Collection, Iterable
from pathlib import Path

import arck
from arck.conformance.catalogue import Catalogue, Requirement
from arck.conformance.errors import (
    CheckFailure,
    CheckTimeout,
    NotApplicable,
    NotTestable,
    TargetUnreachable,
    request_of,
)
from arck.reports.model import CheckResult, Failure, Problem, RequirementRow, Status

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

PROFILE_NOT_DECLARED = "the target does not declare the reference profile (profile = 'reference')"


def strongest_level(requirements: Iterable[Requirement]) -> str:
    levels = {r.level for r in requirements}
    for level in ("core", "profile", "recommended"):
        if level in levels:
            return level
    return "core"


def check_failures(exc: BaseException | None) -> list[CheckFailure]:
    """Every distinct CheckFailure behind an exception, also inside (nested) groups.

    Hypothesis reports distinct failures as a group, and a failure that did not reproduce on
    replay as a FlakyFailure group; for a non-deterministic target (BUD-14) that is the very
    defect, so it stays a failure. A failure found beside other errors still stands: it was
    seen on its own input (the errors are shown too, `problems`). Failures of one key (see
    `errors.keyed`) count once; the order is the check's own, by line.
    """
    found: dict[object, CheckFailure] = {}
    for leaf in _leaves(exc):
        if isinstance(leaf, CheckFailure):
            found.setdefault(type(leaf).key or id(leaf), leaf)
    return sorted(found.values(), key=_position)


def _leaves(exc: BaseException | None) -> list[BaseException]:
    """The errors behind `exc`: itself, or every one inside its (nested) groups."""
    if exc is None:
        return []
    if not isinstance(exc, BaseExceptionGroup):
        return [exc]
    return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]


def problems(exc: BaseException | None) -> list[Problem]:
    """Each error behind `exc` that is neither a failure nor "not applicable", once: what
    kept the check from judging, with the request it is about and, for an error in a
    check, where arck raised it."""
    shown: dict[tuple[str, str], Problem] = {}
    for leaf in _leaves(exc):
        if isinstance(leaf, CheckFailure | NotApplicable):
            continue
        harness = not isinstance(leaf, NotTestable | TargetUnreachable | CheckTimeout) or (
            isinstance(leaf, CheckTimeout) and not leaf.on_target
        )
        problem = Problem(type(leaf).__name__, _text(leaf), "arck" if harness else "target",
                          request_of(leaf), _where(leaf) if harness else None)
        shown.setdefault((problem.type, problem.message), problem)
    return list(shown.values())


def _text(exc: BaseException) -> str:
    text = str(exc) or repr(exc)
    if isinstance(exc, CheckTimeout):
        who = "the target did not answer in time" if exc.on_target else "the check ran out of time"
        text = f"{who}: {text}"
    return text[:MAX_PROBLEM_CHARS]


MAX_PROBLEM_CHARS = 2000
_ARCK = [Path(arck.__file__).resolve().parent]
_ARCK += [(_ARCK[0] / part).resolve() for part in ("conformance", "simulator", "reports")]


def _where(exc: BaseException) -> str | None:
    """The innermost frame of `exc` in arck's own code, as `folder/file.py:line`."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        path = Path(frame.filename).resolve()
        for root in _ARCK:
            if path.is_relative_to(root):
                found = f"{path.relative_to(root.parent)}:{frame.lineno}"
                break
    return found


def _position(failure: CheckFailure) -> tuple[str, int, tuple[str, ...]]:
    key = type(failure).key
    return ("", 0, tuple(failure.requirements)) if key is None else (key[1], key[2], key[0])


def check_failure(exc: BaseException | None) -> CheckFailure | None:
    """The first of `check_failures`, or None."""
    return next(iter(check_failures(exc)), None)


def classify(exc: BaseException | None, level: str) -> tuple[Status, str]:
    """The status of a finished check, and the message to show with it: a failure's own,
    or every error that kept the check from judging, each named (`problems` has them
    whole, with their requests)."""
    failure = check_failure(exc)
    if failure is not None:
        status = Status.WARN if level == "recommended" else Status.FAIL
        return status, str(failure)
    if exc is None:
        return Status.PASS, ""
    errors = problems(exc)
    if not errors:  # nothing but "not applicable" behind it
        return Status.NOT_APPLICABLE, str(_leaves(exc)[0])
    # Anything but a refused step, a hang or no answer is a defect in a check or an answer
    # it could not interpret: it must not pass, and it is not a judgement on a requirement.
    if len(errors) == 1:
        return Status.NOT_TESTABLE, _headline(errors[0], alone=True)
    listed = "; ".join(f"({n}) {_headline(e, alone=False)}" for n, e in enumerate(errors, 1))
    return Status.NOT_TESTABLE, f"check could not judge: {len(errors)} errors: {listed}"


def _headline(problem: Problem, *, alone: bool) -> str:
    """One error on one line: a target's own message as it is, an error in a check named."""
    text = problem.message if alone else problem.message[:300]
    if problem.origin == "target":
        return text if alone else f"{problem.type}: {text}"
    where = f", at {problem.where}" if problem.where else ""
    named = f"{problem.type}: {text}{where}"
    return f"check could not judge ({named})" if alone else named


def requirement_matrix(
    catalogue: Catalogue,
    checks: list[CheckResult],
    selected: set[str],
    profile: str,
    holding: Collection[str] = (),
    left_out: Collection[str] = (),
) -> list[RequirementRow]:
    """One row per requirement; `holding`: IDs whose baseline entry's counterexample still fails;
    `left_out`: IDs of checks that `--checks` left out.

    A requirement outside `--requirements` is still judged when a check that ran covers it: the
    check judged it either way. Only one no check in the run covers is "not selected".
    """
    rows: list[RequirementRow] = []
    for req in catalogue.requirements:
        covering = [c for c in checks if req.id in c.requirements]
        row = RequirementRow(req.id, req.level, req.area, req.text, Status.NOT_COVERED)
        row.checks = [c.check_id for c in covering]
        if not covering:
            selected_here = req.id in selected
            row.reason = (req.pending or "no check covers it yet") if selected_here else (
                "not selected by --requirements"
            )
            if selected_here and req.id in left_out:
                row.reason = "its checks not selected by --checks"
        else:
            row.status, row.reason = _aggregate(req, covering, profile)
            if row.status is Status.PASS and req.id in holding:
                row.status = Status.KNOWN_FAILURE
                row.reason = "the baseline's stored counterexample still fails"
            if req.id not in selected:
                judged = f"not selected by --requirements; judged by {', '.join(row.checks)}, " \
                         "which ran for the selected requirements"
                row.reason = f"{row.reason}; {judged}" if row.reason else judged
        rows.append(row)
    return rows


def _aggregate(req: Requirement, covering: list[CheckResult], profile: str) -> tuple[Status, str]:
    if req.level == "profile" and profile != "reference":
        return Status.NOT_APPLICABLE, PROFILE_NOT_DECLARED
    # Each failure counts against the requirements it named. A check stops at a failure on
    # that input: a requirement no failure named was not judged there, and is not reported
    # failed for another's defect.
    failing = [c for c in covering if c.status in (Status.FAIL, Status.WARN)]
    new = [c for c in failing if _naming(c, req, known=False)]
    if new:
        status = Status.WARN if req.level == "recommended" else Status.FAIL
        return status, ", ".join(_which(c, req, known=False) for c in new)
    stuck = [c for c in covering if c.status is Status.NOT_TESTABLE]
    stopped = [c for c in failing if not _naming(c, req, known=True)]
    if stuck or stopped:
        reasons = [c.check_id for c in stuck] + [_stopped(c) for c in stopped]
        return Status.NOT_TESTABLE, ", ".join(reasons)
    known = [c for c in covering if c.status is Status.KNOWN_FAILURE or c in failing]
    if known:
        reasons = [_which(c, req, known=True) if _naming(c, req, known=True) else _stopped(c)
                   for c in known]
        return Status.KNOWN_FAILURE, ", ".join(reasons)
    if {c.status for c in covering} == {Status.NOT_APPLICABLE}:
        return Status.NOT_APPLICABLE, covering[0].message
    return Status.PASS, ""


def _failures(check: CheckResult) -> list[Failure]:
    """A check's failures; one made from the top-level fields for results without the list."""
    if check.failures:
        return check.failures
    known = check.status is Status.KNOWN_FAILURE
    return [Failure(check.failed, check.message, known=known)]


def _names(failure: Failure, req: Requirement) -> bool:
    """Whether a failure was about `req` (one naming nothing counts for all)."""
    return not failure.requirements or req.id in failure.requirements


def _naming(check: CheckResult, req: Requirement, *, known: bool) -> list[int]:
    """Positions (1-based) of the check's failures naming `req`: only new ones, or any."""
    return [i for i, f in enumerate(_failures(check), 1)
            if _names(f, req) and (known or not f.known)]


def _which(check: CheckResult, req: Requirement, *, known: bool) -> str:
    """The check, and which of its failures named `req` when it has several."""
    positions = _naming(check, req, known=known)
    total = len(_failures(check))
    if total == 1:
        return check.check_id
    label = "failure" if len(positions) == 1 else "failures"
    return f"{check.check_id} ({label} {', '.join(map(str, positions))} of {total})"


def _stopped(check: CheckResult) -> str:
    return f"{check.check_id} stopped at a failure of {', '.join(check.failed)} before judging it"


def exit_code(rows: list[RequirementRow], strict: bool) -> int:
    """0 when no core (or, for the reference profile, profile) requirement fails; else 1."""
    for row in rows:
        recommended = row.level == "recommended"
        if row.status is Status.FAIL or (row.status is Status.NOT_TESTABLE and not recommended):
            return EXIT_FAILED
        if strict and row.status in (Status.WARN, Status.NOT_TESTABLE):
            return EXIT_FAILED
    return EXIT_OK
