"""`arck run --workers N`: the serial run's report, baselines judged once, no check lost."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from clirun import arck, plugin

from arck.conformance import parallel
from arck.conformance.context import CheckContext
from arck.reports.model import CheckResult, Status

MUTANT = "mutant:chars-not-bytes"  # fails checks in several modules, with shrunk examples
# A check stops at its first failure (no further search, about 10 s saved per failing check):
# serial and spread runs are compared on what they find; the search for more distinct
# failures is TWO_WAYS's to compare.
SELECTION = ["--requirements", "BUD-01,BUD-02,BUD-06,BUD-07,DRY,DEF-02", "--max-examples", "8",
             "--more-failures-seconds", "0"]
TWO_WAYS = ["--requirements", "BUD-03,BUD-07", "--max-examples", "40", "--seed", "1"]


def _run(
    report_dir: Path, *extra: str, target: str = MUTANT, selection: list[str] = SELECTION
) -> dict[str, Any]:
    seed = [] if "--seed" in selection else ["--seed", "11"]
    done = arck("run", "--target", target, *seed, *selection,
                "--report-dir", str(report_dir), *extra)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    report: dict[str, Any] = json.loads((report_dir / "report.json").read_text("utf-8"))
    assert report["exit_code"] == done.returncode
    return report


def _outcome(report: dict[str, Any]) -> tuple[Any, ...]:
    """What a run found, less what legitimately differs (timings, worker count, paths)."""
    checks = [
        (c["check_id"], c["status"], c["requirements"], c["failed"], c["examples"],
         c["message"], c["example"],
         [(f["requirements"], f["message"], f["example"], f["input_kind"], f["case_file"],
           len(f["exchanges"])) for f in c["failures"]])
        for c in report["checks"]
    ]
    matrix = [(r["id"], r["status"], r["checks"]) for r in report["requirements"]]
    return report["exit_code"], checks, matrix


def test_workers_report_what_a_serial_run_reports(tmp_path: Path) -> None:
    serial = _run(tmp_path / "serial")
    spread = _run(tmp_path / "spread", "--workers", "2")
    assert spread["settings"]["workers"] == 2
    assert serial["settings"]["workers"] == 1
    assert any(c["status"] == "fail" for c in serial["checks"]), "the mutant must fail something"
    assert _outcome(spread) == _outcome(serial)
    # every failure kept its case file, written by whichever worker ran it
    for check in spread["checks"]:
        if check["status"] == "fail":
            assert check["failures"]
            for failure in check["failures"]:
                assert (tmp_path / "spread" / failure["case_file"]).is_file()
    # what the workers created is listed, as a serial run lists its own
    assert len(spread["created"]) >= len(serial["created"]) > 0


def test_workers_report_every_distinct_failure_as_a_serial_run_does(tmp_path: Path) -> None:
    """token-budget fails budget/test_projection_fits_budget two ways (see test_cli)."""
    runs = [
        _run(tmp_path / name, *workers, target="mutant:token-budget", selection=TWO_WAYS)
        for name, workers in (("serial", ()), ("spread", ("--workers", "2")))
    ]
    assert _outcome(runs[1]) == _outcome(runs[0])
    checks = {c["check_id"]: c for c in runs[1]["checks"]}
    failures = checks["budget/test_projection_fits_budget"]["failures"]
    assert [f["requirements"] for f in failures] == [["BUD-07"], ["BUD-03"]]
    assert all((tmp_path / "spread" / f["case_file"]).is_file() for f in failures)


def test_workers_judge_a_baseline_like_a_serial_run(tmp_path: Path) -> None:
    # Unshrunk failures (the serial and spread comparison of shrunk ones is the test above's):
    # a baseline holds whatever counterexample a run found.
    found = _run(tmp_path / "found", "--workers", "2", "--no-shrink")
    baseline = tmp_path / "baseline.json"
    made = arck("baseline", str(tmp_path / "found"), "--out", str(baseline))
    assert made.returncode == 0, made.stdout + made.stderr
    known = _run(tmp_path / "known", "--workers", "2", "--no-shrink", "--baseline", str(baseline))
    assert known["exit_code"] == 0
    assert [c["check_id"] for c in known["checks"] if c["status"] == "known_failure"] == [
        c["check_id"] for c in found["checks"] if c["status"] == "fail"
    ]
    assert "holds" in {e["state"] for e in known["baseline"]["entries"]}
    serial = _run(tmp_path / "known-serial", "--no-shrink", "--baseline", str(baseline))
    assert known["baseline"]["entries"] == serial["baseline"]["entries"]
    assert _outcome(known) == _outcome(serial)
    # against the reference every stored counterexample passes: stale entries fail the run
    stale = _run(tmp_path / "stale", "--workers", "2", "--baseline", str(baseline),
                 target="reference")
    assert stale["exit_code"] == 1
    assert {e["state"] for e in stale["baseline"]["entries"]} == {"stale", "not_selected"}


def test_workers_flag_is_checked() -> None:
    done = arck("run", "--target", "reference", "--workers", "none")
    assert done.returncode == 2
    assert "--workers" in done.stdout + done.stderr
    assert "'none'" in done.stdout + done.stderr


def test_a_result_crosses_processes_intact() -> None:
    result = CheckResult(
        check_id="budget/x", name="x", requirements=["BUD-01"], status=Status.FAIL,
        message="expected 3; saw 4", example={"n": 10**40, "s": "\ud800 😀", "f": 1e-07},
        failed=["BUD-01"], examples=7, exchanges=["curl …"],
    )
    wire = parallel.encode(result)
    assert isinstance(wire, str)  # execnet carries text of any size, not 128-bit integers
    assert parallel.decode(wire) == result


def test_an_example_beyond_the_digit_limit_still_crosses() -> None:
    huge = 10**4400  # json.dumps refuses to print it (Python's 4,300-digit limit)
    result = CheckResult(check_id="budget/x", name="x", requirements=["BUD-23"],
                         status=Status.FAIL, example=[huge])
    back = parallel.decode(parallel.encode(result))
    assert back.status is Status.FAIL
    assert isinstance(back.example, str)
    assert "case file" in back.example


def test_a_check_whose_worker_died_is_not_testable() -> None:
    result = parallel.crashed("test_budget.py::test_projection_fits_budget", "worker crashed")
    assert result.status is Status.NOT_TESTABLE
    assert "crashed" in result.message
    assert result.check_id == "budget/test_projection_fits_budget"
    assert "BUD-07" in result.requirements  # known without the worker that ran it
    unknown = parallel.crashed("elsewhere/test_x.py::test_y", "worker crashed")
    assert (unknown.check_id, unknown.requirements) == ("x/test_y", [])


CRASHING_APP = '''
import os
from pathlib import Path

from arck.reference.app import create_app as reference_app

FLAG = Path(__file__).with_name("crashed-once")


def create_app():
    inner = reference_app()

    async def app(scope, receive, send):
        # The first dry-run of the whole run kills the worker process that sent it.
        if scope["type"] == "http" and scope["path"] == "/v1/tools/dry-run":
            try:
                FLAG.touch(exist_ok=False)
            except FileExistsError:
                pass
            else:
                os._exit(3)
        await inner(scope, receive, send)

    return app
'''


def test_a_worker_dying_under_a_check_leaves_it_not_testable(tmp_path: Path) -> None:
    (tmp_path / "crashing_app.py").write_text(CRASHING_APP)
    done = arck("run", "--target", "app:crashing_app:create_app", "--workers", "2",
                "--requirements", "DRY-01,DRY-02,DEF-02", "--max-examples", "3",
                "--report-dir", str(tmp_path / "out"), path=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (tmp_path / "crashed-once").exists()
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    statuses = {c["check_id"]: c["status"] for c in report["checks"]}
    assert list(statuses.values()).count("not_testable") == 1, statuses
    (dead,) = [c for c in report["checks"] if c["status"] == "not_testable"]
    assert "crashed" in dead["message"]
    assert dead["requirements"], "the requirements of a crashed check are still known"
    assert statuses["definitions/test_budget_range_and_type"] == "pass"
    rows = {r["id"]: r["status"] for r in report["requirements"]}
    assert rows[dead["requirements"][0]] == "not_testable"


def test_workers_never_name_two_things_alike() -> None:
    info = SimpleNamespace(name_prefix="ci-")
    target: Any = SimpleNamespace(info=info)
    names = {CheckContext(target, lane=f"{lane}-").name("tools") for lane in ("gw0", "gw1")}
    assert names == {"ci-tools-gw0-0", "ci-tools-gw1-0"}
    assert CheckContext(target).name("tools") == "ci-tools-0"  # a serial run keeps its names


BROKEN_PLUGIN = '''
import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if hasattr(item.config, "workerinput") and call.when == "call":
        raise RuntimeError("a harness bug in the worker")
    return report
'''


def test_an_internal_error_in_a_worker_is_never_a_pass(tmp_path: Path) -> None:
    """xdist survives a worker's internal error; the run must still not pass."""
    (tmp_path / "broken_plugin.py").write_text(BROKEN_PLUGIN)
    done = plugin("-p", "broken_plugin", "-n", "2", "--arck-target=reference",
                  "--arck-requirements=DEF-02", "--arck-max-examples=3",
                  f"--arck-report-dir={tmp_path / 'out'}", cwd=tmp_path, path=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    assert report["exit_code"] == 2
    assert report["checks"], "checks that sent no result are listed"
    assert {c["status"] for c in report["checks"]} == {"not_testable"}
    rows = {r["id"]: r["status"] for r in report["requirements"]}
    assert rows["DEF-02"] == "not_testable"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "two-workers"])
def test_checks_deselected_by_other_plugins_are_not_reported(
    tmp_path: Path, workers: list[str]
) -> None:
    """`-k` deselects after arck's own selection: those checks were not run, not lost."""
    done = plugin("--arck-target=reference", "--arck-requirements=DEF", "--arck-max-examples=3",
                  f"--arck-report-dir={tmp_path}", "-k", "budget_default", *workers,
                  cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    assert [(c["check_id"], c["status"]) for c in report["checks"]] == [
        ("definitions/test_budget_default", "pass")
    ]
