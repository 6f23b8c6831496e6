"""`forkrun.arck` (the mutant table's runner) says what a subprocess of `arck` says: the same exit
code and output, and a run that overruns is killed, never waited for."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from forkrun import KILLED, LOST, arck, exit_code


def _subprocess(args: list[str], cwd: Path) -> tuple[int, str]:
    console_script = Path(sys.executable).with_name("arck")
    done = subprocess.run([str(console_script), *args], cwd=cwd,
                          capture_output=True, text=True, check=False,
                          env={**os.environ, "CI": "true"})
    return done.returncode, done.stdout + done.stderr


def test_a_forked_run_says_what_a_subprocess_says(tmp_path: Path) -> None:
    for args in (["mutants"], ["run", "--target", "reference", "--workers", "none"]):
        finished = arck(args, tmp_path, tmp_path / "out.log", timeout_s=120)
        assert (finished.returncode, finished.output) == _subprocess(args, tmp_path), args
    assert finished.returncode == 2  # the bad --workers value: a usage error


def test_a_run_that_overruns_is_killed(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    finished = arck(["serve", "--port", str(port)], tmp_path, tmp_path / "out.log", timeout_s=3)
    assert finished.returncode == KILLED, finished.output


def test_the_written_code_wins_over_a_lost_report(tmp_path: Path) -> None:
    code_file = tmp_path / "out.log.code"
    code_file.write_text("1", "ascii")
    assert exit_code(LOST, os.getpid(), code_file, deadline=0.0) == 1
    code_file.unlink()
    # no code written: a real report stands, a lost one with the child gone means killed
    assert exit_code(0, os.getpid(), code_file, deadline=0.0) == 0
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert exit_code(LOST, gone.pid, code_file, deadline=float("inf")) == KILLED


def test_a_forked_run_leaves_its_code_beside_its_log(tmp_path: Path) -> None:
    finished = arck(["run", "--target", "reference", "--workers", "none"], tmp_path,
                    tmp_path / "out.log", timeout_s=120)
    assert (tmp_path / "out.log.code").read_text("ascii") == str(finished.returncode) == "2"
