"""Cost of projecting a large result against the one canonical `json.dumps` it needs anyway.

The reference engine measures every result with the canonical serialization (SPEC §1), so that
pass is the floor. The projection should stay close to it: the target is a ratio of at most 2x
from 1 MB up, where a second full serialization would show. Each size is also run as a wide
result (rows labelled `wide`), thousands of preserved-field candidates at depth 3. Prints
figures; asserts nothing.

    .venv/bin/python benchmarks/bench_projection.py [--quick] [--seed N]
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import time
from collections.abc import Callable
from typing import Any

from arck.reference.projection import Projector

SIZES = {"100 KB": 100_000, "1 MB": 1_000_000, "10 MB": 10_000_000}
QUICK_SIZES = {"50 KB": 50_000, "200 KB": 200_000}
BUDGETS = (1024, 16384, 32768)
TARGET_RATIO = 2.0
TARGET_FROM_BYTES = 1_000_000

_WORDS = ("alpha", "beta", "gamma", "delta", "record", "value", "status", "search", "result")
_CJK = ("数据", "結果", "検索", "状態", "한국어", "测试", "東京", "记录")
_EMOJI = ("😀", "🚀", "👍🏽", "🇯🇵", "👨‍👩‍👧", "❤️", "🎉")
_ESCAPES = ('say "hi"', "C:\\path\\to", "line1\nline2", "tab\there", 'quote\\"mix')
_STATUSES = ("ok", "pending", "failed", "running")
_TYPES = ("document", "page", "message", "file")
TITLE_CHARS = 150


def canonical_dumps(value: Any) -> bytes:
    """The serialization SPEC.md names for sizes: the floor every projection pays once."""
    return json.dumps(
        value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")


def _text(rng: random.Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(3, 12)):
        pick = rng.random()
        if pick < 0.6:
            parts.append(rng.choice(_WORDS))
        elif pick < 0.8:
            parts.append(rng.choice(_CJK))
        elif pick < 0.9:
            parts.append(rng.choice(_EMOJI))
        else:
            parts.append(rng.choice(_ESCAPES))
    return " ".join(parts)


def _record(rng: random.Random, n: int) -> dict[str, Any]:
    return {
        "id": f"rec-{n:08d}",
        "status": rng.choice(_STATUSES),
        "score": round(rng.uniform(-1000, 1000), 6),
        "count": rng.randint(0, 10**9),
        "ratio": rng.random() / 1e7,
        "title": _text(rng),
        "body": _text(rng) + "\n" + _text(rng),
        "tags": [rng.choice(_WORDS + _CJK) for _ in range(rng.randint(0, 4))],
        "meta": {"cursor": f"c{rng.getrandbits(48):012x}", "ok": rng.random() < 0.5, "x": None},
    }


def make_result(target_bytes: int, seed: int) -> dict[str, Any]:
    """A search-like result of about `target_bytes` canonical bytes, the same for a seed."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    size = 0
    while size < target_bytes:
        record = _record(rng, len(records))
        records.append(record)
        size += len(canonical_dumps(record)) + 1
    return {
        "status": "ok",
        "id": f"result-{seed}",
        "next_cursor": f"cursor-{seed}-{len(records)}",
        "has_more": True,
        "total": len(records),
        "data": {"pages": [records[i : i + 50] for i in range(0, len(records), 50)]},
    }


def _title(rng: random.Random) -> str:
    """A title of exactly TITLE_CHARS characters (too long to be a preserved value)."""
    title = ""
    while len(title) < TITLE_CHARS:
        title += _text(rng) + " "
    return title[:TITLE_CHARS]


def make_wide_result(target_bytes: int, seed: int) -> dict[str, Any]:
    """A flat result of about `target_bytes`: `{"results": [records]}`, the same for a seed.

    Each record's id, status and type sit at depth 3, so every one is a preserved-field
    candidate (BUD-22): thousands of them, which the search-like result does not exercise.
    """
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    size = len('{"results":[]}')
    while size < target_bytes:
        record = {
            "id": f"rec-{len(records):08d}",
            "status": rng.choice(_STATUSES),
            "type": rng.choice(_TYPES),
            "title": _title(rng),
        }
        records.append(record)
        size += len(canonical_dumps(record)) + 1
    return {"results": records}


def best_ms(fn: Callable[[], object], repeats: int) -> float:
    """Best of `repeats` runs: the least disturbed by other work on the machine."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()

    projector = Projector()
    sizes = QUICK_SIZES if args.quick else SIZES
    print(f"target: project/dumps ratio <= {TARGET_RATIO:g}x from 1 MB up (best of N runs)")
    header = f"{'size':>13} {'bytes':>10} {'budget':>7} {'dumps ms':>9} {'project ms':>11}"
    print(f"{header} {'ratio':>6}  target")
    for kind, make in (("", make_result), ("wide ", make_wide_result)):
        for label, target in sizes.items():
            run(projector, f"{kind}{label}", make(target, args.seed), target)


def run(projector: Projector, label: str, result: Any, target: int) -> None:
    """Print one table row for each budget."""
    repeats = 3 if target >= 10_000_000 else 7
    dumps = best_ms(lambda: canonical_dumps(result), repeats)
    actual = len(canonical_dumps(result))
    for budget in BUDGETS:
        preview = projector.project(result, budget)
        if not preview.truncated or preview.retained_bytes > budget:
            print(f"  {label}/{budget}: not a truncated preview within budget, skipped")
            continue
        project = best_ms(functools.partial(projector.project, result, budget), repeats)
        ratio = project / dumps
        if actual < TARGET_FROM_BYTES:
            verdict = "n/a (below 1 MB)"
        else:
            verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
        print(
            f"{label:>13} {actual:>10} {budget:>7} {dumps:>9.1f} {project:>11.1f} "
            f"{ratio:>5.2f}x  {verdict}"
        )


if __name__ == "__main__":
    main()
