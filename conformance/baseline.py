"""Baselines: the failures an implementer has accepted for now, each with its counterexample.

An entry names a requirement ID, optionally one check, and carries the stored cases that showed
the failure. A run given the file treats matching failures as known, and replays every entry's
cases: an entry is stale only when all of its cases now pass. Random exploration finding nothing
this time never makes an entry stale, so entries do not flicker and a baseline only shrinks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arck.conformance.errors import UsageError

State = Literal["holds", "stale", "not_selected", "not_judged"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Case(BaseModel):
    """A saved case file's content (see `ArckRun._keep_case`); extra keys are kept as they are."""

    model_config = ConfigDict(extra="allow")

    check: str = Field(min_length=1)
    case: Any = None


class Entry(_Strict):
    requirement: str = Field(pattern=r"^[A-Z]+-\d+$")
    check: str | None = None  # a check id ("budget/test_x"); None: any check of the requirement
    reason: str = ""
    cases: list[Case] = Field(min_length=1)

    def covers(self, check_id: str, requirement: str) -> bool:
        return self.requirement == requirement and self.check in (None, check_id)


class Baseline(_Strict):
    arck_baseline: Literal[1] = 1
    entries: list[Entry] = Field(default_factory=list)

    def known(self, check_id: str, failed: list[str]) -> bool:
        """Whether every requirement a failure named is covered by an entry."""
        return bool(failed) and all(
            any(e.covers(check_id, rid) for e in self.entries) for rid in failed
        )


def load(path: Path) -> Baseline:
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"baseline file {str(path)!r} does not exist") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"baseline file {str(path)!r} is not readable JSON: {exc}") from None
    try:
        return Baseline.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise UsageError(f"baseline file {str(path)!r}: {problems}") from None


def from_report(report_dir: Path, by: Literal["id", "check"]) -> tuple[Baseline, list[str]]:
    """Entries for every failure of a failed or warned check that kept its case file.

    Each distinct failure of a check gives its case to the requirements it named. Returns the
    baseline and notes on what could not be taken (no case file: not testable).
    """
    try:
        report = json.loads((report_dir / "report.json").read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{report_dir}: no readable report.json ({exc})") from None
    entries: dict[tuple[str, str | None], Entry] = {}
    notes: list[str] = []
    for check in report.get("checks", []):
        if check.get("status") not in ("fail", "warn", "known_failure"):
            continue
        # Reports written before checks listed their failures carry one, at the top level.
        failures = check.get("failures") or [
            {"requirements": check.get("failed"), "case_file": check.get("case_file")}
        ]
        if not any(f.get("case_file") for f in failures):
            notes.append(f"{check['check_id']}: {check['status']} without a case file, not taken")
            continue
        for failure in failures:
            if not failure.get("case_file"):
                continue
            case = _case(report_dir / failure["case_file"])
            for rid in failure.get("requirements") or check["requirements"]:
                key = (rid, None if by == "id" else check["check_id"])
                entry = entries.setdefault(key, Entry(requirement=rid, check=key[1], cases=[case]))
                if case not in entry.cases:
                    entry.cases.append(case)
    ordered = sorted(entries.values(), key=lambda e: (e.requirement, e.check or ""))
    return Baseline(entries=ordered), notes


def _case(path: Path) -> Case:
    try:
        return Case.model_validate(json.loads(path.read_text("utf-8")))  # reads NaN, surrogates
    except (OSError, ValueError, ValidationError) as exc:
        raise UsageError(f"{path}: not a case file ({exc})") from None


def prune(current: Baseline, report_dir: Path) -> tuple[Baseline, list[str]]:
    """The baseline without the entries a run with it judged stale; nothing is ever added.

    Entries the run held, left alone (`not_selected`) or could not judge stay: only a replayed
    counterexample that now passes proves an entry may go.
    """
    try:
        report = json.loads((report_dir / "report.json").read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{report_dir}: no readable report.json ({exc})") from None
    judged = (report.get("baseline") or {}).get("entries")
    if not isinstance(judged, list):
        raise UsageError(
            f"{report_dir}: this report comes from a run without --baseline; prune with the "
            "report of `arck run … --baseline FILE`"
        )
    reported = {(e.get("requirement"), e.get("check")) for e in judged}
    stale = {(e.get("requirement"), e.get("check")) for e in judged if e.get("state") == "stale"}
    notes = [f"{label(e.requirement, e.check)}: not in this report, kept"
             for e in current.entries if (e.requirement, e.check) not in reported]
    kept: list[Entry] = []
    for entry in current.entries:
        if (entry.requirement, entry.check) in stale:
            notes.append(f"{label(entry.requirement, entry.check)}: stale, removed")
        else:
            kept.append(entry)
    return Baseline(entries=kept), notes


def label(requirement: str, check: str | None) -> str:
    """How an entry is named in messages: `BUD-07 (budget/test_x)` or `BUD-07 (any check)`."""
    return f"{requirement} ({check or 'any check'})"


def dump(baseline: Baseline) -> str:
    data = baseline.model_dump(mode="json", exclude_defaults=False)
    return json.dumps(data, ensure_ascii=True, allow_nan=True, indent=1) + "\n"
