"""Checks of runs against a service over HTTP (docs/targets.md "Runs"): `arck serve` in a
subprocess calls arck's simulated provider, served by the harness from a target file's
`[provider]` section; with capability `test-clock` time is virtual on both sides."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from clirun import FULL, Service, arck, free_port

from arck.simulator.control import ServedControl
from arck.simulator.errors import UsageError
from arck.simulator.factory import build_target
from arck.simulator.provider import LostResponse, SlowAnswer, Step, script_tag
from arck.simulator.target import HttpTarget
from arck.simulator.targetfile import load

START = 1_767_225_600.0


class Served(Service):
    """`arck serve --test-clock` in a subprocess, its model provider on `provider_port`."""

    def __init__(self, tmp: Path, *extra: str) -> None:
        port, self.provider_port = free_port(), free_port()
        super().__init__(
            [sys.executable, "-m", "arck.conformance.cli", "serve", "--port", str(port),
             "--db", ":memory:", "--test-clock",
             "--provider-url", f"http://127.0.0.1:{self.provider_port}/v1", *extra],
            port, tmp / f"serve-{port}.log")
        self.port = port

    def target_file(self, tmp: Path, *, test_clock: bool = True, extra: str = "") -> Path:
        path = tmp / f"target-{self.port}-{test_clock}.toml"
        capabilities = '["test-clock"]' if test_clock else "[]"
        path.write_text(
            f'[target]\nbase_url = "{self.url}"\nprofile = "reference"\n'
            f"capabilities = {capabilities}\n\n"
            f'[provider]\nlisten = "127.0.0.1:{self.provider_port}"\n{extra}', "utf-8")
        return path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = Served(tmp_path_factory.mktemp("served"))
    try:
        yield s
    finally:
        s.stop()


def agent(target: HttpTarget, script: str, steps: list[Step], timeout_ms: int = 30_000) -> str:
    """A session of a version following `script`; its id."""
    control = target.control
    assert isinstance(control, ServedControl)
    control.provider.add_script(script, steps)

    def made(exchange: Any, key: str) -> str:
        assert 200 <= exchange.status < 300, exchange.describe()
        return str(exchange.json()[key])

    binding = made(target.create_binding(f"arck-{script}"), "binding_id")
    tool = {"name": "arck_sample", "description": "A sample.", "binding_id": binding,
            "input_schema": {"type": "object"}, "output_schema": {"type": "object"},
            "max_result_context_bytes": 1024}
    tool_set = made(target.publish_tool_set({"name": f"arck-{script}", "tools": [tool]}),
                    "tool_set_id")
    channel = made(target.create_channel({
        "name": f"arck-{script}", "model": "sim-1", "input_capacity": 100_000,
        "total_capacity": 128_000, "output_capacity": 4_000, "timeout_ms": timeout_ms,
        "prices": {"input": 2_000_000, "cached_input": 500_000, "output": 8_000_000}}),
        "channel_id")
    version = made(target.publish_agent_version("arck-agent", {
        "tool_set_id": tool_set, "channel_id": channel,
        "system_prompt": f"You help. {script_tag(script)}"}), "agent_version")
    wallet = made(target.create_wallet({"name": f"arck-{script}"}), "wallet_id")
    assert target.deposit(wallet, 10**9).status == 200
    return made(target.create_session({"agent_version": version, "wallet_id": wallet}),
                "session_id")


def settle(target: HttpTarget, run_id: str) -> tuple[dict[str, Any], list[str]]:
    """As RunWorld.settle: advance to each next deadline until the run settles."""
    control = target.control
    assert control is not None
    for _ in range(200):
        snapshot: dict[str, Any] = target.get_run(run_id).json()
        if snapshot["state"] in ("ended", "waiting_tools"):
            break
        deadline = control.next_deadline()
        if deadline is None:
            break
        control.advance(max(0.0, deadline - control.now()))
    events = [e["type"] for e in target.run_events(run_id).json()["events"]]
    return snapshot, events


def test_runs_over_the_network_on_virtual_time_across_both_sides(
    served: Served, tmp_path: Path
) -> None:
    target = build_target(None, served.target_file(tmp_path))
    assert isinstance(target, HttpTarget)
    try:
        control = target.control
        assert isinstance(control, ServedControl)
        assert control.virtual_time
        clock = httpx.post(f"{served.url}/v1/test-control/clock", json={"advance_seconds": 0},
                           headers=FULL).json()["now"]
        assert control.now() == clock  # in step with the service from the start

        # A plain answer: the service called the provider over the socket.
        session = agent(target, "plain", [Step(text="Hello over the network.")])
        run = target.create_run(session, {"input": "hi"}).json()
        snapshot, events = settle(target, run["run_id"])
        assert (snapshot["state"], snapshot["end_reason"]) == ("ended", "completed"), events
        [record] = [r for r in control.provider.records() if r.conversation == "plain"]
        assert record.billed
        assert record.idempotency_key
        assert control.provider.lookup_key(record.idempotency_key) == [record]

        # A slow answer (45 s) past the channel's timeout (30 s): the service's own timer
        # fires on its test clock, moved in step with the provider's, in a few real seconds.
        session = agent(target, "slow", [Step(text="late", faults=[SlowAnswer(seconds=45)])])
        began, wall = control.now(), time.monotonic()
        run = target.create_run(session, {"input": "hi"}).json()
        snapshot, events = settle(target, run["run_id"])
        assert snapshot["end_reason"] == "model_timeout", events
        assert 30 <= control.now() - began <= 31
        assert time.monotonic() - wall < 10
        service_now = httpx.post(f"{served.url}/v1/test-control/clock",
                                 json={"advance_seconds": 0}, headers=FULL).json()["now"]
        assert service_now == control.now()

        # A lost answer: never sent again (RUN-12); the run ends cost-pending.
        session = agent(target, "lost", [Step(text="gone", faults=[LostResponse()])])
        run = target.create_run(session, {"input": "hi"}).json()
        snapshot, events = settle(target, run["run_id"])
        assert snapshot["end_reason"] == "cost_pending_reconciliation", events
        sent = [r for r in control.provider.records() if r.conversation == "lost"]
        assert len(sent) == 1
        assert sent[0].idempotency_key
        assert control.provider.fault_counts()["lost_response"] == 1
    finally:
        target.close()
    assert not control.served.thread.is_alive()  # close() stopped the provider


def test_a_day_of_silence_costs_a_few_clock_requests(served: Served, tmp_path: Path) -> None:
    """EXE-02/03 let an executor stay silent a day (issue 17 §1b): stepped 1 s at a time that
    was 86,400 clock requests, about 50 minutes over HTTP. `advance_idle` moves in step only
    up to a provider timer due within the stretch, then the rest in one request."""
    target = build_target(None, served.target_file(tmp_path))
    assert isinstance(target, HttpTarget)
    try:
        control = target.control
        assert isinstance(control, ServedControl)
        assert control.post_clock is not None
        posted: list[float] = []
        post = control.post_clock

        def counted(seconds: float) -> float | None:
            posted.append(seconds)
            return post(seconds)

        control.post_clock = counted
        began = control.now()
        control.advance_idle(86_400)
        assert len(posted) <= 3, posted
        assert control.now() == began + 86_400
        service_now = httpx.post(f"{served.url}/v1/test-control/clock",
                                 json={"advance_seconds": 0}, headers=FULL).json()["now"]
        assert service_now == control.now()

        # A provider timer inside the stretch (a 45 s slow answer) is reached in step, 1 s at
        # a time, and the run's own timeout (30 s) fires on the service's side as it would.
        posted.clear()
        session = agent(target, "idle-slow", [Step(text="late", faults=[SlowAnswer(seconds=45)])])
        run = target.create_run(session, {"input": "hi"}).json()
        control.advance_idle(3_600)
        assert 30 <= len(posted) <= 60, len(posted)
        snapshot = target.get_run(run["run_id"]).json()
        assert snapshot["end_reason"] == "model_timeout", snapshot
    finally:
        target.close()


def test_real_time_without_the_capability(served: Served, tmp_path: Path) -> None:
    target = build_target(None, served.target_file(tmp_path, test_clock=False, extra="seed = 7\n"))
    assert isinstance(target, HttpTarget)
    try:
        control = target.control
        assert isinstance(control, ServedControl)
        assert not control.virtual_time
        assert control.provider.seed == 7
        assert abs(control.now() - time.time()) < 5
        session = agent(target, "real", [Step(text="In real time.")])
        run = target.create_run(session, {"input": "hi"}).json()
        deadline = control.next_deadline()
        assert deadline is not None
        assert 0 < deadline - control.now() <= 1
        snapshot, events = settle(target, run["run_id"])
        assert snapshot["end_reason"] == "completed", events
    finally:
        target.close()


def _checks(report_dir: Path) -> dict[str, str]:
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    return {c["check_id"]: c["status"] for c in report["checks"]}


def test_arck_run_passes_checks_of_runs_over_http(served: Served, tmp_path: Path) -> None:
    done = arck("run", "--config", str(served.target_file(tmp_path)),
                "--requirements", "RUN-01,RUN-03,BIL-01,CTX-01,EXE-01,EXE-02,EXE-08", "--profile",
                "quick",
                "--max-examples", "3", "--report-dir", str(tmp_path / "report"))
    checks = _checks(tmp_path / "report")
    assert done.returncode == 0, done.stdout + done.stderr
    assert checks["runs/test_admission_refuses_a_run_without_funds"] == "pass"
    assert checks["billing/test_reservation_held_while_the_call_is_in_flight"] == "pass"
    assert checks["context/test_effective_budget_and_output_capacity"] == "pass"
    assert checks["runs_stream/test_dropped_stream_cancels_nothing"] == "pass"
    # Concurrent claims and duplicate receipts race over real sockets here.
    assert checks["executors/test_one_claim_wins"] == "pass"
    # An executor silent a day on, in a few clock requests (issue 17 §1b).
    assert checks["executors/test_claims_need_an_online_executor_in_scope"] == "pass"
    assert checks["receipts/test_a_duplicate_receipt_is_replayed"] == "pass"
    assert checks["receipts/test_duplicate_receipts_racing"] == "pass"
    assert checks["executors_stateful/test_executor_protocol_under_faults"] == "pass"


@pytest.mark.parametrize(("name", "requirement", "check"), [
    ("admission-ignores-funds", "RUN-01", "runs/test_admission_refuses_a_run_without_funds"),
    # The stream is dropped over a real socket: the service sees its client go.
    ("disconnect-cancels-run", "RUN-03", "runs_stream/test_dropped_stream_cancels_nothing"),
])
def test_a_mutant_served_over_http_fails_its_check(
    tmp_path: Path, name: str, requirement: str, check: str
) -> None:
    mutant = Served(tmp_path, "--target", f"mutant:{name}")
    try:
        done = arck("run", "--config", str(mutant.target_file(tmp_path)),
                    "--requirements", requirement, "--profile", "quick",
                    "--report-dir", str(tmp_path / "report"))
    finally:
        mutant.stop()
    assert done.returncode == 1, done.stdout + done.stderr
    assert _checks(tmp_path / "report")[check] == "fail"


def test_provider_section_is_strict(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    for body, named in [('listen = "127.0.0.1:8900"\nport = 1\n', "provider.port"),
                        ("listen = 8900\n", "provider.listen"),
                        ('listen = "127.0.0.1"\n', "provider.listen"),
                        ('listen = "127.0.0.1:8900"\nseed = "1"\n', "provider.seed")]:
        path.write_text(f'[target]\nbase_url = "http://127.0.0.1:1"\n\n[provider]\n{body}')
        with pytest.raises(UsageError, match=named.replace(".", r"\.")):
            load(path)
    path.write_text('[target]\nbase_url = "http://127.0.0.1:1"\n\n'
                    '[provider]\nlisten = "[::1]:8900"\n')
    section = load(path).provider
    assert section is not None
    assert (section.host, section.port, section.base_url) == ("::1", 8900,
                                                              "http://[::1]:8900/v1")
    with pytest.raises(UsageError, match="--workers"):
        build_target(None, path, share=2)


# Kills `arck serve` the way a crash does and starts it again on the same database: the
# target file's restart command (docs/targets.md "Restart"). The first start goes through it
# too; it waits for the old listener to close, not for the process (a killed child of
# another process may linger as a zombie).
RESTART = """
import os, signal, socket, subprocess, sys, time
pidfile, log, port, args = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
if os.path.exists(pidfile):
    try:
        os.kill(int(open(pidfile).read()), signal.SIGKILL)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            break
        time.sleep(0.02)
