"""benchmarks/bench_receipts.py still runs against the engine as it is: a smoke run at a tiny
size (`arck serve` on a temporary SQLite file, a few runs waiting on tool calls).

It checks that every figure is there, that every receipt was answered as expected and every
run completed; it never looks at a timing (benchmarks/README.md: figures, not timed tests).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_receipts.py"


def test_bench_receipts_quick_produces_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "receipts.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--runs", "2", "--calls", "3",
         "--clients", "1,2", "--raw", "20", "--probe", "5", "--batch", "10",
         "--dir", str(tmp_path), "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out.read_text("utf-8"))
    assert figures["machine"]["cores"]
    raw = figures["raw"]
    assert raw["settings"]["journal_mode"] == "delete"
    assert raw["settings"]["synchronous"] == 2  # FULL: what the reference's Store leaves set
    assert raw["single"]["rows"] == 20
    assert raw["batched"]["rows"] == 200
    assert raw["single"]["per_s"] > 0
    assert raw["batched"]["per_s"] > 0
    modes = figures["http"]["modes"]
    assert [row["clients"] for row in modes] == [1, 2]
    for row in modes:
        assert row["end_reasons"] == {"completed": 2}
        for phase in (row["accepted"], row["final"]):
            assert phase["receipts"] == 6
            assert phase["error_count"] == 0
            assert phase["per_s"] > 0
        assert row["rows_inserted_per_final"]["receipts"] == 1.0
        assert row["commits_per_final"] > 0
        assert all(probe > 0 for probe in row["raw_around"])
    assert "ratio" in done.stdout
    assert not list(tmp_path.glob("bench-receipts-*"))  # the temporary directory is gone
