"""Cost of projecting a large result against the one canonical `json.dumps` it needs anyway.

The reference engine measures every result with the canonical serialization (the protocol's §1),
so that pass is the floor, and a projection that contains it cannot be faster: a ratio under 1x
is noise. So the two are timed in interleaved pairs (the order alternating), each pair gives one
ratio project/dumps, and the table reports the median ratio with its spread, never a best-of
that noise can flatter. Targets: <= 1.1x from 1 MB up, <= 1.5x below. Each size is run for a
search-like result, a wide one (many small records with id/status/type in a list) and a keyed
one (the same records keyed by id in an object, so all their fields are preserved-field
candidates). Prints figures; asserts nothing.

    .venv/bin/python benchmarks/bench_projection.py [--quick] [--seed N] [--pairs N]
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arck.reference.projection import Projector

SIZES = {"100 KB": 100_000, "1 MB": 1_000_000, "10 MB": 10_000_000}
QUICK_SIZES = {"50 KB": 50_000, "200 KB": 200_000}
BUDGETS = (1024, 16384, 32768)
LARGE_FROM_BYTES = 1_000_000
TARGET_LARGE = 1.1  # from 1 MB up, where a second serialization would show
TARGET_SMALL = 1.5  # below 1 MB, where the cut searches' fixed cost weighs more

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

    Each record's id, status and type sit at depth 3. Under revision 2026-11 every one was a
    preserved-field candidate (BUD-22), thousands of them; from 2026-12 candidates are reached
    through object members only, so these (behind an array index) are not, and the `kept`
    column shows 0 once the reference follows that revision.
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


def make_keyed_result(target_bytes: int, seed: int) -> dict[str, Any]:
    """The wide result's records keyed by id in an object: `/results/rec-…/status` is reached
    through object members, so every record's id, status and type are candidates (thousands),
    and the quarter-of-the-budget cap of BUD-22 decides how many are kept."""
    records = make_wide_result(target_bytes, seed)["results"]
    return {"results": {r["id"]: r for r in records}}


def default_pairs(target_bytes: int) -> int:
    """Enough pairs for a stable median, few enough that a 10 MB row takes seconds."""
    if target_bytes >= 10_000_000:
        return 7
    return 15 if target_bytes >= 1_000_000 else 31


def timed_ns(fn: Callable[[], object]) -> int:
    """One run of `fn`, in ns, with no garbage collection started inside it."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        fn()
        return time.perf_counter_ns() - start
    finally:
        gc.enable()


@dataclass(frozen=True)
class Paired:
    """Ratios project/dumps of interleaved pairs, and the median times of each side."""

    ratios: list[float]
    dumps_ms: float
    project_ms: float

    def quartiles(self) -> tuple[float, float, float]:
        if len(self.ratios) < 2:
            return (self.ratios[0],) * 3
        q1, median, q3 = statistics.quantiles(self.ratios, n=4, method="inclusive")
        return q1, median, q3


def paired(dumps: Callable[[], object], project: Callable[[], object], pairs: int) -> Paired:
    """Time `pairs` pairs, alternating which side goes first, after one warm-up of each.

    Both sides of a pair see the same machine state (load, caches, frequency), so their ratio
    cancels most of what makes a single timing drift.
    """
    dumps()
    project()
    ratios: list[float] = []
    dumps_ns: list[int] = []
    project_ns: list[int] = []
    for i in range(pairs):
        if i % 2 == 0:
            d, p = timed_ns(dumps), timed_ns(project)
        else:
            p, d = timed_ns(project), timed_ns(dumps)
        dumps_ns.append(d)
        project_ns.append(p)
        ratios.append(p / d)
    return Paired(ratios, statistics.median(dumps_ns) / 1e6, statistics.median(project_ns) / 1e6)


def verdict(stats: Paired, target: float) -> str:
    """Judged on the median; "borderline" when the interquartile range holds the target."""
    q1, median, q3 = stats.quartiles()
    text = "met" if median <= target else "NOT met"
    return f"{text} (borderline)" if q1 <= target < q3 else text


HEADER = (
    f"{'size':>7} {'bytes':>10} {'budget':>6} {'kept':>4} {'dumps ms':>9} {'proj ms':>9} "
    f"{'median':>7} {'IQR':>13} {'min-max':>13} {'pairs':>5} {'target':>6}  verdict"
)


def run(projector: Projector, label: str, result: Any, pairs: int | None) -> None:
    """Print one table row for each budget."""
    actual = len(canonical_dumps(result))
    target = TARGET_LARGE if actual >= LARGE_FROM_BYTES else TARGET_SMALL
    n = pairs or default_pairs(actual)
    for budget in BUDGETS:
        preview = projector.project(result, budget)
        if not preview.truncated or preview.retained_bytes > budget:
            print(f"  {label}/{budget}: not a truncated preview within budget, skipped")
            continue
        kept = len(preview.result.get("preserved_fields", {}))
        project = functools.partial(projector.project, result, budget)
        stats = paired(functools.partial(canonical_dumps, result), project, n)
        q1, median, q3 = stats.quartiles()
        spread = f"{q1:.2f}-{q3:.2f}x"
        extremes = f"{min(stats.ratios):.2f}-{max(stats.ratios):.2f}x"
        print(
            f"{label:>7} {actual:>10} {budget:>6} {kept:>4} {stats.dumps_ms:>9.1f} "
            f"{stats.project_ms:>9.1f} {median:>6.2f}x {spread:>13} {extremes:>13} {n:>5} "
            f"{target:>5.1f}x  {verdict(stats, target)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--pairs", type=int, help="pairs per row (default: by size)")
    args = parser.parse_args()

    projector = Projector()
    sizes = QUICK_SIZES if args.quick else SIZES
    print(
        f"ratio = project/dumps per interleaved pair; median, interquartile range, min-max. "
        f"Targets: <= {TARGET_LARGE:g}x from 1 MB up, <= {TARGET_SMALL:g}x below. "
        "kept = preserved fields in the preview."
    )
    kinds = (("search-like", make_result), ("wide", make_wide_result),
             ("keyed", make_keyed_result))
    for kind, make in kinds:
        print(f"\n{kind} rows\n{HEADER}")
        for label, target in sizes.items():
            run(projector, label, make(target, args.seed), args.pairs)


if __name__ == "__main__":
    main()
