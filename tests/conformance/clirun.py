"""`arck` in a subprocess, as a user runs it: shared by the end-to-end tests of this folder."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ARCK = [sys.executable, "-m", "arck.conformance.cli"]
FULL = {"Authorization": "Bearer arck-dev-full"}


def arck(
    *args: str, cwd: Path | None = None, path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`arck ARGS` with CI=true; `path` is put on PYTHONPATH (for app and adapter modules)."""
    return _run([*ARCK, *args], cwd, path)


def plugin(*args: str, cwd: Path, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`pytest --pyargs arck.conformance.checks ARGS`: the plugin in an implementer's own run."""
    command = [sys.executable, "-m", "pytest", "--pyargs", "arck.conformance.checks",
               "-p", "no:cacheprovider", "-q", *args]
    return _run(command, cwd, path)


def _run(
    command: list[str], cwd: Path | None, path: Path | None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "true"}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return subprocess.run(
        command, capture_output=True, text=True, cwd=cwd, env=env, check=False, timeout=600
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Service:
    """A service in a subprocess on loopback port `port`, once it answers its health check
    (with the full credential: the reference's health needs one); its output goes to `log`."""

    def __init__(self, command: list[str], port: int, log: Path) -> None:
        self.log = log.open("wb")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                        env={**os.environ, "CI": "true"})
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            assert self.process.poll() is None, f"{command[2:4]} exited:\n{log.read_text()}"
            try:
                if httpx.get(f"{self.url}/v1/health", headers=FULL).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"{command[2:4]} never answered"
            time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.log.close()
