"""`arck serve` in a subprocess on loopback, and the simulated provider it calls on a socket:
what the tests that kill the server with SIGKILL share."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from runkit import FULL

from arck.simulator.clock import RealClock
from arck.simulator.provider import SimulatedProvider, listen, server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def provider_on_socket() -> Iterator[tuple[SimulatedProvider, str]]:
    """A simulated provider on real time, served from a thread: it and its base URL."""
    provider = SimulatedProvider(clock=RealClock())
    sock = listen("127.0.0.1", 0)
    uvicorn_server = server(provider)
    thread = threading.Thread(target=uvicorn_server.run, kwargs={"sockets": [sock]})
    thread.start()
    try:
        yield provider, f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        uvicorn_server.should_exit = True
        thread.join()
        sock.close()


class Served:
    """`arck serve` in a subprocess, answering its health check (or killed before it could:
    `died_starting`, with `--crash-at-commit` landing in a start-up write)."""

    def __init__(self, args: list[str], port: int, log: Path, *, may_die: bool = False) -> None:
        self.log = log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "arck.conformance.cli", "serve", "--port", str(port), *args],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, "CI": "true"})
        self.url = f"http://127.0.0.1:{port}"
        self.died_starting = False
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                self.log.close()
                if may_die and code == -signal.SIGKILL:
                    self.died_starting = True
                    return
                raise AssertionError(f"arck serve exited {code}:\n{log.read_text()}")
            try:
                if httpx.get(f"{self.url}/v1/health", headers=FULL).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        raise AssertionError("arck serve never answered")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self.log.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.log.close()
