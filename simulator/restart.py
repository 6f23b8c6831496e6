"""The restart step of a service in another process (RUN-02): the target file's command.

The command kills the service and starts it again on the same stored state (for example
`systemctl restart acme-runtime`, or a script that sends SIGKILL and starts it). arck runs it
without a shell, waits for it to exit, then for `GET /v1/health` to answer 200: the checks go
on only once the service is back.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Callable

import httpx

from arck.simulator.errors import TargetUnreachable

__all__ = ["command_restarter"]

POLL_S = 0.1


def command_restarter(
    command: str, client: httpx.Client, timeout: float, token: str | None = None,
    clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
) -> Callable[[], None]:
    """A restart step running `command`, then waiting up to `timeout` s for health, asked
    with `token` (health needs a credential like every endpoint)."""
    argv = shlex.split(command)
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}

    def restart() -> None:
        try:
            done = subprocess.run(argv, capture_output=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TargetUnreachable(f"restart command {command!r}: {exc}") from None
        if done.returncode != 0:
            told = (done.stderr or done.stdout)[-300:].decode("utf-8", "replace").strip()
            raise TargetUnreachable(
                f"restart command {command!r} exited {done.returncode}: {told or '(no output)'}"
            )
        _healthy(client, headers, timeout, clock, sleep, command)

    return restart


def _healthy(
    client: httpx.Client, headers: dict[str, str], timeout: float,
    clock: Callable[[], float], sleep: Callable[[float], None], command: str,
) -> None:
    deadline = clock() + timeout
    seen = "no answer"
    while True:
        try:
            answer = client.get("/v1/health", headers=headers)
            if answer.status_code == 200:
                return
            seen = f"{answer.status_code}"
        except httpx.TransportError as exc:
            seen = f"{type(exc).__name__}: {exc}"
        if clock() >= deadline:
            raise TargetUnreachable(
                f"after restart command {command!r}, GET /v1/health did not answer 200 within "
                f"{timeout:g} s (last: {seen})"
            )
        sleep(POLL_S)
