"""Wall time of a whole `arck run` against the reference, and each check's share of it.

The CI profile should finish in under 60 s on 2 cores. Runs the real CLI in a subprocess (CI=true)
so start-up and collection count too. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/bench_run.py [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_SECONDS = 60.0


def checks_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-check entries, wherever the report keeps them."""
    checks = report.get("checks")
    return [c for c in checks if isinstance(c, dict)] if isinstance(checks, list) else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=None, help="passed on as --workers N")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="arck-bench-") as tmp:
        command = [sys.executable, "-m", "arck.conformance.cli", "run", "--target", "reference",
                   "--profile", "ci", "--report-dir", tmp]
        if args.workers is not None:
            command += ["--workers", str(args.workers)]
        start = time.perf_counter()
        done = subprocess.run(command, env={**os.environ, "CI": "true"}, check=False,
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        verdict = "met" if wall < TARGET_SECONDS else "NOT met"
        print(f"arck run exit {done.returncode}; wall {wall:.1f} s "
              f"(target < {TARGET_SECONDS:g} s on 2 cores: {verdict}; {os.cpu_count()} cores here)")
        path = Path(tmp) / "report.json"
        if not path.exists():
            print(f"no report.json written; stderr:\n{done.stderr[-2000:]}")
            return
        report = json.loads(path.read_text("utf-8"))
    print(f"{'check_id':<40} {'status':<14} {'duration_s':>10} {'examples/s':>10}")
    for check in checks_of(report):
        duration = check.get("duration_s")
        examples = check.get("examples")
        rate = "n/a"
        if isinstance(examples, int) and not isinstance(examples, bool) and duration:
            rate = f"{examples / float(duration):.1f}"
        shown = f"{float(duration):.2f}" if isinstance(duration, int | float) else "n/a"
        print(f"{check.get('check_id', '?')!s:<40} {check.get('status', '?')!s:<14} "
              f"{shown:>10} {rate:>10}")


if __name__ == "__main__":
    main()
