"""`arck` in a subprocess, as a user runs it: shared by the end-to-end tests of this folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ARCK = [sys.executable, "-m", "arck.conformance.cli"]


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
