"""The cost of one pacing and policy decision per dispatch (CAP-08, issue 18 §6).

What the workers do for each tool call they dispatch (`Workers._paced`): take the binding's
declared policy (read and parsed once per binding: bindings never change), read its local
policy and tighten by it (`localpolicy.tightened`), and ask the sliding window
(`pacing.admit`: one indexed SELECT read backwards, and an INSERT when admitted), inside the
step's open write transaction. N dispatches at virtual times
`step_ms` apart, on an in-memory store; beside them, in the same run, a bare dictionary
lookup per dispatch, so the figure is a ratio as well as microseconds. Prints a table, or
JSON with --json; never asserts a timing (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import time
from typing import Any

from arck.reference.capability import ExecutionPolicy, effective
from arck.reference.localpolicy import declaration_of, tightened
from arck.reference.runtime import pacing
from arck.reference.store import Store

TENANT = "bench"


def _decisions(store: Store, binding_id: str, dispatches: int, step_ms: int) -> dict[str, Any]:
    admitted = paced = 0
    declared: dict[str, ExecutionPolicy] = {}
    gc.collect()
    gc.disable()
    try:
        with store.transaction() as db:
            started = time.perf_counter_ns()
            for n in range(dispatches):
                if binding_id not in declared:
                    binding = store.binding(TENANT, binding_id)
                    assert binding is not None
                    declared[binding_id] = effective(binding_id, declaration_of(binding))
                policy = tightened(declared[binding_id], store.local_policy(binding_id))
                waited = pacing.admit(db, TENANT, policy, n * step_ms / 1000, f"s/{n}")
                admitted, paced = admitted + (waited is None), paced + (waited is not None)
            elapsed = time.perf_counter_ns() - started
    finally:
        gc.enable()
    return {"ns": elapsed, "admitted": admitted, "paced": paced}


def _lookups(dispatches: int) -> int:
    table = {f"bnd-{n:06d}": n for n in range(64)}
    keys = [f"bnd-{n % 64:06d}" for n in range(dispatches)]
    found = 0
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter_ns()
        for key in keys:
            found += table[key]
        elapsed = time.perf_counter_ns() - started
    finally:
        gc.enable()
    assert found >= 0
    return elapsed


def measure(dispatches: int, step_ms: int, count: int, window: str, rounds: int) -> dict[str, Any]:
    rows = []
    for _ in range(rounds):
        store = Store(":memory:")
        store.install(pacing.SCHEMA)
        binding = store.add_binding(TENANT, "notify", "", {
            "version": 1, "enabled": True, "scope": "notify.send",
            "execution": {"rate_limit": {"count": count, "window": window}}})
        decided = _decisions(store, binding.binding_id, dispatches, step_ms)
        bare = _lookups(dispatches)
        rows.append({**decided, "bare_ns": bare})
        store.close()
    per = [r["ns"] / dispatches / 1000 for r in rows]
    bare = [r["bare_ns"] / dispatches / 1000 for r in rows]
    ratios = [r["ns"] / r["bare_ns"] for r in rows]
    return {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "load": os.getloadavg()},
        "settings": {"dispatches": dispatches, "step_ms": step_ms, "count": count,
                     "window": window, "rounds": rounds},
        "admitted": rows[-1]["admitted"], "paced": rows[-1]["paced"],
        "decision_us": statistics.median(per), "bare_lookup_us": statistics.median(bare),
        "ratio": statistics.median(ratios), "rounds": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dispatches", type=int, default=10_000)
    parser.add_argument("--step-ms", type=int, default=7, help="virtual ms between dispatches")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--window", default="1s")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args()
    found = measure(args.dispatches, args.step_ms, args.count, args.window, args.rounds)
    print(f"cores {found['machine']['cores']}, Python {found['machine']['python']}, "
          f"load {found['machine']['load'][0]:.2f}")
    print(f"{args.dispatches} dispatches {args.step_ms} ms apart, {args.count} per "
          f"{args.window}: {found['admitted']} admitted, {found['paced']} paced")
    print(f"one decision: {found['decision_us']:.1f} µs (median of {args.rounds}); a bare dict "
          f"lookup: {found['bare_lookup_us']:.3f} µs; ratio {found['ratio']:.0f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(found, out, indent=1)


if __name__ == "__main__":
    main()
