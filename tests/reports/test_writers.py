"""The report writers: JUnit mapping, JSON schema, HTML escaping, snapshots (H-02, H-05)."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

import arck.reports
from arck.conformance.display import Display
from arck.conformance.events import CheckFinished
from arck.reports import (
    BAR_ORDER,
    JUNIT_OUTCOMES,
    CheckResult,
    Failure,
    Problem,
    RequirementRow,
    RunReport,
    Status,
    area_counts,
    check_anchor,
    render_html,
    render_json,
    render_junit,
    report_schema,
    write_all,
)
from arck.reports._text import visible

SNAPSHOTS = Path(__file__).parent / "snapshots"
REPORTS_DIR = Path(arck.reports.__file__).parent
NASTY = "😀 </pre><script>alert(1)</script> \ud800 \x00 \x1b[31m & ]]> \"'"
CURL = ("curl -sS -X POST http://127.0.0.1:8000/v1/tools/dry-run --data-binary '{\"budget\": 512}'"
        "\n# → 200 {}")
HYPOTHESIS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def make_report() -> RunReport:
    """Every status, fixed timestamps, and one failure with a hostile message and example."""
    checks = [
        CheckResult("budget/test_fits", "test_fits", ["BUD-01"], Status.PASS, duration_s=0.25),
        CheckResult(
            "budget/test_projection_cut",
            "test_projection_cut",
            ["BUD-07", "BUD-08"],
            Status.FAIL,
            message=f"expected 512 bytes, saw 600: {NASTY}",
            example={"result": NASTY, "emoji": "👨‍👩‍👧", "sizes": [1, 2.5, None, True]},
            case_file="cases/budget-test_projection_cut.json",
            replay="arck replay cases/budget-test_projection_cut.json --seed 42",
            duration_s=1.5,
            failed=["BUD-07", "BUD-08"],
            exchanges=[CURL],
            failures=[
                Failure(
                    ["BUD-07"],
                    f"expected 512 bytes, saw 600: {NASTY}",
                    {"result": NASTY, "emoji": "👨‍👩‍👧", "sizes": [1, 2.5, None, True]},
                    "emoji (1, 2 ZWJs); a 600-byte result under a 512-byte budget",
                    "cases/budget-test_projection_cut.json",
                    "arck replay cases/budget-test_projection_cut.json --seed 42",
                    [CURL],
                ),
                Failure(
                    ["BUD-08"],
                    "expected no U+FFFD; saw 1. Input: escape-heavy (40 escaped characters); "
                    "a 1,100-byte result under a 1,024-byte budget.",
                    ["\\n" * 20 + "x" * 400],
                    "escape-heavy (40 escaped characters); a 1,100-byte result under a "
                    "1,024-byte budget",
                    "cases/budget-test_projection_cut-2.json",
                    "arck replay cases/budget-test_projection_cut-2.json --seed 42",
                    [CURL.replace("512", "1024")],
                ),
            ],
        ),
        CheckResult(
            "context/test_calibration",
            "test_calibration",
            ["CTX-03"],
            Status.WARN,
            message="estimate off by 12%",
            example={"tokens": 100},
            replay="arck replay cases/context-test_calibration.json",
        ),
        CheckResult(
            "dry_run/test_preview",
            "test_preview",
            ["DRY-01"],
            Status.NOT_APPLICABLE,
            message="target does not declare dry_run",
        ),
        CheckResult(
            "executor/test_receipt",
            "test_receipt",
            ["EXE-02"],
            Status.NOT_TESTABLE,
            message="check could not judge: 2 errors: (1) NotTestable: setup could not "
                    "register an executor: POST … → 500; (2) KeyError: 'grant', at "
                    "conformance/checks/test_executors.py:170",
            replay="arck replay cases/executor-test_receipt.json",
            errors=[
                Problem("NotTestable", "setup could not register an executor: POST … → 500",
                        "target", request=CURL.replace("200 {}", "500 {}")),
                Problem("KeyError", f"'grant' {NASTY}", "arck", request=CURL,
                        where="conformance/checks/test_executors.py:170"),
            ],
        ),
        CheckResult("auth/test_unused", "test_unused", ["AUTH-09"], Status.NOT_COVERED),
    ]
    rows = [
        RequirementRow("BUD-01", "core", "budget", "fits", Status.PASS, ["budget/test_fits"]),
        RequirementRow(
            "BUD-07",
            "core",
            "budget",
            "<b>cut</b> on clusters",
            Status.FAIL,
            ["budget/test_projection_cut"],
        ),
        RequirementRow(
            "CTX-03",
            "recommended",
            "context",
            "calibrate",
            Status.WARN,
            ["context/test_calibration"],
        ),
        RequirementRow(
            "DRY-01",
            "profile",
            "dry-run",
            "preview",
            Status.NOT_APPLICABLE,
            ["dry_run/test_preview"],
            reason="capability dry_run not declared",
        ),
        RequirementRow(
            "EXE-02",
            "core",
            "executor",
            "receipts",
            Status.NOT_TESTABLE,
            ["executor/test_receipt"],
            reason="setup failed",
        ),
        RequirementRow(
            "AUTH-01", "core", "auth", "identity", Status.NOT_COVERED, reason="no check yet"
        ),
        RequirementRow(
            "AUTH-02",
            "core",
            "auth",
            "boundaries",
            Status.NOT_COVERED,
            reason="<script>alert(2)</script>",
        ),
    ]
    return RunReport(
        arck_version="0.1.0",
        protocol_revision="2026-11",
        target={
            "name": "reference",
            "url": "http://127.0.0.1:8000",
            "profile": "core",
            "capabilities": ["dry_run", "clock"],
        },
        seed=42,
        started_at="2026-01-02T03:04:05+00:00",
        finished_at="2026-01-02T03:04:17.250000+00:00",
        exit_code=1,
        requirements=rows,
        checks=checks,
        created=["run:r-1"],
        faults={"lost_response": 2, "slow": 0},
        settings={"profile": "core", "max_examples": 50},
    )


# ---- JUnit -------------------------------------------------------------------------------


def _props(el: ET.Element) -> list[tuple[str, str]]:
    return [(p.get("name", ""), p.get("value", "")) for p in el.iterfind("properties/property")]


def test_every_status_has_one_junit_outcome() -> None:
    assert set(JUNIT_OUTCOMES) == set(Status)


def test_junit_counts_and_mapping() -> None:
    root = ET.fromstring(render_junit(make_report()))
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.get("name") == "arck"
    # 5 checks (not_covered dropped) + 2 not-covered requirements
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "7",
        "failures": "1",
        "errors": "1",
        "skipped": "3",
    }
    assert suite.get("time") == "12.250"
    assert suite.get("timestamp") == "2026-01-02T03:04:05+00:00"
    props = dict(_props(suite))
    assert props["warn"] == "1"
    assert props["seed"] == "42"
    assert props["target_name"] == "reference"
    assert props["target_profile"] == "core"
    assert {"arck_version", "protocol_revision"} <= props.keys()

    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}
    assert ("arck.auth", "test_unused") not in cases
    passed = cases["arck.budget", "test_fits"]
    assert [child.tag for child in passed] == ["properties"]

    failed = cases["arck.budget", "test_projection_cut"]
    reqs = [v for k, v in _props(failed) if k == "requirement"]
    assert reqs == ["BUD-07", "BUD-08"]
    assert ("arck_status", "fail") in _props(failed)
    failure = failed.find("failure")
    assert failure is not None
    assert failure.get("type") == "arck.fail"
    assert failure.get("message") == visible(
        f"expected 512 bytes, saw 600: {NASTY} (and 1 more distinct failure)"
    )
    text = failure.text or ""
    assert "arck replay cases/budget-test_projection_cut.json --seed 42" in text
    assert '"emoji": "👨‍👩‍👧"' in text
    assert "Seed: 42" in text
    assert "BUD-07, BUD-08" in text
    # every distinct failure: its IDs, message, example and replay command
    assert "Failure 1 of 2 [BUD-07]: expected 512 bytes" in text
    assert "Failure 2 of 2 [BUD-08]: expected no U+FFFD; saw 1. Input: escape-heavy" in text
    assert "arck replay cases/budget-test_projection_cut-2.json --seed 42" in text
    assert "Case file: cases/budget-test_projection_cut-2.json" in text

    warned = cases["arck.context", "test_calibration"]
    assert warned.find("failure") is None
    assert ("arck_status", "warn") in _props(warned)
    assert (warned.findtext("system-out") or "").startswith("WARNING (recommended): estimate")

    na = cases["arck.dry_run", "test_preview"].find("skipped")
    assert na is not None
    assert na.get("message") == "not applicable: target does not declare dry_run"

    nt = cases["arck.executor", "test_receipt"].find("error")
    assert nt is not None
    assert nt.get("type") == "arck.not_testable"
    assert (nt.get("message") or "").startswith("not testable: check could not judge: 2 errors")
    # each error behind it: whose it is, its type and message, where arck raised it, and
    # the request it is about
    details = nt.text or ""
    assert "Error 1 of 2, from the target" in details
    assert "NotTestable: setup could not register an executor" in details
    assert "Error 2 of 2, in arck" in details
    assert "Raised at: conformance/checks/test_executors.py:170" in details
    assert details.count("Request:\ncurl -sS -X POST http://127.0.0.1:8000/v1/tools/dry-run") == 2
    assert "# → 500 {}" in details

    for req_id, reason in (("AUTH-01", "no check yet"), ("AUTH-02", "<script>alert(2)</script>")):
        gap = cases["arck.requirements", req_id]
        assert ("requirement", req_id) in _props(gap)
        skipped = gap.find("skipped")
        assert skipped is not None
        assert skipped.get("message") == f"not covered: {reason}"


def _nasty_text(max_size: int = 30) -> st.SearchStrategy[str]:
    """Any text, surrogates and control characters included (st.text() filters surrogates)."""
    char = st.one_of(
        st.characters(),
        st.characters(categories=["Cs", "Cc", "Cn"]),
        st.sampled_from(["\ud800", "\udfff", "\x00", "\x1b", "\ufffe", "\r", "]]>", "<", "&"]),
    )
    return st.lists(char, max_size=max_size).map("".join)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _nasty_text(10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_nasty_text(5), inner, max_size=3),
    max_leaves=8,
)


def _one_check_report(status: Status, message: str, name: str, example: Any) -> RunReport:
    check = CheckResult(f"area/{name}", name, [name], status, message, example, name, name)
    row = RequirementRow(name, "core", name, message, Status.NOT_COVERED, reason=message)
    return RunReport("0", "r", {"name": name}, None, message, message, 1, [row], [check])


@HYPOTHESIS
@given(st.sampled_from(list(Status)), _nasty_text(), _nasty_text(8), _JSON)
def test_junit_is_well_formed_for_any_text(
    status: Status, message: str, name: str, example: Any
) -> None:
    root = ET.fromstring(render_junit(_one_check_report(status, message, name, example)))
    outcome = JUNIT_OUTCOMES[status]
    gap = root.find("testsuite/testcase[@classname='arck.requirements']/skipped")
    assert gap is not None
    assert gap.get("message") == visible("not covered: " + message)
    if status != Status.NOT_COVERED and outcome.tag in ("failure", "error", "skipped"):
        el = root.find(f"testsuite/testcase/{outcome.tag}")
        assert el is not None
        assert el.get("message") == visible(outcome.prefix + message)


# ---- JSON --------------------------------------------------------------------------------


def test_json_validates_and_round_trips() -> None:
    report = make_report()
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    data = json.loads(render_json(report))
    jsonschema.Draft202012Validator(schema).validate(data)
    assert data["schema_version"] == 1
    assert [c["status"] for c in data["checks"]] == [c.status.value for c in report.checks]
    assert [r["status"] for r in data["requirements"]] == [
        r.status.value for r in report.requirements
    ]
    assert data["checks"][1]["message"] == report.checks[1].message  # surrogate and NUL intact
    assert data["checks"][1]["example"] == report.checks[1].example
    assert data["summary"] == report.summary()
    failures = data["checks"][1]["failures"]
    assert [f["requirements"] for f in failures] == [["BUD-07"], ["BUD-08"]]
    assert failures[1]["case_file"] == "cases/budget-test_projection_cut-2.json"
    assert failures[1]["input_kind"].startswith("escape-heavy")
    assert failures[0]["example"] == data["checks"][1]["example"]
    errors = data["checks"][4]["errors"]
    assert [(e["type"], e["origin"]) for e in errors] == [("NotTestable", "target"),
                                                          ("KeyError", "arck")]
    assert errors[1]["where"] == "conformance/checks/test_executors.py:170"
    assert errors[0]["request"].endswith("# → 500 {}")
    del data["checks"][4]["errors"]  # reports written before errors were listed still load
    jsonschema.Draft202012Validator(schema).validate(data)
    data["checks"][4]["errors"] = [{**errors[0], "origin": "someone"}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)


def test_schema_describes_failures() -> None:
    data = json.loads(render_json(make_report()))
    del data["checks"][1]["failures"][1]["replay"]
    with pytest.raises(jsonschema.ValidationError, match="replay"):
        jsonschema.validate(data, report_schema())


def test_schema_rejects_unknown_status() -> None:
    data = json.loads(render_json(make_report()))
    data["checks"][0]["status"] = "passed"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, report_schema())


def test_json_writes_non_finite_floats_as_strings() -> None:
    report = _one_check_report(Status.FAIL, "m", "n", {"x": [float("nan"), float("-inf")]})
    assert json.loads(render_json(report))["checks"][0]["example"] == {"x": ["NaN", "-Infinity"]}


@HYPOTHESIS
@given(st.sampled_from(list(Status)), _nasty_text(), _nasty_text(8), _JSON)
def test_json_round_trips_any_text(status: Status, message: str, name: str, example: Any) -> None:
    text = render_json(_one_check_report(status, message, name, example))
    text.encode("utf-8")  # no lone surrogate left in the output
    check = json.loads(text)["checks"][0]
    # Python's own JSON round trip joins adjacent surrogate halves; ours must do no worse.
    assert check["message"] == json.loads(json.dumps(message))
    assert check["example"] == json.loads(json.dumps(example, sort_keys=True))


# ---- HTML --------------------------------------------------------------------------------


class _Links(HTMLParser):
    """Collects ids, link targets and script tags."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.urls: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.scripts += tag == "script"
        for key, value in attrs:
            if key == "id" and value:
                self.ids.add(value)
            if key in ("src", "href", "action", "srcset", "data", "poster") and value is not None:
                self.urls.append(value)


