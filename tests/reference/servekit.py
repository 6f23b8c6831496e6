"""`arck serve` in a subprocess on loopback, and the simulated provider it calls on a socket:
what the tests that kill the server with SIGKILL share; and an app served from a thread
(`Threaded`), for the tests that need a real socket but reach into the app."""

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
from typing import Any

import httpx
import uvicorn
from runkit import FULL

from arck.simulator.clock import RealClock
from arck.simulator.provider import SimulatedProvider, listen, script_tag, server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Threaded:
    """An ASGI app served by uvicorn from a thread on a loopback socket, with a client that
    holds the development credential; `close` stops both."""

    def __init__(self, app: Any) -> None:
        self.sock = listen("127.0.0.1", 0)
        self.server = uvicorn.Server(uvicorn.Config(app, loop="asyncio", log_level="critical"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.client = httpx.Client(base_url=self.url, headers=FULL, timeout=10)
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn never started"
            time.sleep(0.01)

    def post(self, path: str, body: Any, status: int = 201, **options: Any) -> Any:
        response = self.client.post(path, json=body, **options)
        assert response.status_code == status, response.text
        return response.json()

    def session(self, script: str, channel: dict[str, Any]) -> str:
        """A session of a new version (one tool, `lookup`, on a new binding: `self.binding`)
        on a new `channel`, answered by the provider's `script`, paid from a new wallet."""
        self.binding = str(self.post("/v1/bindings", {"name": "orders"})["binding_id"])
        tool = {"name": "lookup", "description": "Read an order.", "binding_id": self.binding,
                "input_schema": {"type": "object"}, "output_schema": {"type": "object"},
                "max_result_context_bytes": 1024}
        tool_set = self.post("/v1/tool-sets", {"name": "t", "tools": [tool]})
        version = self.post("/v1/agents/agent-1/versions", {
            "tool_set_id": tool_set["tool_set_id"],
            "channel_id": self.post("/v1/channels", channel)["channel_id"],
            "system_prompt": f"You help. {script_tag(script)}"})
        wallet = self.post("/v1/wallets", {"name": "w"})
        self.post(f"/v1/wallets/{wallet['wallet_id']}/deposits", {"amount": 10**9}, 200)
        return str(self.post("/v1/sessions", {"agent_version": version["agent_version"],
                                              "wallet_id": wallet["wallet_id"]})["session_id"])

    def close(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join()
        self.sock.close()


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
