"""benchmarks/bench_pacing.py still runs against the engine as it is: a smoke run at a tiny
size. It checks that every figure is there and that the window admitted exactly what a sliding
window of the settings admits; it never looks at a timing (benchmarks/README.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_pacing.py"


def test_bench_pacing_produces_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "pacing.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--dispatches", "300", "--step-ms", "7", "--count", "10",
         "--window", "100ms", "--rounds", "2", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out.read_text("utf-8"))
    # 7 ms apart, 100 ms windows: 15 dispatch times in (t − 100, t], so each window holds its
    # 10 admitted and pacing refuses 5 in every 15 once the first window has filled
    assert figures["admitted"] + figures["paced"] == 300
    assert figures["admitted"] == 200
    assert figures["decision_us"] > 0
    assert figures["bare_lookup_us"] > 0
    assert figures["ratio"] > 0
    assert len(figures["rounds"]) == 2
