"""The stateful executor check end to end: a mutant fails it on the ID it breaks, the shrunk
program is written as a scenario file that validates, and `arck replay` of that file (and of
the case file) says STILL FAILING on the mutant and FIXED on the reference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import arck

from arck.simulator.scenario.loader import load_scenario

CHECK = "executors_stateful/test_executor_protocol_under_faults"


def _stateful(report_dir: Path) -> dict:
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    [check] = [c for c in report["checks"] if c["check_id"] == CHECK]
    return check


@pytest.mark.parametrize(("mutant", "requirement", "invariant"), [
    ("late-receipt-applied", "EXE-13", "ended_runs_unchanged"),
    ("duplicate-applied-twice", "EXE-08", "receipt_ids_keep_meaning"),
    ("second-final-accepted", "EXE-14", "one_final_per_call"),
])
def test_mutant_failure_becomes_a_replayable_scenario(
    tmp_path: Path, mutant: str, requirement: str, invariant: str
) -> None:
    target = f"mutant:{mutant}"
    done = arck("run", "--target", target, "--requirements", requirement, "--checks", CHECK,
                "--seed", "1",
                "--report-dir", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    check = _stateful(tmp_path)
    assert check["status"] == "fail"
    assert any(requirement in f["requirements"] for f in check["failures"])
    case = tmp_path / check["case_file"]
    record = json.loads(case.read_text("utf-8"))
    scenario_file = tmp_path / record["scenario"]
    scenario = load_scenario(scenario_file)  # validates
    assert scenario.expect.invariants == [invariant]
    kinds = [a[0] for a in record["case"]["actions"]]
    assert "release_nth" not in kinds  # the program records what was done, resolved

    still = arck("replay", str(scenario_file), "--target", target)
    assert still.returncode == 1, still.stdout + still.stderr
    assert "STILL FAILING" in still.stdout
    assert f"invariants.{invariant}" in still.stdout
    fixed = arck("replay", str(scenario_file), "--target", "reference")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "FIXED" in fixed.stdout

    still = arck("replay", str(case), "--target", target)
    assert still.returncode == 1, still.stdout + still.stderr
    fixed = arck("replay", str(case), "--target", "reference")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
