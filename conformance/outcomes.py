"""From exceptions to statuses, from checks to the requirement matrix, from that to an exit code.

One mapping each, used by the plugin, the CLI and the reports alike.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from arck.conformance.catalogue import Catalogue, Requirement
from arck.conformance.errors import (
    CheckFailure,
    CheckTimeout,
    NotApplicable,
    NotTestable,
    TargetUnreachable,
)
from arck.reports.model import CheckResult, RequirementRow, Status

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

PROFILE_NOT_DECLARED = "the target does not declare the reference profile (profile = 'reference')"


def strongest_level(requirements: Iterable[Requirement]) -> str:
    levels = {r.level for r in requirements}
    for level in ("core", "profile", "recommended"):
        if level in levels:
            return level
    return "core"


def check_failure(exc: BaseException | None) -> CheckFailure | None:
    """The CheckFailure behind an exception, also inside a group.

    Hypothesis reports a failure that did not reproduce on replay as a FlakyFailure group; for a
    non-deterministic target (BUD-14) that is the very defect, so it stays a failure.
    """
    if isinstance(exc, CheckFailure):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        found = [check_failure(e) for e in exc.exceptions]
        if found and all(f is not None for f in found):
            return found[0]
    return None


def classify(exc: BaseException | None, level: str) -> tuple[Status, str]:
    """The status of a finished check, and the message to show with it."""
    exc = check_failure(exc) or exc
    if exc is None:
        return Status.PASS, ""
    if isinstance(exc, CheckFailure):
        status = Status.WARN if level == "recommended" else Status.FAIL
        return status, str(exc)
    if isinstance(exc, NotApplicable):
        return Status.NOT_APPLICABLE, str(exc)
    if isinstance(exc, CheckTimeout):
        return Status.NOT_TESTABLE, f"the target did not answer in time: {exc}"
    if isinstance(exc, NotTestable | TargetUnreachable):
        return Status.NOT_TESTABLE, str(exc)
    # Anything else is a defect in a check or an answer it could not interpret: it must not
    # pass, and it is not a judgement on a requirement either.
    return Status.NOT_TESTABLE, f"check could not judge ({type(exc).__name__}: {exc})"


def requirement_matrix(
    catalogue: Catalogue,
    checks: list[CheckResult],
    selected: set[str],
    profile: str,
    holding: Collection[str] = (),
) -> list[RequirementRow]:
    """One row per requirement; `holding`: IDs whose baseline entry's counterexample still fails."""
    rows: list[RequirementRow] = []
    for req in catalogue.requirements:
        covering = [c for c in checks if req.id in c.requirements]
        row = RequirementRow(req.id, req.level, req.area, req.text, Status.NOT_COVERED)
        row.checks = [c.check_id for c in covering]
        if req.id not in selected:
            row.reason = "not selected by --requirements"
        elif not covering:
            row.reason = req.pending or "no check covers it yet"
        else:
            row.status, row.reason = _aggregate(req, covering, profile)
            if row.status is Status.PASS and req.id in holding:
                row.status = Status.KNOWN_FAILURE
                row.reason = "the baseline's stored counterexample still fails"
        rows.append(row)
    return rows


def _aggregate(req: Requirement, covering: list[CheckResult], profile: str) -> tuple[Status, str]:
    if req.level == "profile" and profile != "reference":
        return Status.NOT_APPLICABLE, PROFILE_NOT_DECLARED
    # A check stops at its first failure: when that failure named other requirements, this
    # one was not judged by it. It is not reported failed for another's defect.
    failed = [c for c in covering if c.status in (Status.FAIL, Status.WARN) and _names(c, req)]
    if failed:
        status = Status.WARN if req.level == "recommended" else Status.FAIL
        return status, ", ".join(c.check_id for c in failed)
    stuck = [c for c in covering if c.status is Status.NOT_TESTABLE]
    stopped = [c for c in covering if c.status in (Status.FAIL, Status.WARN)]
    if stuck or stopped:
        reasons = [c.check_id for c in stuck] + [_stopped(c) for c in stopped]
        return Status.NOT_TESTABLE, ", ".join(reasons)
    known = [c for c in covering if c.status is Status.KNOWN_FAILURE]
    if known:
        reasons = [c.check_id if _names(c, req) else _stopped(c) for c in known]
        return Status.KNOWN_FAILURE, ", ".join(reasons)
    if {c.status for c in covering} == {Status.NOT_APPLICABLE}:
        return Status.NOT_APPLICABLE, covering[0].message
    return Status.PASS, ""


def _names(check: CheckResult, req: Requirement) -> bool:
    """Whether a failed check's failure was about `req` (one naming nothing counts for all)."""
    return not check.failed or req.id in check.failed


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
