"""JUnit XML for CI: one testsuite, one testcase per check, coverage gaps as skipped cases.

CI systems only know pass, failure, error and skipped; `JUNIT_OUTCOMES` is the one place where
arck's statuses are mapped onto them. The exact status always rides along as the
`arck_status` property.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from arck.reports._text import pretty_json, visible, write_bytes
from arck.reports.model import PROBLEM_ORIGINS, CheckResult, RequirementRow, RunReport, Status


@dataclass(frozen=True)
class Outcome:
    """How one status appears in a `<testcase>`."""

    tag: str | None  # child element; None for a plain (passing) testcase
    type: str | None  # the child's `type` attribute
    counter: str | None  # the testsuite attribute it counts towards
    prefix: str = ""  # put before the message


JUNIT_OUTCOMES: Mapping[Status, Outcome] = MappingProxyType(
    {
        Status.PASS: Outcome(None, None, None),
        Status.FAIL: Outcome("failure", "arck.fail", "failures"),
        # A failed recommended requirement must not fail CI; it is shown, not counted.
        Status.WARN: Outcome("system-out", None, None, "WARNING (recommended): "),
        Status.NOT_APPLICABLE: Outcome("skipped", None, "skipped", "not applicable: "),
        # The target could not be checked (setup failed, it hung): CI must go red.
        Status.NOT_TESTABLE: Outcome("error", "arck.not_testable", "errors", "not testable: "),
        # Checks never report it; requirements without checks become skipped cases.
        Status.NOT_COVERED: Outcome("skipped", None, "skipped", "not covered: "),
        # Listed in the baseline: an accepted, still-failing requirement does not fail CI.
        Status.KNOWN_FAILURE: Outcome("skipped", None, "skipped", "known failure (baseline): "),
    }
)
_COUNTERS = ("failures", "errors", "skipped")


def render_junit(report: RunReport) -> bytes:
    """The JUnit XML document for `report`, UTF-8 encoded, indented."""
    suite = ET.Element("testsuite", name="arck")
    props = _sub(suite, "properties")
    for name, value in _suite_properties(report):
        _sub(props, "property", name=name, value=value)
    cases = [_check_case(suite, report, c) for c in report.checks if c.status != Status.NOT_COVERED]
    cases += [_gap_case(suite, r) for r in report.requirements if r.status == Status.NOT_COVERED]
    counts = Counter(JUNIT_OUTCOMES[s].counter for s in cases)
    attrs = {"tests": str(len(cases))} | {k: str(counts[k]) for k in _COUNTERS}
    attrs |= {"time": f"{_wall_time(report):.3f}", "timestamp": visible(report.started_at)}
    suite.attrib.update(attrs)
    root = ET.Element("testsuites", {"name": "arck"} | {k: attrs[k] for k in ("tests", *_COUNTERS)})
    root.append(suite)
    ET.indent(root)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def write_junit(report: RunReport, path: Path) -> None:
    """Write `render_junit(report)` to `path`."""
    write_bytes(path, render_junit(report))


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    """A child element whose text and attributes are made XML-safe."""
    el = ET.SubElement(parent, tag, {k: visible(v) for k, v in attrs.items()})
    if text is not None:
        el.text = visible(text)
    return el


def _suite_properties(report: RunReport) -> list[tuple[str, str]]:
    out = [
        ("arck_version", report.arck_version),
        ("protocol_revision", report.protocol_revision),
        ("seed", "none" if report.seed is None else str(report.seed)),
    ]
    out += [
        (f"target_{k}", str(report.target[k]))
        for k in ("name", "profile", "url", "adapter")
        if report.target.get(k) is not None
    ]
    out.append(("exit_code", str(report.exit_code)))
    summary = report.summary()
    out.append(("warn", str(summary["checks"].get(Status.WARN.value, 0))))
    reqs = summary["requirements"]
    out += [(f"requirements_{s.value}", str(reqs.get(s.value, 0))) for s in Status]
    return out


def _check_case(suite: ET.Element, report: RunReport, check: CheckResult) -> Status:
    classname, _, leaf = check.check_id.rpartition("/")
    case = _sub(
        suite,
        "testcase",
        classname="arck." + (classname.replace("/", ".") or "checks"),
        name=check.name or leaf,
        time=f"{check.duration_s:.3f}",
    )
    props = _sub(case, "properties")
    _sub(props, "property", name="check_id", value=check.check_id)
    for req in check.requirements:
        _sub(props, "property", name="requirement", value=req)
    _sub(props, "property", name="arck_status", value=check.status.value)
    if check.replay:
        _sub(props, "property", name="replay", value=check.replay)
    outcome = JUNIT_OUTCOMES[check.status]
    message = outcome.prefix + check.message
    if (more := len(check.failures) - 1) > 0:
        message += f" (and {more} more distinct failure{'s' if more > 1 else ''})"
    if outcome.tag == "system-out":
        _sub(case, "system-out", _details(report, check, message))
    elif outcome.tag == "skipped":
        _sub(case, "skipped", message=message)
    elif outcome.tag is not None:
        _sub(
            case,
            outcome.tag,
            _details(report, check, check.message),
            message=message,
            type=outcome.type or "",
        )
    return check.status


def _gap_case(suite: ET.Element, row: RequirementRow) -> Status:
    case = _sub(suite, "testcase", classname="arck.requirements", name=row.id, time="0.000")
    props = _sub(case, "properties")
    _sub(props, "property", name="requirement", value=row.id)
    _sub(props, "property", name="arck_status", value=row.status.value)
    _sub(case, "skipped", message=JUNIT_OUTCOMES[row.status].prefix + row.reason)
    return row.status


def _details(report: RunReport, check: CheckResult, headline: str) -> str:
    """What H-02 asks of a failure report: requirement, minimal input, seed, replay command;
    for each distinct failure when the check failed in several ways; and each error that
    kept it from judging, with its request."""
    lines = [headline, "", "Requirements: " + ", ".join(check.requirements)]
    lines.append("Seed: " + ("none" if report.seed is None else str(report.seed)))
    if len(check.failures) > 1:
        for number, failure in enumerate(check.failures, 1):
            lines += ["", f"Failure {number} of {len(check.failures)} "
                      f"[{', '.join(failure.requirements)}]: {failure.message}"]
            lines += _evidence(failure.example, failure.case_file, failure.replay)
    else:
        lines += _evidence(check.example, check.case_file, check.replay)
    for number, problem in enumerate(check.errors, 1):
        lines += ["", f"Error {number} of {len(check.errors)}, "
                  f"{PROBLEM_ORIGINS.get(problem.origin, problem.origin)}:",
                  f"{problem.type}: {problem.message}"]
        if problem.where:
            lines.append("Raised at: " + problem.where)
        if problem.request:
            lines += ["Request:", problem.request]
    return "\n".join(lines)


def _evidence(example: Any, case_file: str | None, replay: str | None) -> list[str]:
    lines = []
    if example is not None:
        lines += ["Minimal example:", pretty_json(example)]
    if case_file:
        lines.append("Case file: " + case_file)
    if replay:
        lines.append("Replay: " + replay)
    return lines


def _wall_time(report: RunReport) -> float:
    """Seconds from start to finish; the sum of check durations if the stamps don't parse."""
    try:
        delta = datetime.fromisoformat(report.finished_at) - datetime.fromisoformat(
            report.started_at
        )
        return max(delta.total_seconds(), 0.0)
    except (ValueError, TypeError):
        return sum(c.duration_s for c in report.checks)
