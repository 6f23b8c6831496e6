"""`arck ARGS` in a child forked from a warm server: the same command line and exit code as a
subprocess, without paying the imports (about 1.5 s of CPU) for each of the mutant table's two
hundred runs.

The standard library's forkserver does the work: its server process imports the heavy modules
once (before any thread exists, so forking it is safe), and every run is a fresh child of it,
so no run sees another's state. The child redirects its own stdout and stderr to a file and
calls `arck.conformance.cli.main` as the console script does. A run that overruns is killed.

The child also writes its exit code to a file next to its log, and that file is the answer: the
forkserver passes exit codes back over a pipe, and when that pipe is lost it reports 255 for a
run that ended normally (CI saw it once: a mutant caught, "exit 1" printed, 255 reported).
"""

from __future__ import annotations

import importlib.metadata
import multiprocessing
import multiprocessing.forkserver
import os
import pkgutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# What `arck run --target mutant:…` imports before its first check: the command line, then
# the engine and the harness (hypothesis, schemathesis, FastAPI) that pytest.main pulls in,
# the pytest plugins it loads from their entry points and the check modules it collects
# (pytest finds them in sys.modules under the same names): about 1.3 s of each run's CPU.
HERE = Path(__file__).resolve().parent
PRELOAD = ["arck.conformance.cli", "arck.conformance.session", "arck.reference.mutants.base",
           "schemathesis", "hypothesis.stateful",
           *sorted({str(ep.value).partition(":")[0]
                    for ep in importlib.metadata.entry_points(group="pytest11")}),
           *sorted(f"arck.conformance.checks.{m.name}" for m in pkgutil.iter_modules(
               [str(Path(__file__).resolve().parents[1] / "conformance" / "checks")])
               if m.name.startswith("test_")),
           "forkwarm"]  # last: warms and freezes what the imports above made
KILLED = -9
LOST = 255  # what the forkserver reports when it cannot say how a child ended


@dataclass(frozen=True)
class Finished:
    returncode: int  # the command's exit code; KILLED when it overran and was killed
    output: str


def _context() -> multiprocessing.context.ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    # The server imports PRELOAD on the path its environment gives (3.11's ignores the
    # parent's sys.path): this directory is on it while the server starts, for `forkwarm`.
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), before]))
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before
    return context


def _code_file(log: Path) -> Path:
    return log.with_name(log.name + ".code")


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
    written = _code_file(Path(log))
    partial = written.with_name(written.name + ".part")
    partial.write_text(str(code), "ascii")
    partial.replace(written)  # whole or absent, never half a number
    os._exit(code)  # skip the server's inherited exit handlers


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def exit_code(reported: int | None, pid: int, code_file: Path, deadline: float) -> int:
    """The run's exit code: the one the child wrote; if it wrote none and the forkserver lost
    track of it, wait (until `deadline`, on the monotonic clock) for the child to write it or
    to be gone; a child gone without a word was killed."""
    while True:
        if code_file.exists():
            return int(code_file.read_text("ascii"))
        if reported != LOST:
            return reported if reported is not None else KILLED
        if not _alive(pid) or time.monotonic() >= deadline:
            return KILLED
        time.sleep(0.05)


def arck(args: list[str], cwd: Path, log: Path, timeout_s: float) -> Finished:
    """Run `arck ARGS` in `cwd` with CI=true, its output in `log`; wait at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    code_file = _code_file(log)
    code_file.unlink(missing_ok=True)
    process = _context().Process(target=_child, args=(args, str(cwd), str(log)))
    process.start()
    process.join(timeout_s)
    if process.is_alive():
        process.kill()
        process.join()
        code = KILLED
    else:
        assert process.pid is not None
        code = exit_code(process.exitcode, process.pid, code_file, deadline)
    output = log.read_text("utf-8", errors="replace") if log.exists() else ""
    return Finished(code, output)
