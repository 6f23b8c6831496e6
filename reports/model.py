"""The run report: the one data shape every writer renders.

It lives in `reports/` so the writers depend on nothing else in the project; `conformance/`
fills it in from the event stream.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """One status list for checks and requirements, mapped once to JUnit (see `junit.py`)."""

    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"  # a recommended requirement failed
    NOT_APPLICABLE = "not_applicable"  # optional capability or profile not declared
    NOT_TESTABLE = "not_testable"  # a prerequisite or setup failed, or the target hung
    NOT_COVERED = "not_covered"  # no check for it in this run
    KNOWN_FAILURE = "known_failure"  # failing, and listed in the run's baseline file


@dataclass
class Failure:
    """One distinct failure of a check: a requirement broken at one place, on its own input."""

    requirements: list[str]  # the requirement IDs this failure named
    message: str  # expected / seen / next step, and what kind of input showed it
    example: Any = None  # the minimal (shrunk) failing input, JSON-able
    input_kind: str = ""  # the traits of that input, e.g. "escape-heavy; deep (12 levels)"
    case_file: str | None = None  # path of its saved case, relative to the report dir
    replay: str | None = None  # one shell line that replays it
    exchanges: list[str] = field(default_factory=list)  # curl lines of this input's HTTP
    known: bool = False  # accepted in the run's baseline file


# How each origin of a Problem reads in a report: who is to look first.
PROBLEM_ORIGINS = {
    "target": "from the target: a step it refused or answered unusably, a hang, no answer",
    "arck": "in arck: an error raised in a check (a defect in arck, or an answer it could "
            "not interpret); please report it with the request shown",
}


@dataclass
class Problem:
    """One error that kept a check from judging: shown whole, so a reader can tell "my
    service broke" (a refused step, a hang) from "arck broke" (an error in a check)."""

    type: str  # the error's class, e.g. "NotTestable", "KeyError"
    message: str
    origin: str  # "target": a step refused, a hang, no answer; "arck": an error in a check
    request: str | None = None  # the request it is about: a curl line, then its answer
    where: str | None = None  # for an error in a check: arck's file and line that raised it


@dataclass
class CheckResult:
    """The outcome of one check (one pytest item).

    A check can fail in several distinct ways (`failures`); the top-level message, example,
    case file, replay and exchanges are those of the first, and `failed` names the IDs of all.
    A check that could not judge (not testable) lists each error behind it in `errors`, as
    does a failing one whose search also met errors.
    """

    check_id: str  # stable id, e.g. "budget/test_projection_fits_budget"
    name: str
    requirements: list[str]
    status: Status
    message: str = ""  # expected / seen / next step; empty on pass
    example: Any = None  # the minimal (shrunk) failing input, JSON-able
    case_file: str | None = None  # path of the saved case, relative to the report dir
    replay: str | None = None  # one shell line that replays this failure
    duration_s: float = 0.0
    failed: list[str] = field(default_factory=list)  # the requirement IDs the failures named
    examples: int | None = None  # inputs tried (property checks); None for one-shot checks
    exchanges: list[str] = field(default_factory=list)  # curl lines of the failing input's HTTP
    failures: list[Failure] = field(default_factory=list)  # every distinct failure, first first
    errors: list[Problem] = field(default_factory=list)  # what kept it from judging, each whole


@dataclass
class RequirementRow:
    """One line of the requirement matrix."""

    id: str
    level: str  # core | recommended | profile
    area: str
    text: str
    status: Status
    checks: list[str] = field(default_factory=list)
    reason: str = ""  # why not applicable / not covered / not testable


@dataclass
class RunReport:
    arck_version: str
    protocol_revision: str
    target: dict[str, Any]  # name, url or adapter, profile, capabilities; never credentials
    seed: int | None
    started_at: str  # ISO 8601 UTC
    finished_at: str
    exit_code: int
    requirements: list[RequirementRow]
    checks: list[CheckResult]
    created: list[str] = field(default_factory=list)  # resources the run created on the target
    settings: dict[str, Any] = field(default_factory=dict)  # profile, max_examples, strict, ...
    baseline: dict[str, Any] | None = None  # the baseline file and what became of each entry
    # How often each fault kind of the simulated provider fired (checks of runs): a check
    # that needed a fault which never fired is not testable, never a pass.
    faults: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, dict[str, int]]:
        """Counts by status, for checks and for requirements."""
        out: dict[str, dict[str, int]] = {"checks": {}, "requirements": {}}
        for c in self.checks:
            out["checks"][c.status.value] = out["checks"].get(c.status.value, 0) + 1
        for r in self.requirements:
            out["requirements"][r.status.value] = out["requirements"].get(r.status.value, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["summary"] = self.summary()
        return data
