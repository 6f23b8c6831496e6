"""Baselines: known failures pass a run, new ones fail it, stale entries fail it (issue 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import arck

from arck.conformance import baseline
from arck.conformance.errors import UsageError

MUTANT = "mutant:chars-not-bytes"
SELECTION = "BUD-01,DRY-07"


def _entry(requirement: str, check: str | None) -> baseline.Entry:
    case = baseline.Case(check="test_x", case=[1024, "x"])
    return baseline.Entry(requirement=requirement, check=check, cases=[case])


def test_known_needs_every_failed_requirement_covered() -> None:
    made = baseline.Baseline(entries=[_entry("BUD-01", None), _entry("BUD-04", "budget/test_b")])
    assert made.known("budget/test_a", ["BUD-01"])
    assert made.known("budget/test_b", ["BUD-01", "BUD-04"])
    assert not made.known("budget/test_a", ["BUD-01", "BUD-04"])  # BUD-04 only for test_b
    assert not made.known("budget/test_a", [])  # a failure naming nothing is never known


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("{", "not readable JSON"),
        ('{"arck_baseline": 2, "entries": []}', "arck_baseline"),
        ('{"entries": [{"requirement": "bud1", "cases": []}]}', "entries.0.requirement"),
        ('{"entries": [{"requirement": "BUD-01", "cases": []}]}', "entries.0.cases"),
        ('{"entries": [], "extra": 1}', "extra"),
    ],
)
def test_bad_baseline_files_name_the_field(tmp_path: Path, content: str, named: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=named.replace(".", r"\.")):
        baseline.load(path)


def test_a_baseline_only_shrinks(tmp_path: Path) -> None:
    first = tmp_path / "first"
    done = arck("run", "--target", MUTANT, "--requirements", SELECTION, "--seed", "7",
                "--max-examples", "10", "--report-dir", str(first))
    assert done.returncode == 1, done.stdout + done.stderr
    file = tmp_path / "baseline.json"
    made = arck("baseline", str(first), "--out", str(file), "--by", "id")
    assert made.returncode == 0, made.stdout + made.stderr
    entries = json.loads(file.read_text("utf-8"))["entries"]
    assert [e["requirement"] for e in entries] == ["BUD-01"]
    assert {c["check"] for c in entries[0]["cases"]} >= {"test_size_is_canonical_utf8"}

    # Another seed explores other inputs; the known failure still passes the gate.
    again = arck("run", "--target", MUTANT, "--requirements", SELECTION, "--seed", "8",
                 "--max-examples", "10", "--report-dir", str(tmp_path / "again"),
                 "--baseline", str(file))
    assert again.returncode == 0, again.stdout + again.stderr
    report = json.loads((tmp_path / "again" / "report.json").read_text("utf-8"))
    rows = {r["id"]: r["status"] for r in report["requirements"]}
    assert rows["BUD-01"] == "known_failure"
    assert [e["state"] for e in report["baseline"]["entries"]] == ["holds"]

    # Fixed: the stored counterexample passes, so the entry is stale and the run fails.
    fixed = arck("run", "--target", "reference", "--requirements", SELECTION,
                 "--max-examples", "5", "--report-dir", str(tmp_path / "fixed"),
                 "--baseline", str(file))
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr
    assert "stale" in fixed.stdout
    report = json.loads((tmp_path / "fixed" / "report.json").read_text("utf-8"))
    assert [e["state"] for e in report["baseline"]["entries"]] == ["stale"]


def test_a_new_failure_fails_despite_a_baseline(tmp_path: Path) -> None:
    file = tmp_path / "baseline.json"
    case = {"check": "test_first_completed_receipt_previewed", "case": None}
    file.write_text(json.dumps({"entries": [
        {"requirement": "DRY-07", "check": None, "cases": [case]}]}))
    done = arck("run", "--target", MUTANT, "--requirements", SELECTION, "--seed", "7",
                "--max-examples", "10", "--report-dir", str(tmp_path / "out"),
                "--baseline", str(file))
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    rows = {r["id"]: r["status"] for r in report["requirements"]}
    assert rows["BUD-01"] == "fail"
    # DRY-07 passes on this mutant: its entry has nothing left to hold.
    assert [e["state"] for e in report["baseline"]["entries"]] == ["stale"]


def test_a_broken_baseline_is_a_usage_error(tmp_path: Path) -> None:
    file = tmp_path / "baseline.json"
    file.write_text('{"entries": [{"requirement": "BUD-01"}]}')
    done = arck("run", "--target", "reference", "--requirements", "DRY-07",
                "--baseline", str(file), "--report-dir", str(tmp_path / "out"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "entries.0.cases" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
