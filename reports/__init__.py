"""The run report and its writers: JUnit XML for CI, JSON for machines, HTML for people.

Imports nothing else from arck: `conformance` fills in a `RunReport` and hands it over.
"""

from __future__ import annotations

from arck.reports.html import (
    BAR_ORDER,
    VERDICTS,
    area_counts,
    check_anchor,
    render_html,
    write_html,
)
from arck.reports.json_report import SCHEMA_VERSION, render_json, report_schema, write_json
from arck.reports.junit import JUNIT_OUTCOMES, Outcome, render_junit, write_junit
from arck.reports.model import (
    PROBLEM_ORIGINS,
    CheckResult,
    Failure,
    Problem,
    RequirementRow,
    RunReport,
    Status,
)
from arck.reports.writers import REPORT_FILES, Writer, write_all

__all__ = [
    "BAR_ORDER",
    "JUNIT_OUTCOMES",
    "PROBLEM_ORIGINS",
    "REPORT_FILES",
    "SCHEMA_VERSION",
    "VERDICTS",
    "CheckResult",
    "Failure",
    "Outcome",
    "Problem",
    "RequirementRow",
    "RunReport",
    "Status",
    "Writer",
    "area_counts",
    "check_anchor",
    "render_html",
    "render_json",
    "render_junit",
    "report_schema",
    "write_all",
    "write_html",
    "write_json",
    "write_junit",
]
