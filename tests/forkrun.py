"""`arck ARGS` in a child forked from a warm server: the same command line and exit code as a
subprocess, without paying the imports (about 1.5 s of CPU) for each of the mutant table's two
hundred runs.

The standard library's forkserver does the work: its server process imports the heavy modules
once (before any thread exists, so forking it is safe), and every run is a fresh child of it,
so no run sees another's state. The child redirects its own stdout and stderr to a file and
calls `arck.conformance.cli.main` as the console script does. A run that overruns is killed.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from dataclasses import dataclass
from pathlib import Path

# What `arck run --target mutant:…` imports before its first check: the command line, then
# the engine and the harness (hypothesis, schemathesis, FastAPI) that pytest.main pulls in.
PRELOAD = ["arck.conformance.cli", "arck.conformance.session", "arck.reference.mutants.base",
           "schemathesis", "hypothesis.stateful"]
KILLED = -9


@dataclass(frozen=True)
class Finished:
    returncode: int  # the command's exit code; KILLED when it overran and was killed
    output: str


def _context() -> multiprocessing.context.ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _child(args: list[str], cwd: str, log: str) -> None:
    os.chdir(cwd)
    os.environ["CI"] = "true"
    with open(log, "wb", buffering=0) as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    sys.argv = ["arck", *args]
    from arck.conformance.cli import main

    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip the server's inherited exit handlers


def arck(args: list[str], cwd: Path, log: Path, timeout_s: float) -> Finished:
    """Run `arck ARGS` in `cwd` with CI=true, its output in `log`; wait at most `timeout_s`."""
    process = _context().Process(target=_child, args=(args, str(cwd), str(log)))
    process.start()
    process.join(timeout_s)
    if process.is_alive():
        process.kill()
        process.join()
        code = KILLED
    else:
        code = process.exitcode if process.exitcode is not None else KILLED
    output = log.read_text("utf-8", errors="replace") if log.exists() else ""
    return Finished(code, output)