with open(log, "ab") as out:
    child = subprocess.Popen(
        [sys.executable, "-m", "arck.conformance.cli", "serve", "--port", str(port), *args],
        stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
open(pidfile, "w").write(str(child.pid))
"""


def test_restart_over_http_keeps_runs_and_the_test_clock(tmp_path: Path) -> None:
    """RUN-02 against `arck serve --test-clock` on a file database, killed and started again
    by a command: its runs go on from what was stored, on a clock that resumed."""
    import shlex

    port, provider_port = free_port(), free_port()
    script, pidfile = tmp_path / "restart.py", tmp_path / "serve.pid"
    script.write_text(RESTART, "utf-8")
    command = [sys.executable, str(script), str(pidfile), str(tmp_path / "serve.log"),
               str(port), "--db", str(tmp_path / "db.sqlite3"), "--test-clock",
               "--provider-url", f"http://127.0.0.1:{provider_port}/v1"]
    subprocess.run(command, check=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.post(f"{url}/v1/test-control/clock", json={"advance_seconds": 5},
                              headers=FULL).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "arck serve never answered"
            time.sleep(0.05)
        subprocess.run(command, check=True)  # a restart: the clock resumes where it was
        deadline = time.monotonic() + 30
        while True:
            try:
                answer = httpx.post(f"{url}/v1/test-control/clock",
                                    json={"advance_seconds": 0}, headers=FULL)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "arck serve never came back"
                time.sleep(0.05)
        assert answer.json() == {"now": START + 5}
        target = tmp_path / "target.toml"
        target.write_text(
            f'[target]\nbase_url = "{url}"\nprofile = "reference"\n'
            f'capabilities = ["test-clock"]\nrestart = {json.dumps(shlex.join(command))}\n\n'
            f'[provider]\nlisten = "127.0.0.1:{provider_port}"\n', "utf-8")
        done = arck("run", "--config", str(target), "--requirements", "RUN-02", "--profile",
                    "quick", "--max-examples", "3", "--report-dir", str(tmp_path / "report"))
        checks = _checks(tmp_path / "report")
        assert done.returncode == 0, done.stdout + done.stderr
        assert checks["runs_durable/test_a_run_survives_restarts"] == "pass"
    finally:
        if pidfile.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pidfile.read_text()), 9)
