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
    env = {**os.environ, "CI": "true"}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return subprocess.run(
        [*ARCK, *args], capture_output=True, text=True, cwd=cwd, env=env, check=False,
        timeout=600,
    )
