"""`arck` end to end, in subprocesses: exit codes, reports, replay, the pytest plugin."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from clirun import ARCK, arck, plugin


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
    assert report["settings"]["shrink"] is True  # by default failures are minimised
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
    assert "curl -sS -X POST" in still.stdout  # the failing input's HTTP exchange, replayable
    assert "# → 200" in still.stdout
    assert "arck-dev-full" not in still.stdout  # the credential stays a variable
    record = json.loads(case.read_text("utf-8"))
    assert record["failed"] == ["BUD-01"]
    assert record["exchanges"]
    fixed = arck("replay", str(case), "--target", "reference")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "FIXED" in fixed.stdout
    # Which way it fails: the case keeps its assertion, and a replay says if it is the one.
    assertion = record["assertion"]
    assert assertion.startswith("test_budget.py:"), assertion
    assert f"the same way (BUD-01 at {assertion})" in " ".join(still.stdout.split())
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps({**record, "assertion": "test_budget.py:1"}), "utf-8")
    other = arck("replay", str(moved), "--target", "mutant:chars-not-bytes")
    assert other.returncode == 1, other.stdout + other.stderr
    shown = " ".join(other.stdout.split())
    assert "another way: found failing BUD-01 at test_budget.py:1, now BUD-01 at " \
           f"{assertion}" in shown, shown


def test_unreachable_target_exits_2(tmp_path: Path) -> None:
    done = arck("run", "--target", "http://127.0.0.1:9", "--report-dir", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unreachable" in done.stdout + done.stderr


def test_an_app_that_cannot_be_built_exits_2_saying_why(tmp_path: Path) -> None:
    """An in-process app whose factory raises is the target's failure: exit 2 naming the app
    and the error, never a harness traceback."""
    (tmp_path / "broken_app.py").write_text(
        "def create_app():\n    raise KeyError(402)\n", "utf-8")
    done = arck("run", "--target", "app:broken_app:create_app", "--report-dir",
                str(tmp_path / "report"), path=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "app:broken_app:create_app: the app could not be built: KeyError: 402" in output
    assert "INTERNALERROR" not in output, output
    assert "Traceback" not in output, output


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--target", "mutant:no-such-mutant"),
        ("run", "--target", "ftp://nowhere"),
        ("run", "--target", "reference", "--requirements", "XYZ"),
        ("run", "--target", "reference", "--checks", "no_such_module/"),
        ("run",),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], tmp_path: Path) -> None:
    done = arck(*args, "--report-dir", str(tmp_path)) if len(args) > 1 else arck(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_checks_narrow_a_run_to_the_checks_named(tmp_path: Path) -> None:
    """`--checks` runs only the checks named (by id or prefix), inside `--requirements`; a
    requirement whose checks it left out says so."""
    done = arck("run", "--target", "reference", "--requirements", "DRY",
                "--checks", "dry_run/test_preview_fields,budget/",
                "--max-examples", "3", "--report-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    assert [c["check_id"] for c in report["checks"]] == ["dry_run/test_preview_fields"]
    assert report["settings"]["checks"] == "dry_run/test_preview_fields,budget/"
    rows = {r["id"]: r for r in report["requirements"]}
    judged = report["checks"][0]["requirements"]
    assert all(rows[rid]["status"] == "pass" for rid in judged)
    left = [r for r in rows.values() if r["id"].startswith("DRY-") and r["id"] not in judged
            and r["status"] == "not_covered"]
    assert left
    assert all("--checks" in r["reason"] for r in left), left


def test_requirements_lists_coverage() -> None:
    done = arck("requirements", "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["id"]: r for r in json.loads(done.stdout)["requirements"]}
    assert rows["BUD-07"]["checks"]
    assert not rows["EXE-06"]["checks"]  # the executor's duty, not the platform's (`pending`)


def test_pytest_plugin_in_an_implementers_ci(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    done = plugin("--arck-target=reference", "--arck-requirements=DRY-07",
                  f"--junitxml={junit}", cwd=tmp_path)
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
    done = arck("run", "--target", "app:hanging_app:create_app", "--requirements", "DEF-01",
                "--check-timeout", "2", "--report-dir", str(tmp_path / "out"), path=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    (check,) = report["checks"]
    assert check["status"] == "not_testable"
    assert "did not answer in time" in check["message"]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_serve_then_run_over_real_http(tmp_path: Path) -> None:
    """`arck serve` and a URL target: the same suite over a real socket (H-01)."""
    import time

    import httpx

    port = _free_port()
    server = subprocess.Popen(
        [*ARCK, "serve", "--port", str(port), "--database", str(tmp_path / "db.sqlite3")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        for _ in range(100):  # bounded: at most ~20 s for the server to come up
            try:
                httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        done = arck("run", "--target", f"http://127.0.0.1:{port}", "--requirements",
                    "DRY-06,DEF-04,AUTH-03", "--max-examples", "5", "--report-dir",
                    str(tmp_path / "out"))
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
        assert report["target"]["kind"] == "url"
        assert report["created"], "the run lists what it created"
    finally:
        server.terminate()
        output, _ = server.communicate(timeout=30)
    assert "arck-dev-full" in output  # serve prints its development credentials


ADAPTER = '''
from arck.simulator.factory import build_target


class Adapter:
    """A stand-in for an implementation with another API: it delegates to the reference."""

    def __init__(self, config):
        inner = build_target("reference")
        self.info = inner.info
        self.created = inner.created
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def request(self, *args, **kwargs):
        return self._inner.request(*args, **kwargs)

    def health(self):
        return self._inner.health()

    def create_binding(self, name, role="full"):
        return self._inner.create_binding(name, role)

    def publish_tool_set(self, body, role="full"):
        return self._inner.publish_tool_set(body, role)

    def get_tool_set(self, tool_set_id, role="full"):
        return self._inner.get_tool_set(tool_set_id, role)

    def publish_agent_version(self, agent_id, body, role="full"):
        return self._inner.publish_agent_version(agent_id, body, role)

    def get_agent_version(self, version, role="full"):
        return self._inner.get_agent_version(version, role)

    def try_modify(self, kind, resource_id, body):
        return self._inner.try_modify(kind, resource_id, body)

    def dry_run(self, body, role="full"):
        return self._inner.dry_run(body, role)

    def openapi(self):
        return self._inner.openapi()

    def close(self):
        self._inner.close()
'''


def test_an_adapter_plugs_in(tmp_path: Path) -> None:
    (tmp_path / "my_adapter.py").write_text(ADAPTER)
    done = arck("run", "--target", "adapter:my_adapter:Adapter", "--requirements", "DRY-01",
                "--max-examples", "5", "--report-dir", str(tmp_path / "out"), path=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    assert {c["status"] for c in report["checks"]} == {"pass"}


def test_no_shrink_stops_a_check_at_its_first_failing_input(tmp_path: Path) -> None:
    """The same run as below without shrinking: the check stops at the first failure it meets
    (hypothesis looks no further once shrinking is off), kept as found, and it replays."""
    done = arck("run", "--target", "mutant:token-budget", "--requirements", "BUD-03,BUD-07",
                "--seed", "1", "--max-examples", "40", "--no-shrink",
                "--report-dir", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    assert report["settings"]["shrink"] is False
    checks = {c["check_id"]: c for c in report["checks"]}
    [failure] = checks["budget/test_projection_fits_budget"]["failures"]
    case = tmp_path / failure["case_file"]
    assert json.loads(case.read_text("utf-8"))["failed"] == failure["requirements"]
    still = arck("replay", str(case), "--target", "mutant:token-budget")
    assert still.returncode == 1, still.stdout + still.stderr
    shown = " ".join(still.stdout.split())
    assert "STILL FAILING" in shown
    assert f"the same way ({failure['requirements'][0]} at" in shown


def test_a_check_failing_two_ways_reports_each_failure(tmp_path: Path) -> None:
    """token-budget reads the budget as tokens: a result a little over the budget is not cut
    (BUD-07), and one far over it is cut to 4 bytes a token, past the budget (BUD-03)."""
    done = arck("run", "--target", "mutant:token-budget", "--requirements", "BUD-03,BUD-07",
                "--seed", "1", "--max-examples", "40", "--report-dir", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    checks = {c["check_id"]: c for c in report["checks"]}
    check = checks["budget/test_projection_fits_budget"]
    failures = check["failures"]
    assert [f["requirements"] for f in failures] == [["BUD-07"], ["BUD-03"]]  # source order
    assert check["failed"] == ["BUD-03", "BUD-07"]
    first = failures[0]  # the top-level fields stay the first failure's
    assert (check["message"], check["example"], check["case_file"], check["replay"]) == (
        first["message"], first["example"], first["case_file"], first["replay"])
    assert [f["case_file"] for f in failures] == [
        "cases/budget_test_projection_fits_budget.json",
        "cases/budget_test_projection_fits_budget-2.json",
    ]
    for failure in failures:
        assert failure["message"].endswith(f" Input: {failure['input_kind']}.")
        assert "-byte result under a" in failure["input_kind"]
        record = json.loads((tmp_path / failure["case_file"]).read_text("utf-8"))
        assert record["failed"] == failure["requirements"]
        assert record["input"] == failure["input_kind"]
        budget, result = record["case"]
        # exactly this input's exchanges: its dry-run is the last, no other input's is there
        assert failure["exchanges"] == record["exchanges"]
        dry_runs = [e for e in failure["exchanges"] if "/v1/tools/dry-run" in e]
        assert len(dry_runs) == 1
        assert f'"result": "{result[:50]}' in dry_runs[0]
        assert f"under a {budget:,}-byte budget" in failure["input_kind"]
    assert failures[0]["example"] != failures[1]["example"]
    rows = {r["id"]: r for r in report["requirements"]}
    assert rows["BUD-03"]["status"] == "fail"
    assert "budget/test_projection_fits_budget (failure 2 of 2)" in rows["BUD-03"]["reason"]
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    text = "".join(f.text or "" for f in suite.iter("failure"))
    assert "Failure 2 of 2 [BUD-03]" in text

    second = tmp_path / failures[1]["case_file"]
    still = arck("replay", str(second), "--target", "mutant:token-budget")
    assert still.returncode == 1, still.stdout + still.stderr
    assert "STILL FAILING" in still.stdout
    fixed = arck("replay", str(second), "--target", "reference")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
