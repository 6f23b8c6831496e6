"""One self-contained HTML page for people: the run at a glance, failures, then the matrix.

The page opens with requirements per area as stacked bars, then every failure with what an
implementer acts on (message, kind of input, minimal example, replay command), and only then
the matrix. Everything is inline (CSS, a few lines of JS), so the file can be mailed, attached
to a CI run or opened offline. Jinja2 autoescapes every value: messages and examples are test
inputs and may hold markup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import markupsafe

from arck.reports._text import pretty_json, visible, write_bytes
from arck.reports.model import PROBLEM_ORIGINS, CheckResult, Failure, RunReport, Status

# Most urgent first: the order of the summary, of the failures section and of status sorting.
_ORDER = (
    Status.FAIL,
    Status.NOT_TESTABLE,
    Status.WARN,
    Status.KNOWN_FAILURE,
    Status.NOT_COVERED,
    Status.NOT_APPLICABLE,
    Status.PASS,
)
_DETAILED = frozenset({Status.FAIL, Status.NOT_TESTABLE, Status.WARN, Status.KNOWN_FAILURE})
# The segments of an area's bar, good news first.
BAR_ORDER = (
    Status.PASS,
    Status.FAIL,
    Status.WARN,
    Status.KNOWN_FAILURE,
    Status.NOT_TESTABLE,
    Status.NOT_APPLICABLE,
    Status.NOT_COVERED,
)
VERDICTS = {0: "conformant", 1: "not conformant", 2: "not judged"}


def check_anchor(check_id: str) -> str:
    """The HTML id of a check's entry, so a terminal can print `report.html#check-…`."""
    return "check-" + (re.sub(r"[^a-z0-9]+", "-", check_id.lower()).strip("-") or "unnamed")


def render_html(report: RunReport) -> str:
    """The HTML page for `report`."""
    detailed = sorted(
        (c for c in report.checks if c.status in _DETAILED), key=lambda c: _ORDER.index(c.status)
    )
    page = _template().render(
        report=report,
        summary=report.summary(),
        order=[s.value for s in _ORDER],
        rank={s.value: i for i, s in enumerate(_ORDER)},
        target=[(k, _fmt(v)) for k, v in report.target.items()],
        settings=[(k, _fmt(v)) for k, v in report.settings.items()],
        req_ids={r.id for r in report.requirements},
        anchors={c.check_id: check_anchor(c.check_id) for c in detailed},
        failures=[_entry(c) for c in detailed],
        checks=sorted(report.checks, key=lambda c: _ORDER.index(c.status)),
        bar_order=[s.value for s in BAR_ORDER],
        areas=area_counts(report),
        verdict=VERDICTS.get(report.exit_code, "not judged"),
        origins=PROBLEM_ORIGINS,
    )
    return visible(page)  # lone surrogates, NUL and ESC from inputs shown as \uXXXX


def write_html(report: RunReport, path: Path) -> None:
    """Write `render_html(report)` to `path`."""
    write_bytes(path, render_html(report).encode("utf-8"))


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("arck.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["breakable"] = _breakable
    return env.get_template("report.html.j2")


def _breakable(text: str) -> markupsafe.Markup:
    """Text escaped, with line-break chances after `/` and `_` (check ids in narrow cells)."""
    escaped = str(markupsafe.escape(text))
    return markupsafe.Markup(re.sub(r"([/_])", r"\1<wbr>", escaped))


def area_counts(report: RunReport) -> list[tuple[str, dict[str, int]]]:
    """Requirements per area and status, areas in the order the report lists them."""
    areas: dict[str, dict[str, int]] = {}
    for row in report.requirements:
        counts = areas.setdefault(row.area, dict.fromkeys((s.value for s in BAR_ORDER), 0))
        counts[row.status.value] = counts.get(row.status.value, 0) + 1
    return list(areas.items())


def _entry(check: CheckResult) -> dict[str, Any]:
    anchor = check_anchor(check.check_id)
    failures = check.failures or [
        Failure(check.failed, check.message, check.example, "", check.case_file, check.replay,
                check.exchanges)
    ]
    return {
        "check": check,
        "anchor": anchor,
        "failures": [_failure(f, f"{anchor}-{i}") for i, f in enumerate(failures, 1)],
        "count": len(failures),
        "errors": check.errors,
    }


def _failure(failure: Failure, anchor: str) -> dict[str, Any]:
    # The input kind gets its own line on the page; the message repeats it for other readers.
    suffix = f" Input: {failure.input_kind}."
    message = failure.message
    if failure.input_kind and message.endswith(suffix):
        message = message[: -len(suffix)]
    return {
        "failure": failure,
        "anchor": anchor,
        "message": message,
        "example": None if failure.example is None else pretty_json(failure.example),
    }


def _fmt(value: Any) -> str:
    """A target or settings value on one line."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"  # as in report.json, not Python's True
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_fmt(v)}" for k, v in value.items()) or "—"
    if isinstance(value, set | frozenset):
        value = sorted(value, key=repr)
    if isinstance(value, list | tuple):
        return ", ".join(_fmt(v) for v in value) or "—"
    return str(value)
