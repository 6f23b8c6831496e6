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

    # Pruning with that report removes the stale entry; the pruned baseline passes the gate.
    pruned = arck("baseline", str(tmp_path / "fixed"), "--prune", str(file))
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    assert "stale, removed" in pruned.stdout
    assert json.loads(file.read_text("utf-8"))["entries"] == []
    clean = arck("run", "--target", "reference", "--requirements", SELECTION,
                 "--max-examples", "5", "--report-dir", str(tmp_path / "clean"),
                 "--baseline", str(file))
    assert clean.returncode == 0, clean.stdout + clean.stderr


def _judged_report(tmp_path: Path, judged: list[dict[str, object]] | None) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    report: dict[str, object] = {"checks": []}
    if judged is not None:
        report["baseline"] = {"file": "b.json", "entries": judged}
    (tmp_path / "report.json").write_text(json.dumps(report))
    return tmp_path


def test_prune_drops_only_what_was_proven_stale(tmp_path: Path) -> None:
    current = baseline.Baseline(entries=[
        _entry("BUD-01", None), _entry("BUD-04", "budget/test_b"), _entry("BUD-07", None),
        _entry("DRY-07", None),
    ])
    judged = [
        {"requirement": "BUD-01", "check": None, "state": "stale"},
        {"requirement": "BUD-04", "check": "budget/test_b", "state": "holds"},
        {"requirement": "BUD-07", "check": None, "state": "not_judged"},
        {"requirement": "BUD-04", "check": None, "state": "stale"},  # another entry's key
    ]
    pruned, notes = baseline.prune(current, _judged_report(tmp_path, judged))
    assert [(e.requirement, e.check) for e in pruned.entries] == [
        ("BUD-04", "budget/test_b"), ("BUD-07", None), ("DRY-07", None)
    ]
    assert any("BUD-01" in n and "removed" in n for n in notes)
    assert any("DRY-07" in n and "not in this report" in n for n in notes)


def test_prune_needs_a_report_made_with_a_baseline(tmp_path: Path) -> None:
    current = baseline.Baseline(entries=[_entry("BUD-01", None)])
    with pytest.raises(UsageError, match="without --baseline"):
        baseline.prune(current, _judged_report(tmp_path / "plain", None))
    with pytest.raises(UsageError, match=r"no readable report\.json"):
        baseline.prune(current, tmp_path / "nowhere")


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


def _case_file(report_dir: Path, name: str, case: object) -> str:
    (report_dir / "cases").mkdir(parents=True, exist_ok=True)
    (report_dir / "cases" / name).write_text(json.dumps({"check": "test_fits", "case": case}))
    return f"cases/{name}"


def test_a_baseline_keeps_the_case_of_every_failure(tmp_path: Path) -> None:
    failures = [
        {"requirements": ["BUD-07"], "case_file": _case_file(tmp_path, "fits.json", [1024, "a"])},
        {"requirements": ["BUD-03"], "case_file": _case_file(tmp_path, "fits-2.json", [2048, "b"])},
    ]
    legacy = {"check_id": "budget/test_old", "status": "fail", "requirements": ["BUD-01"],
              "failed": ["BUD-01"], "case_file": _case_file(tmp_path, "old.json", [1024, "c"])}
    checks = [{"check_id": "budget/test_fits", "status": "fail", "requirements": ["BUD-03",
               "BUD-07"], "failed": ["BUD-03", "BUD-07"], "case_file": failures[0]["case_file"],
               "failures": failures}, legacy]
    (tmp_path / "report.json").write_text(json.dumps({"checks": checks}))
    made, notes = baseline.from_report(tmp_path, by="check")
    assert notes == []
    cases = {e.requirement: [c.case for c in e.cases] for e in made.entries}
    assert cases == {"BUD-01": [[1024, "c"]], "BUD-03": [[2048, "b"]], "BUD-07": [[1024, "a"]]}