def test_html_contents_and_escaping() -> None:
    report = make_report()
    html = render_html(report)
    links = _Links()
    links.feed(html)
    for row in report.requirements:
        assert f"req-{row.id}" in links.ids
    for check in report.checks:
        anchor = check_anchor(check.check_id)
        detailed = check.status in (Status.FAIL, Status.NOT_TESTABLE, Status.WARN)
        assert (anchor in links.ids) == detailed
    assert "check-budget-test-projection-cut" in links.ids
    assert "arck replay cases/budget-test_projection_cut.json --seed 42" in html
    assert "<script>alert" not in html
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;cut&lt;/b&gt;" in html
    for shown in ("\\ud800", "\\u0000", "\\u001b", "😀"):
        assert shown in html
    assert links.scripts == 1  # our own inline script, nothing else
    # every link stays inside the page and points at an element that exists
    assert all(u.startswith("#") and u[1:] in links.ids for u in links.urls)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert not re.search(r"url\(|@import|<link\b", html, re.I)
    assert "http://127.0.0.1:8000" in html  # shown as text only


def test_html_opens_with_areas_then_failures_then_matrix() -> None:
    report = make_report()
    html = render_html(report)
    assert area_counts(report) == [
        ("budget", _counts(pass_=1, fail=1)),
        ("context", _counts(warn=1)),
        ("dry-run", _counts(not_applicable=1)),
        ("executor", _counts(not_testable=1)),
        ("auth", _counts(not_covered=2)),
    ]
    bars = re.findall(r'<span class="seg s-(\w+)" data-status="\1"[^>]*>(\d+)</span>', html)
    assert bars == [("pass", "1"), ("fail", "1"), ("warn", "1"), ("not_applicable", "1"),
                    ("not_testable", "1"), ("not_covered", "2")]
    at = {what: html.index(what) for what in ('id="areas"', 'id="failures"', 'id="matrix"')}
    assert at['id="areas"'] < at['id="failures"'] < at['id="matrix"']
    # each distinct failure with its input kind, replay command and example
    for failure in report.checks[1].failures:
        assert failure.replay is not None
        assert f">{failure.replay}</code>" in html
        assert failure.input_kind in html
    assert "2 distinct failures" in html
    assert "Failure 2 of 2 · BUD-08" in html
    # the input kind has its own line, not repeated at the end of the message
    assert "saw 1.</pre>" in html
    # a check that could not judge: each error, whose it is, where, and its request
    section = html[html.index('id="check-executor-test-receipt"'):html.index('id="matrix"')]
    assert "What kept it from judging (2 errors)" in section
    assert "<strong>NotTestable</strong>" in section
    assert "<strong>KeyError</strong>" in section
    assert "from the target" in section
    assert "in arck: an error raised in a check" in section
    assert "<code>conformance/checks/test_executors.py:170</code>" in section
    assert section.count("curl -sS -X POST http://127.0.0.1:8000/v1/tools/dry-run") == 2
    assert "&lt;script&gt;alert(1)" in section  # an error's message escaped like any other


