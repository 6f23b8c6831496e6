"""benchmarks/bench_runs.py still runs against the engine as it is: a smoke run at a tiny size.

It checks that every section produced its figures and that every run completed; it never
looks at a timing (benchmarks/README.md: figures, not timed tests).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_runs.py"


def test_bench_runs_quick_produces_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "runs.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--lengths", "4,10", "--sessions", "1",
         "--runs", "10", "--batch", "5", "--concurrent", "10", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out.read_text("utf-8"))
    assert figures["machine"]["cores"]
    history = figures["history"]
    assert [row["messages"] for row in history["rows"]] == [4, 10]
    assert history["end_reasons"] == {"completed": 5}
    assert all(row["body_bytes"] > 0 and row["serialized_bytes"] > 0 for row in history["rows"])
    assert figures["throughput"]["end_reasons"] == {"completed": 10}
    memory = figures["memory"]
    assert [(row["mode"], row.get("error")) for row in memory] == [
        ("queued", None), ("inflight", None)]
    for row in memory:
        assert row["ended_before_all_created"] == 0
        assert row["end_reasons"] == {"completed": 10}
        assert row["traced_peak"] > 0
        assert row["peak_rss"] > 0
        assert row["ru_maxrss"] > 0
    assert memory[1]["peak_model_calls_in_flight"] == 10
