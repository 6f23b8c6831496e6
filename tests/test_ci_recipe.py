"""The CI recipe (action.yml, run-arck.sh, workflows): valid, wired right, and runnable locally.

GitHub Actions cannot run here, so the recipe is checked in three ways: against the
schemastore schemas, by the structure of action.yml (the properties that make gating
work), and by running the step's script locally the way the action would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
SCRIPT = ROOT / "ci" / "github" / "run-arck.sh"
WORKFLOWS = [
    ROOT / ".github" / "workflows" / "conformance.yml",
    ROOT / "docs" / "ci" / "github-actions.yml",
]
BIN = Path(sys.executable).parent


def _action() -> dict[str, Any]:
    data = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _steps() -> list[dict[str, Any]]:
    steps = _action()["runs"]["steps"]
    assert isinstance(steps, list)
    return steps


def _check_jsonschema(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    exe = BIN / "check-jsonschema"
    assert exe.exists(), f"{exe} missing: install the test extra"
    return subprocess.run(
        [str(exe), "--builtin-schema", schema, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# (a) schemas ------------------------------------------------------------------------------


def test_action_matches_schema() -> None:
    """A malformed action.yml only fails when someone uses it; catch it here."""
    result = _check_jsonschema("vendor.github-actions", ACTION)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_match_schema(workflow: Path) -> None:
    """The example and arck's own workflow must at least be well-formed workflows."""
    result = _check_jsonschema("vendor.github-workflows", workflow)
    assert result.returncode == 0, result.stdout + result.stderr


# (b) structure ----------------------------------------------------------------------------


def test_action_is_composite_calling_the_script() -> None:
    """The run step must call the tested script, or the local tests prove nothing."""
    action = _action()
    assert action["runs"]["using"] == "composite"
    run_step = next(s for s in _steps() if s.get("id") == "arck")
    assert "ci/github/run-arck.sh" in run_step["run"]
    assert all("shell" in s for s in _steps() if "run" in s), "composite run steps need shell"
    uses = [s["uses"] for s in _steps() if "uses" in s]
    assert "actions/setup-python@v5" in uses
    assert "actions/upload-artifact@v4" in uses
    install = next(s for s in _steps() if "pip install" in s.get("run", ""))
    assert '"${{ github.action_path }}"' in install["run"]


def test_upload_runs_always() -> None:
    """The report matters most when the run failed, so the upload must not be skipped."""
    upload = next(s for s in _steps() if s.get("uses", "").startswith("actions/upload-artifact"))
    assert str(upload.get("if", "")).replace(" ", "") == "always()"
    assert upload["with"]["path"] == "${{ inputs.report-dir }}"


def test_gate_is_last_and_uses_exit_code() -> None:
    """Gating after the upload is what lets the report upload and the job still fail."""
    steps = _steps()
    gate = steps[-1]
    text = json.dumps(gate)
    assert "steps.arck.outputs.exit-code" in text
    assert 'exit "$code"' in gate["run"]
    upload_index = next(
        i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/upload-artifact")
    )
    assert upload_index < len(steps) - 1


def test_inputs_used_are_declared_and_outputs_wired() -> None:
    """A typo in `${{ inputs.X }}` silently yields an empty string on GitHub."""
    action = _action()
    declared = set(action["inputs"])
    used = set(re.findall(r"\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}", ACTION.read_text("utf-8")))
    assert used, "no inputs used at all?"
    assert used <= declared, f"undeclared inputs: {sorted(used - declared)}"
    required = {
        "target",
        "config",
        "requirements",
        "profile",
        "strict",
        "report-dir",
        "python-version",
    }
    assert required <= declared
    assert action["inputs"]["profile"]["default"] == "ci"
    assert action["inputs"]["strict"]["default"] == "false"
    assert action["inputs"]["report-dir"]["default"] == "arck-reports"
    assert action["inputs"]["python-version"]["default"] == "3.11"
    assert set(action["outputs"]) == {"exit-code", "report-dir"}
    step_ids = {s.get("id") for s in _steps()}
    for output in action["outputs"].values():
        ref = re.fullmatch(r"\$\{\{\s*steps\.([\w-]+)\.outputs\.[\w-]+\s*\}\}", output["value"])
        assert ref is not None, output["value"]
        assert ref.group(1) in step_ids


# (c) the script, run locally -----------------------------------------------------------------


def _run_script(
    tmp_path: Path, target: str, requirements: str, workers: str = ""
) -> tuple[str, str, Path]:
    report_dir = tmp_path / "reports"
    output = tmp_path / "github_output"
    summary = tmp_path / "step_summary"
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "CI": "true",
        "ARCK_TARGET": target,
        "ARCK_REQUIREMENTS": requirements,
        "ARCK_PROFILE": "quick",
        "ARCK_STRICT": "false",
        "ARCK_REPORT_DIR": str(report_dir),
        "ARCK_EXTRA_ARGS": "--max-examples 5",
        "ARCK_WORKERS": workers,
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    env.pop("ARCK_CONFIG", None)
    result = subprocess.run(
        ["bash", str(SCRIPT)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return output.read_text("utf-8"), summary.read_text("utf-8"), report_dir


@pytest.mark.parametrize(
    ("target", "requirements", "workers", "expected"),
    [("reference", "DRY-07", "", 0), ("mutant:chars-not-bytes", "BUD-01", "2", 1)],
    ids=["reference-passes", "mutant-fails-on-two-workers"],
)
def test_script_records_exit_code(
    tmp_path: Path, target: str, requirements: str, workers: str, expected: int
) -> None:
    """The step must exit 0 (so the upload runs) and hand arck's real exit code on."""
    output, summary, report_dir = _run_script(tmp_path, target, requirements, workers)
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    assert report["settings"]["workers"] == int(workers or 1)
    assert f"exit-code={expected}" in output.splitlines()
    assert f"report-dir={report_dir}" in output.splitlines()
    for name in ("report.html", "report.json", "junit.xml"):
        assert (report_dir / name).is_file(), name
    assert f"exit code | **{expected}**" in summary


def test_script_without_github_files(tmp_path: Path) -> None:
    """Locally GITHUB_OUTPUT/GITHUB_STEP_SUMMARY are unset; the script must not trip on that."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "ARCK_"))}
    env |= {"CI": "true", "ARCK_BIN": str(tmp_path / "no-such-arck")}
    result = subprocess.run(
        ["bash", str(SCRIPT)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "arck exit code: 2" in result.stdout
