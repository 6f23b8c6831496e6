"""`arck` end to end, in subprocesses: exit codes, reports, replay, the pytest plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ARCK = [sys.executable, "-m", "arck.conformance.cli"]


def arck(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "true"}
    return subprocess.run(
        [*ARCK, *args], capture_output=True, text=True, cwd=cwd, env=env, check=False,
        timeout=600,
    )


def test_reference_passes_a_selection_and_writes_reports(tmp_path: Path) -> None:
    done = arck("run", "--target", "reference", "--requirements", "DRY,DEF-02",
                "--max-examples", "5", "--report-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    statuses = {r["id"]: r["status"] for r in report["requirements"]}
    assert statuses["DRY-01"] == "pass"
    assert statuses["DEF-02"] == "pass"
    assert statuses["BUD-07"] == "not_covered"  # not selected
    assert report["seed"] == 0  # CI=true: fixed inputs
    assert report["target"]["profile"] == "reference"
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    props = [p.get("value") for p in suite.iter("property") if p.get("name") == "requirement"]
    assert "DRY-06" in props
    html = (tmp_path / "report.html").read_text("utf-8")
    assert "DRY-07" in html
    assert "arck-dev-full" not in html + (tmp_path / "report.json").read_text("utf-8")


def test_a_mutant_fails_with_a_replayable_case(tmp_path: Path) -> None:
    done = arck("run", "--target", "mutant:chars-not-bytes", "--requirements", "BUD-01",
                "--seed", "7", "--max-examples", "20", "--report-dir", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    failed = [c for c in report["checks"] if c["status"] == "fail"]
    assert failed
    first = failed[0]
    assert first["replay"].startswith("arck replay ")
    assert "expected" in first["message"]
    assert "saw" in first["message"]
    case = tmp_path / first["case_file"]
    assert json.loads(case.read_text("utf-8"))["case"] is not None
    still = arck("replay", str(case), "--target", "mutant:chars-not-bytes")
    assert still.returncode == 1, still.stdout + still.stderr
    assert "STILL FAILING" in still.stdout
    fixed = arck("replay", str(case), "--target", "reference")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "FIXED" in fixed.stdout


def test_unreachable_target_exits_2(tmp_path: Path) -> None:
    done = arck("run", "--target", "http://127.0.0.1:9", "--report-dir", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unreachable" in done.stdout + done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--target", "mutant:no-such-mutant"),
        ("run", "--target", "ftp://nowhere"),
        ("run", "--target", "reference", "--requirements", "XYZ"),
        ("run",),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], tmp_path: Path) -> None:
    done = arck(*args, "--report-dir", str(tmp_path)) if len(args) > 1 else arck(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_requirements_lists_coverage() -> None:
    done = arck("requirements", "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["id"]: r for r in json.loads(done.stdout)["requirements"]}
    assert rows["BUD-07"]["checks"]
    assert not rows["RUN-01"]["checks"]


def test_pytest_plugin_in_an_implementers_ci(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "arck.conformance.checks",
         "-p", "no:cacheprovider", "--arck-target=reference", "--arck-requirements=DRY-07",
         f"--junitxml={junit}", "-q"],
        capture_output=True, text=True, cwd=tmp_path, check=False, timeout=600,
        env={**os.environ, "CI": "true"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    cases = ET.parse(junit).getroot().iter("testcase")
    props = {(p.get("name"), p.get("value")) for c in cases for p in c.iter("property")}
    assert ("requirement", "DRY-07") in props


HANGING_APP = '''
import asyncio
from fastapi import FastAPI

def create_app():
    app = FastAPI()

    @app.get("/v1/health")
    def health():
        return {"status": "ok"}

    @app.post("/v1/bindings")
    async def hang():
        await asyncio.sleep(3600)

    return app
'''


def test_a_hung_target_is_not_testable(tmp_path: Path) -> None:
    (tmp_path / "hanging_app.py").write_text(HANGING_APP)
    env = {**os.environ, "CI": "true", "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [*ARCK, "run", "--target", "app:hanging_app:create_app", "--requirements", "DEF-01",
         "--check-timeout", "2", "--report-dir", str(tmp_path / "out")],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    (check,) = report["checks"]
    assert check["status"] == "not_testable"
    assert "did not answer in time" in check["message"]