def _counts(**given: int) -> dict[str, int]:
    counts = dict.fromkeys((s.value for s in BAR_ORDER), 0)
    counts.update({k.rstrip("_"): v for k, v in given.items()})
    return counts


def test_terminal_lines_name_each_error_whose_it_is_and_its_request() -> None:
    out = io.StringIO()
    display = Display(Console(file=out, width=400, highlight=False), interactive=False)
    blocked = next(c for c in make_report().checks if c.status is Status.NOT_TESTABLE)
    display.pytest_arck_event(CheckFinished(blocked))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("NOT_TESTABLE executor/test_receipt [EXE-02]: check could not")
    assert lines[1] == "  replay: arck replay cases/executor-test_receipt.json"
    assert lines[2].startswith("  error 1 of 2, from the target: NotTestable: setup could not")
    assert lines[3].startswith("    curl -sS -X POST http://127.0.0.1:8000/v1/tools/dry-run")
    assert lines[4] == "    # → 500 {}"
    assert lines[5].startswith("  error 2 of 2, in arck (please report it): KeyError: 'grant'")
    assert lines[6] == "    raised at conformance/checks/test_executors.py:170"
    assert lines[7].startswith("    curl -sS")


def test_html_without_failures() -> None:
    report = make_report()
    report.checks = [c for c in report.checks if c.status == Status.PASS]
    assert "No check failed" in render_html(report)


