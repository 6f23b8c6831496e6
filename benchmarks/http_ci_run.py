"""The whole suite at profile ci against `arck serve --test-clock` over HTTP: does any check
come out "not testable"?

In-process runs cost a check milliseconds per request; over a socket each request costs a
round trip, and a check that asks for many examples can run past `--check-timeout` and be
reported "not testable" although the service did nothing wrong (issue 17's stateful
conversations did, at 120 s). This starts `arck serve --test-clock` on loopback (a database
file in a temporary folder), writes a target file with the `[provider]` section and the
`test-clock` capability, runs `arck run --profile ci` against it, and prints the wall time, the
verdict counts and every check that was not testable or stopped at its time budget. Exit 1
when any check was not testable. A figure, not a CI test: it takes about a quarter of an hour.

    .venv/bin/python benchmarks/http_ci_run.py [--seed N] [--check-timeout S] [--workers N]
        [--requirements IDS] [--report-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

TOKEN = "arck-dev-full"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_healthy(url: str, process: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"arck serve exited with {process.returncode} before it answered")
        try:
            answer = httpx.get(f"{url}/v1/health", headers={"Authorization": f"Bearer {TOKEN}"})
            if answer.status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"arck serve did not answer /v1/health at {url} within {seconds:g} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check-timeout", type=float, default=120.0)
    parser.add_argument("--workers", help="passed on to arck run --workers")
    parser.add_argument("--requirements", help="passed on to arck run --requirements")
    parser.add_argument("--report-dir", type=Path,
                        help="keep the report here (default: a temporary folder, removed)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="arck-http-ci-") as tmp:
        folder = Path(tmp)
        port, provider_port = free_port(), free_port()
        url = f"http://127.0.0.1:{port}"
        log = (folder / "serve.log").open("wb")
        serve = subprocess.Popen(
            [sys.executable, "-m", "arck.conformance.cli", "serve", "--port", str(port),
             "--db", str(folder / "arck.db"), "--test-clock",
             "--provider-url", f"http://127.0.0.1:{provider_port}/v1"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            wait_healthy(url, serve)
            config = folder / "target.toml"
            config.write_text(
                f'[target]\nbase_url = "{url}"\nprofile = "reference"\n'
                'capabilities = ["test-clock"]\n\n'
                f'[provider]\nlisten = "127.0.0.1:{provider_port}"\n',
                "utf-8",
            )
            report_dir = args.report_dir or folder / "report"
            command = [
                sys.executable, "-m", "arck.conformance.cli", "run", "--target", url,
                "--config", str(config), "--profile", "ci", "--seed", str(args.seed),
                "--check-timeout", f"{args.check_timeout:g}", "--report-dir", str(report_dir),
            ]  # fmt: skip
            if args.workers:
                command += ["--workers", args.workers]
            if args.requirements:
                command += ["--requirements", args.requirements]
            start = time.monotonic()
            done = subprocess.run(command, env={**os.environ, "CI": "true"}, check=False)
            wall = time.monotonic() - start
        finally:
            serve.terminate()
            serve.wait(timeout=30)
            log.close()
        report = json.loads((report_dir / "report.json").read_text("utf-8"))
    checks = report["checks"]
    counts = Counter(c["status"] for c in checks)
    print(f"\nprofile ci over HTTP against arck serve --test-clock, seed {args.seed}: "
          f"{len(checks)} checks in {wall:.0f} s, exit {done.returncode}")  # fmt: skip
    print("  " + ", ".join(f"{status} {n}" for status, n in sorted(counts.items())))
    slowest = sorted(checks, key=lambda c: c.get("duration_s", 0), reverse=True)[:5]
    for c in slowest:
        print(f"  slowest: {c['check_id']} {c['duration_s']:.0f} s, {c.get('examples')} inputs")
    for c in checks:
        if "time budget" in c.get("message", ""):
            print(f"  stopped at its time budget: {c['check_id']} ({c['examples']} inputs)")
    untestable = [c for c in checks if c["status"] == "not_testable"]
    for c in untestable:
        print(f"  NOT TESTABLE: {c['check_id']}: {c['message'][:300]}")
    return 1 if untestable else 0


if __name__ == "__main__":
    sys.exit(main())
