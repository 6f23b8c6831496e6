"""The stateful check of runs end to end: a mutant fails it on the ID it breaks, the shrunk
conversation is written as a scenario file that validates, and `arck replay` of that file
(and of the case file) says STILL FAILING on the mutant and FIXED on the reference."""

from __future__ import annotations

import json
from pathlib import Path

from clirun import arck

from arck.simulator.scenario.loader import load_scenario

CHECK = "runs_stateful/test_random_conversations"


def _stateful(report_dir: Path) -> dict:
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    [check] = [c for c in report["checks"] if c["check_id"] == CHECK]
    return check


def test_reference_passes(tmp_path: Path) -> None:
    done = arck("run", "--target", "reference", "--requirements", "RUN-11", "--checks", CHECK,
                "--profile", "ci", "--seed", "3", "--report-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    check = _stateful(tmp_path)
    assert check["status"] == "pass"
    assert check["examples"] >= 40


def test_mutant_failure_becomes_a_replayable_scenario(tmp_path: Path) -> None:
    mutant = "mutant:stamped-system-prompt"
    done = arck("run", "--target", mutant, "--requirements", "RUN-11", "--checks", CHECK,
                "--profile", "ci", "--seed", "1", "--report-dir", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    check = _stateful(tmp_path)
    assert check["status"] == "fail"
    assert [f["requirements"] for f in check["failures"]] == [["CTX-07", "RUN-08"]]
    case = tmp_path / check["case_file"]
    record = json.loads(case.read_text("utf-8"))
    assert record["failed"] == ["CTX-07", "RUN-08"]
    program = record["case"]
    assert [a[0] for a in program["actions"]] == ["run", "run"]  # shrunk: two turns
    scenario_file = tmp_path / record["scenario"]
    assert scenario_file.name == "runs_stateful_test_random_conversations.scenario.yaml"
    scenario = load_scenario(scenario_file)  # validates
    assert scenario.expect.invariants == ["extends_unless_compacted"]
    assert len(scenario.actions) == len(program["actions"])

    still = arck("replay", str(scenario_file), "--target", mutant)
    assert still.returncode == 1, still.stdout + still.stderr
    assert "STILL FAILING" in still.stdout
    assert "invariants.extends_unless_compacted" in still.stdout
    fixed = arck("replay", str(scenario_file), "--target", "reference")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "FIXED" in fixed.stdout

    still = arck("replay", str(case), "--target", mutant)
    assert still.returncode == 1, still.stdout + still.stderr
    assert "STILL FAILING" in still.stdout
    fixed = arck("replay", str(case), "--target", "reference")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "FIXED" in fixed.stdout


def test_a_bad_scenario_file_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.scenario.yaml"
    bad.write_text("name: x\n", "utf-8")
    done = arck("replay", str(bad))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