# ---- write_all, snapshots, package surface -----------------------------------------------


def test_write_all(tmp_path: Path) -> None:
    paths = write_all(make_report(), tmp_path / "out" / "nested")
    assert {k: p.name for k, p in paths.items()} == {
        "junit": "junit.xml",
        "json": "report.json",
        "html": "report.html",
    }
    assert all(p.is_file() for p in paths.values())
    ET.parse(paths["junit"])
    json.loads(paths["json"].read_text("utf-8"))
    assert paths["html"].read_text("utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    ("name", "render"),
    [("junit.xml", render_junit), ("report.json", lambda r: render_json(r).encode("utf-8"))],
)
def test_snapshot(name: str, render: Any) -> None:
    data: bytes = render(make_report())
    path = SNAPSHOTS / name
    if os.environ.get("ARCK_UPDATE_SNAPSHOTS") == "1":
        path.write_bytes(data)
    assert path.is_file(), f"missing {path}: rerun with ARCK_UPDATE_SNAPSHOTS=1 and review it"
    assert data == path.read_bytes(), f"{name} changed: rerun with ARCK_UPDATE_SNAPSHOTS=1"


def _public_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


def test_all_is_complete() -> None:
    exported = set(arck.reports.__all__)
    assert all(hasattr(arck.reports, n) for n in exported)
    for path in REPORTS_DIR.glob("[!_]*.py"):
        assert _public_names(path) <= exported, path.name


def test_reports_import_only_stdlib_third_party_and_itself() -> None:
    own = {"reference", "simulator", "conformance", "reports", "arck"}
    for path in REPORTS_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = [node.module]
            else:
                continue
            for mod in mods:
                top = mod.split(".")[0]
                ok = mod == "arck.reports" or mod.startswith("arck.reports.")
                assert ok or (top not in own), f"{path.name} imports {mod}"
