"""Runs in the reference engine, in-process on a virtual clock: what a model call costs the
engine as the history grows, how many runs complete per second, and memory with many runs open.

Three sections (docs/runs.md; issue 10 §7), all through the HTTP app with
`create_app(clock=VirtualClock(), provider_transport=provider.async_transport())`:

1. history: sessions driven turn by turn (a user message, a scripted text answer) to the longest
   history asked up to 1,000 messages; longer ones (10,000) seeded through the engine's own
   `append`, then driven for 10 turns. Every model call of the engine is timed
   (`Workers.step`, less the time spent inside the provider call), with the bytes of the
   request body it builds, the time of `Workers._body` and of the SQLite reads inside it (and
   the rows they return), and the bytes it serializes with `canonical_text`.
2. throughput: one-call runs on many sessions, queued in batches; runs completed per second.
3. memory: N runs created before any completes, each child process measuring one size, the
   engine's two workers (`queued`) or one worker per run (`inflight`: all N model calls waiting
   on a provider `SlowAnswer` at once); peak RSS (VmHWM, and getrusage's ru_maxrss), and
   tracemalloc's peak in a separate child.

Prints figures; asserts nothing (a loaded machine gives slow numbers, not failures).

    .venv/bin/python benchmarks/bench_runs.py            # 10 to 10,000 messages; 1,000, 10,000 runs
    .venv/bin/python benchmarks/bench_runs.py --quick    # a smoke run of a few seconds
    .venv/bin/python benchmarks/bench_runs.py --json runs.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from arck.reference.app import create_app
from arck.reference.runtime import runstore as runstore_module
from arck.reference.runtime import worker as worker_module
from arck.reference.runtime.worker import Workers
from arck.simulator.clock import VirtualClock
from arck.simulator.provider import SimulatedProvider, SlowAnswer, Step, script_tag

FULL = {"Authorization": "Bearer arck-dev-full"}
PRICES = {"input": 2_000_000, "cached_input": 500_000, "output": 8_000_000}
CHANNEL = {"name": "main", "model": "sim-1", "input_capacity": 100_000,
           "total_capacity": 128_000, "output_capacity": 4_000, "timeout_ms": 30_000,
           "prices": PRICES}
LONG_WINDOW = 2_000_000  # section 1: 10,000 short messages are about 200,000 tokens
LONG_CHANNEL = {**CHANNEL, "input_capacity": LONG_WINDOW,
                "total_capacity": LONG_WINDOW + 4_000}
SCHEMA = {"type": "object"}
DRIVEN = 1_000  # section 1: histories up to this long are driven turn by turn from empty
SEEDED_TURNS = 10  # longer ones are seeded, then this many turns a session are driven
FUNDS = 10**15  # one deposit's maximum: about 4 billion reservations of this channel
SLOW_SECONDS = 10.0  # below the channel's 30 s timeout, so slow calls complete
MEMORY_TARGET_BYTES = 2 * 1024**3
ANSWER = "Noted; the order is on its way."

_current: contextvars.ContextVar[CallFigures | None] = contextvars.ContextVar(
    "bench_runs_call", default=None)
_in_body: contextvars.ContextVar[bool] = contextvars.ContextVar("bench_runs_body", default=False)


@dataclass
class CallFigures:
    """One model call of the engine, as `Workers.step` made it."""

    run_id: str
    messages: int = 0  # messages in the request (the execution history)
    step_ns: int = 0  # the whole step: estimate, reserve, build, send, settle, apply
    provider_ns: int = 0  # inside `ModelClient.complete`: httpx and the simulated provider
    simulator_ns: int = 0  # of which inside `SimulatedProvider.complete` (the model's side)
    body_ns: int = 0  # `Workers._body`: the history read and the join
    history_ns: int = 0  # of which SQLite reads (`Store.read` called inside `Workers._body`)
    rows_read: int = 0  # rows those reads returned
    body_bytes: int = 0  # bytes of the request body built
    serialized_bytes: int = 0  # bytes `canonical_text` produced during the step

    @property
    def engine_ns(self) -> int:
        return self.step_ns - self.provider_ns


# -- instrumentation (wrappers on one app's objects; the engine's code is not changed) ------


class Probe:
    """Times every step of one app's workers and tells when a run's step is done."""

    def __init__(self, workers: Workers, provider: SimulatedProvider, runtime: Any) -> None:
        self.calls: list[CallFigures] = []
        self.scheduling_ns = 0  # claims, lease and reconciliation look-ups of the workers
        self.create_ns = 0  # `Runtime.create_run`: admission and queueing, past the HTTP layer
        self.in_flight = 0
        self.peak_in_flight = 0
        self.finished = 0
        self._waiters: dict[str, asyncio.Future[None]] = {}
        self._target: tuple[int, asyncio.Event] | None = None
        self._wrap(workers)
        self._wrap_more(workers, provider, runtime)

    def _wrap_more(self, workers: Workers, provider: SimulatedProvider, runtime: Any) -> None:
        simulate, create_run = provider.complete, runtime.create_run
        runs = workers.runs
        runs.claim = self.scheduling(runs.claim)  # type: ignore[method-assign]
        runs.next_lease_expiry = self.scheduling(  # type: ignore[method-assign]
            runs.next_lease_expiry)

        async def timed_simulate(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter_ns()
            try:
                return await simulate(*args, **kwargs)
            finally:
                figures = _current.get()
                if figures is not None:
                    figures.simulator_ns += time.perf_counter_ns() - start

        def timed_create(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter_ns()
            try:
                return create_run(*args, **kwargs)
            finally:
                self.create_ns += time.perf_counter_ns() - start

        provider.complete = timed_simulate  # type: ignore[method-assign]
        runtime.create_run = timed_create

    def scheduling(self, method: Callable[..., Any]) -> Callable[..., Any]:
        """A worker's work between steps: claims, lease and reconciliation look-ups."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter_ns()
            try:
                return method(*args, **kwargs)
            finally:
                self.scheduling_ns += time.perf_counter_ns() - start

        return timed

    def async_scheduling(self, method: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter_ns()
            try:
                return await method(*args, **kwargs)
            finally:
                self.scheduling_ns += time.perf_counter_ns() - start

        return timed

    def _wrap(self, workers: Workers) -> None:
        step, complete = workers.step, workers.model.complete
        body, read = workers._body, workers.store.read

        async def timed_step(run_id: str, *args: Any, **kwargs: Any) -> None:
            figures = CallFigures(run_id)
            token = _current.set(figures)
            start = time.perf_counter_ns()
            try:
                await step(run_id, *args, **kwargs)
            finally:
                figures.step_ns = time.perf_counter_ns() - start
                _current.reset(token)
                self.calls.append(figures)
                self.finished += 1
                self._future(run_id).set_result(None)
                if self._target is not None and self.finished >= self._target[0]:
                    self._target[1].set()

        async def timed_complete(*args: Any, **kwargs: Any) -> Any:
            figures = _current.get()
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            start = time.perf_counter_ns()
            try:
                return await complete(*args, **kwargs)
            finally:
                self.in_flight -= 1
                if figures is not None:
                    figures.provider_ns += time.perf_counter_ns() - start

        def timed_body(session: Any, *args: Any, **kwargs: Any) -> bytes:
            token = _in_body.set(True)
            start = time.perf_counter_ns()
            try:
                built = body(session, *args, **kwargs)
            finally:
                elapsed = time.perf_counter_ns() - start
                _in_body.reset(token)
            figures = _current.get()
            if figures is not None:
                figures.body_ns += elapsed
                figures.body_bytes = len(built)
                figures.messages = session.exec_count
            return built

        def timed_read(*args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
            if not _in_body.get():
                return read(*args, **kwargs)
            start = time.perf_counter_ns()
            rows = read(*args, **kwargs)
            figures = _current.get()
            if figures is not None:
                figures.history_ns += time.perf_counter_ns() - start
                figures.rows_read += len(rows)
            return rows

        workers.step = timed_step  # type: ignore[method-assign]
        workers.model.complete = timed_complete  # type: ignore[method-assign]
        workers._body = timed_body  # type: ignore[method-assign]
        workers.store.read = timed_read  # type: ignore[method-assign]

    def _future(self, run_id: str) -> asyncio.Future[None]:
        if run_id not in self._waiters:
            self._waiters[run_id] = asyncio.get_running_loop().create_future()
        return self._waiters[run_id]

    async def done(self, run_id: str) -> None:
        """Until the step of this run has returned (one-call runs: the run has ended)."""
        await self._future(run_id)
        del self._waiters[run_id]

    async def until_finished(self, count: int) -> None:
        """Until `count` steps in all have returned."""
        event = asyncio.Event()
        self._target = (count, event)
        if self.finished < count:
            await event.wait()
        self._target = None


class _CountingCanonical:
    """Counts the bytes `canonical_text` writes inside a timed step (worker and run store)."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, Any]] = []

    def __enter__(self) -> None:
        for module in (worker_module, runstore_module):
            original = module.canonical_text

            def counted(value: Any, _original: Callable[[Any], str] = original) -> str:
                text = _original(value)
                figures = _current.get()
                if figures is not None:
                    figures.serialized_bytes += len(text.encode("utf-8"))
                return text

            self._saved.append((module, original))
            module.canonical_text = counted  # type: ignore[attr-defined]

    def __exit__(self, *exc: object) -> None:
        for module, original in self._saved:
            module.canonical_text = original
        self._saved.clear()


# -- the world --------------------------------------------------------------------------------


@dataclass
class World:
    client: httpx.AsyncClient
    provider: SimulatedProvider
    clock: VirtualClock
    workers: Workers
    probe: Probe
    app: Any
    version: str = ""
    wallet: str = ""

    async def post(self, path: str, body: Any, status: int = 201) -> Any:
        response = await self.client.post(path, json=body)
        if response.status_code != status:
            raise RuntimeError(f"POST {path}: {response.status_code} {response.text[:300]}")
        return response.json()

    async def configure(self, script: str, long: bool = False) -> None:
        """One tool, one channel, one version whose system prompt names `script`; one wallet.
        `long`: a channel and version whose window holds 10,000 messages below 70%."""
        binding = await self.post("/v1/bindings", {"name": "orders"})
        tool = {"name": "lookup", "description": "Read an order.",
                "binding_id": binding["binding_id"], "input_schema": SCHEMA,
                "output_schema": SCHEMA, "max_result_context_bytes": 1024}
        tool_set = await self.post("/v1/tool-sets", {"name": "t", "tools": [tool]})
        channel = await self.post("/v1/channels", LONG_CHANNEL if long else CHANNEL)
        version = await self.post("/v1/agents/agent-1/versions", {
            "tool_set_id": tool_set["tool_set_id"], "channel_id": channel["channel_id"],
            "system_prompt": f"You track orders for customers. {script_tag(script)}",
            **({"max_context_tokens": LONG_WINDOW} if long else {})})
        self.version = str(version["agent_version"])
        wallet = await self.post("/v1/wallets", {"name": "bench"})
        self.wallet = str(wallet["wallet_id"])
        await self.post(f"/v1/wallets/{self.wallet}/deposits", {"amount": FUNDS}, 200)

    async def session(self) -> str:
        answer = await self.post("/v1/sessions", {"agent_version": self.version,
                                                  "wallet_id": self.wallet})
        return str(answer["session_id"])

    async def run(self, session_id: str, text: str) -> str:
        answer = await self.post(f"/v1/sessions/{session_id}/runs", {"input": text})
        if answer["state"] != "queued":
            raise RuntimeError(f"run not queued: {answer}")
        return str(answer["run_id"])

    def end_reasons(self) -> dict[str, int]:
        rows = self.workers.store.read(
            "SELECT COALESCE(end_reason, state), COUNT(*) FROM runs GROUP BY 1")
        return {str(reason): int(count) for reason, count in rows}

    def database_bytes(self) -> int:
        pages = self.workers.store.read("PRAGMA page_count")[0][0]
        size = self.workers.store.read("PRAGMA page_size")[0][0]
        return int(pages) * int(size)


class _ProbedWorkers(Workers):
    """The engine's workers, through create_app's `workers_class` seam, with their
    reconciliation look-ups timed once `start` has made the reconciler; `count` and `held`
    serve the `inflight` mode of section 3."""

    probe: Probe | None = None
    count_override: int | None = None
    held = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.count_override is not None:
            kwargs["count"] = self.count_override
        super().__init__(*args, **kwargs)

    def start(self) -> None:
        wrapped = self.reconciler is not None
        super().start()
        reconciler: Any = self.reconciler
        if self.probe is not None and reconciler is not None and not wrapped:
            reconciler.schedule = self.probe.scheduling(reconciler.schedule)
            reconciler.reconcile_due = self.probe.async_scheduling(reconciler.reconcile_due)

    def notify(self) -> None:
        """Held (`inflight` mode), the workers are not woken while the runs are created:
        with one worker per run, waking all of them for each run would cost N^2 claims."""
        if not self.held:
            super().notify()


@asynccontextmanager
async def world(count: int | None = None, held: bool = False) -> AsyncIterator[World]:
    clock = VirtualClock()
    provider = SimulatedProvider(clock=clock, seed=0)
    workers_class = type("Probed", (_ProbedWorkers,), {"count_override": count, "held": held})
    app = create_app(clock=clock, provider_transport=provider.async_transport(),
                     workers_class=workers_class)
    workers: Workers = app.state.runtime.workers
    probe = Probe(workers, provider, app.state.runtime)
    assert isinstance(workers, _ProbedWorkers)
    workers.probe = probe
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://reference.test", headers=FULL) as client:
        try:
            yield World(client, provider, clock, workers, probe, app)
        finally:
            await app.state.runtime.aclose()


# -- figures ----------------------------------------------------------------------------------


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return (values[0],) * 3 if values else (float("nan"),) * 3
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


def linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x: (a, b)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my - b * mx, b


def machine() -> dict[str, Any]:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"cores": os.cpu_count(), "usable_cores": affinity,
            "python": platform.python_version(), "implementation": platform.python_implementation(),
            "platform": platform.platform(), "load_average": list(os.getloadavg())}


def _status(field: str) -> int | None:
    """A size from /proc/self/status, in bytes (Linux), or None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def rss_now() -> int | None:
    """Resident set size now (VmRSS)."""
    return _status("VmRSS")


def peak_rss() -> int:
    """This process's peak RSS: VmHWM where there is one, else ru_maxrss.

    ru_maxrss survives execve on Linux, so a child started from a large parent reports the
    parent's size (the forked copy) as its own peak; VmHWM belongs to the new image only.
    """
    return _status("VmHWM") or max_rss()


def max_rss() -> int:
    """The process's peak resident set size so far, in bytes (ru_maxrss is KiB on Linux)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 1e6:.1f}"


# -- 1. request preparation against history length -------------------------------------------


def window(length: int) -> tuple[int, int]:
    """Calls counted at `length`: histories of length - max(4, length // 10) up to length."""
    return length - max(4, length // 10), length


def question(turn: int, customer: int) -> str:
    return f"Question {turn} of customer {customer}: where is my order?"


def seed(w: World, session_id: str, customer: int, messages: int) -> None:
    """Fill a new session's histories to `messages` execution messages (system prompt, then
    question and answer pairs, as the driven turns store them), with the engine's own
    `append`, in one transaction: the long histories of section 1 without driving the
    thousands of turns (and the simulated provider's growing cost) it would take."""
    with w.workers.store.transaction() as db:
        for turn in range((messages - 1) // 2):
            runstore_module.append(db, session_id, "execution",
                                   {"role": "user", "content": question(turn, customer)})
            runstore_module.append(db, session_id, "formal",
                                   {"type": "user", "text": question(turn, customer)})
            runstore_module.append(db, session_id, "execution",
                                   {"role": "assistant", "content": ANSWER})
            runstore_module.append(db, session_id, "formal",
                                   {"type": "assistant", "text": ANSWER})


async def history_section(lengths: list[int], sessions: int) -> dict[str, Any]:
    driven = [n for n in lengths if n <= DRIVEN]
    seeded = sorted(n for n in lengths if n > DRIVEN)
    turns = max(driven, default=0) // 2  # the first call: system + user; a turn adds 2
    steps = (turns + SEEDED_TURNS * len(seeded)) * sessions + 1
    async with world() as w:
        w.provider.add_script("talk", [Step(text=ANSWER)] * steps)
        await w.configure("talk", long=True)
        ids = [await w.session() for _ in range(sessions)]
        gc.collect()
        gc.disable()  # the engine's own work per call, not collections of the whole heap
        wall = time.perf_counter()
        try:
            with _CountingCanonical():
                for turn in range(turns):
                    for s, session_id in enumerate(ids):
                        run_id = await w.run(session_id, question(turn, s))
                        await w.probe.done(run_id)
                for length in seeded:
                    # The last of SEEDED_TURNS calls sends `length` messages; the first of
                    # each session builds its prepared messages from the store (a cold call).
                    start = length - 2 * SEEDED_TURNS + 1
                    long_ids = [await w.session() for _ in range(sessions)]
                    for s, session_id in enumerate(long_ids):
                        seed(w, session_id, s, start)
                    for turn in range(SEEDED_TURNS):
                        for s, session_id in enumerate(long_ids):
                            run_id = await w.run(session_id, question(start // 2 + turn, s))
                            await w.probe.done(run_id)
        finally:
            gc.enable()
        wall = time.perf_counter() - wall
        reasons = w.end_reasons()
    calls = w.probe.calls
    rows = []
    for length in lengths:
        low, high = window(length)
        picked = [c for c in calls if low <= c.messages <= high]
        if not picked:
            continue

        def med(values: list[float]) -> float:
            return statistics.median(values)

        q1, engine, q3 = quartiles([c.engine_ns / 1e3 for c in picked])
        rows.append({
            "messages": length, "window": [low, high], "calls": len(picked),
            "engine_us": engine, "engine_us_q1": q1, "engine_us_q3": q3,
            "body_us": med([c.body_ns / 1e3 for c in picked]),
            "history_read_us": med([c.history_ns / 1e3 for c in picked]),
            "rows_read": med([float(c.rows_read) for c in picked]),
            "provider_us": med([c.provider_ns / 1e3 for c in picked]),
            "body_bytes": med([float(c.body_bytes) for c in picked]),
            "serialized_bytes": med([float(c.serialized_bytes) for c in picked]),
        })
    a, b = linear_fit([float(c.messages) for c in calls], [c.engine_ns / 1e3 for c in calls])
    ba, bb = linear_fit([float(c.messages) for c in calls], [c.body_ns / 1e3 for c in calls])
    return {"sessions": sessions, "turns_per_session": turns, "seeded": seeded,
            "seeded_turns": SEEDED_TURNS, "calls": len(calls),
            "wall_s": wall, "end_reasons": reasons, "rows": rows,
            "fit_engine_us": {"fixed": a, "per_message": b},
            "fit_body_us": {"fixed": ba, "per_message": bb}}


def print_history(result: dict[str, Any]) -> None:
    rows = result["rows"]
    print(f"\n1. Request preparation against history length ({result['sessions']} sessions x "
          f"{result['turns_per_session']} turns, {result['calls']} model calls, "
          f"{result['wall_s']:.1f} s wall; GC off while driving; end reasons "
          f"{result['end_reasons']})")
    if result["seeded"]:
        print(f"   seeded (then {result['seeded_turns']} turns a session driven): "
              f"{', '.join(str(n) for n in result['seeded'])} messages")
    print("   engine = Workers.step less the provider call; body = Workers._body "
          "(history read + join); read = its SQLite reads, rows = rows they returned; "
          "medians over the calls in the window")
    print(f"   {'messages':>8} {'window':>11} {'calls':>5} {'engine us':>10} {'IQR us':>15} "
          f"{'body us':>8} {'read us':>8} {'rows':>5} {'provider us':>11} {'body bytes':>10} "
          f"{'serialized':>10}")
    for r in rows:
        iqr = f"{r['engine_us_q1']:.0f}-{r['engine_us_q3']:.0f}"
        print(f"   {r['messages']:>8} {r['window'][0]:>5}-{r['window'][1]:<5} {r['calls']:>5} "
              f"{r['engine_us']:>10.0f} {iqr:>15} {r['body_us']:>8.0f} "
              f"{r['history_read_us']:>8.0f} {r['rows_read']:>5.0f} {r['provider_us']:>11.0f} "
              f"{r['body_bytes']:>10.0f} {r['serialized_bytes']:>10.0f}")
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        print(f"   engine per call at {last['messages']} / at {first['messages']} messages: "
              f"{last['engine_us'] / first['engine_us']:.2f}x; body build "
              f"{last['body_us'] / first['body_us']:.1f}x; body bytes "
              f"{last['body_bytes'] / first['body_bytes']:.1f}x; bytes serialized "
              f"{last['serialized_bytes'] / first['serialized_bytes']:.2f}x")
    fit, body = result["fit_engine_us"], result["fit_body_us"]
    print(f"   least squares over every call: engine {fit['fixed']:.0f} us + "
          f"{fit['per_message']:.2f} us per stored message; body {body['fixed']:.0f} us + "
          f"{body['per_message']:.2f} us per stored message")


# -- 2. runs completed per second -------------------------------------------------------------


async def throughput_section(runs: int, batch: int) -> dict[str, Any]:
    async with world() as w:
        await w.configure("none")  # names no script: every call gets a plain text answer
        start = time.perf_counter()
        ids = [await w.session() for _ in range(runs)]
        sessions_s = time.perf_counter() - start
        batches: list[dict[str, float]] = []
        start = time.perf_counter()
        for first in range(0, runs, batch):
            began, before = time.perf_counter(), len(w.probe.calls)
            scheduling_ns, create_ns = w.probe.scheduling_ns, w.probe.create_ns
            run_ids = [await w.run(s, f"Hello {i}") for i, s in
                       enumerate(ids[first:first + batch], first)]
            for run_id in run_ids:
                await w.probe.done(run_id)
            took = time.perf_counter() - began
            done = w.probe.calls[before:]
            batches.append({"runs": len(run_ids), "wall_s": took,
                            "engine_ms": sum(c.engine_ns for c in done) / 1e6,
                            "simulator_ms": sum(c.simulator_ns for c in done) / 1e6,
                            "scheduling_ms": (w.probe.scheduling_ns - scheduling_ns) / 1e6,
                            "create_ms": (w.probe.create_ns - create_ns) / 1e6})
        wall = time.perf_counter() - start
        reasons = w.end_reasons()
    for b in batches:
        b["other_ms"] = b["wall_s"] * 1e3 - sum(b[k] for k in PARTS)
    per_run = {f"{k}_per_run": sum(b[k] for b in batches) / runs for k in (*PARTS, "other_ms")}
    return {"runs": runs, "batch": batch, "wall_s": wall, "runs_per_s": runs / wall,
            "sessions_per_s": runs / sessions_s, "end_reasons": reasons, **per_run,
            "first_batch": _batch_view(batches[0]), "last_batch": _batch_view(batches[-1]),
            "batches": batches}


PARTS = ("engine_ms", "create_ms", "scheduling_ms", "simulator_ms")


def _batch_view(b: dict[str, float]) -> dict[str, float]:
    n = b["runs"]
    return {"runs_per_s": n / b["wall_s"],
            **{f"{k}_per_run": b[k] / n for k in (*PARTS, "other_ms")}}


def print_throughput(r: dict[str, Any]) -> None:
    print(f"\n2. Runs completed per second ({r['runs']} one-call runs on {r['runs']} sessions, "
          f"queued {r['batch']} at a time; GC on; end reasons {r['end_reasons']})")
    print(f"   {r['runs_per_s']:.0f} runs/s overall ({r['wall_s']:.1f} s); sessions created "
          f"{r['sessions_per_s']:.0f}/s beforehand (not counted)")
    print("   ms per run: step = Workers.step less the provider call; create = "
          "Runtime.create_run; sched = the workers' claims, lease and reconciliation look-ups; "
          "simulator = SimulatedProvider.complete; other = the rest (both ASGI apps, httpx, "
          "the client)")
    print(f"   {'':>12} {'runs/s':>7} {'step':>6} {'create':>6} {'sched':>6} {'simulator':>9} "
          f"{'other':>6}")
    for label, b in (("overall", {"runs_per_s": r["runs_per_s"], **r}),
                     ("first batch", r["first_batch"]), ("last batch", r["last_batch"])):
        print(f"   {label:>12} {b['runs_per_s']:>7.0f} {b['engine_ms_per_run']:>6.2f} "
              f"{b['create_ms_per_run']:>6.2f} {b['scheduling_ms_per_run']:>6.2f} "
              f"{b['simulator_ms_per_run']:>9.2f} {b['other_ms_per_run']:>6.2f}")


# -- 3. many runs open at once (one child process per figure) --------------------------------


async def memory_child(runs: int, mode: str, trace: bool) -> dict[str, Any]:
    baseline_rss = rss_now()
    if trace:
        tracemalloc.start()
    phases: dict[str, float] = {}
    inflight = mode == "inflight"
    async with world(runs if inflight else None, held=inflight) as w:
        w.provider.add_script("slow", [Step(text=ANSWER, faults=[SlowAnswer(
            seconds=SLOW_SECONDS)])] * runs)
        await w.configure("slow")
        start = time.perf_counter()
        ids = [await w.session() for _ in range(runs)]
        phases["sessions_s"] = time.perf_counter() - start
        clock_start = w.clock.now()
        start = time.perf_counter()
        for i, session_id in enumerate(ids):
            await w.run(session_id, f"Where is order {i}?")
        phases["create_s"] = time.perf_counter() - start
        clock_moved = w.clock.now() - clock_start
        ended_at_creation = sum(n for reason, n in w.end_reasons().items()
                                if reason not in {"queued", "running"})
        rss_created = rss_now()
        start = time.perf_counter()
        if isinstance(w.workers, _ProbedWorkers) and w.workers.held:
            w.workers.held = False
            w.workers.notify()
        await w.probe.until_finished(runs)
        phases["drain_s"] = time.perf_counter() - start
        reasons = w.end_reasons()
        result = {
            "runs": runs, "mode": mode, "tracemalloc": trace,
            "workers": w.workers.count, "ended_before_all_created": ended_at_creation,
            "clock_moved_while_creating_s": clock_moved,
            "peak_model_calls_in_flight": w.probe.peak_in_flight,
            "virtual_s": w.clock.now() - clock_start, "end_reasons": reasons,
            "database_bytes": w.database_bytes(),
            "provider_recorded_bytes": w.provider.recorded_bytes,
            "rss_baseline": baseline_rss, "rss_after_create": rss_created,
            "rss_end": rss_now(), "peak_rss": peak_rss(), "ru_maxrss": max_rss(), **phases,
        }
    if trace:
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        result.update(traced_peak=peak, traced_end=current)
    result["runs_per_s"] = runs / (phases["create_s"] + phases["drain_s"])
    return result


def run_memory_child(runs: int, mode: str, trace: bool, timeout: float) -> dict[str, Any]:
    spec = json.dumps({"runs": runs, "mode": mode, "trace": trace})
    command = [sys.executable, str(Path(__file__).resolve()), "--child", spec]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"runs": runs, "mode": mode, "tracemalloc": trace,
                "error": f"did not finish within {timeout:g} s (killed)"}
    wall = time.perf_counter() - start
    if done.returncode != 0:
        return {"runs": runs, "mode": mode, "tracemalloc": trace,
                "error": f"exit {done.returncode}: {done.stderr.strip()[-500:]}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["child_wall_s"] = wall
    return result


def memory_section(sizes: list[int], modes: list[str], timeout: float) -> list[dict[str, Any]]:
    rows = []
    for runs in sizes:
        for mode in modes:
            plain = run_memory_child(runs, mode, False, timeout)
            traced = (run_memory_child(runs, mode, True, timeout) if "error" not in plain
                      else {"error": "skipped"})
            plain["traced_peak"] = traced.get("traced_peak")
            plain["traced_error"] = traced.get("error")
            plain["traced_child_wall_s"] = traced.get("child_wall_s")
            rows.append(plain)
            print_memory_row(plain)
    return rows


MEMORY_HEADER = (f"   {'runs':>6} {'mode':>8} {'workers':>7} {'open':>6} {'in flight':>9} "
                 f"{'sessions s':>10} {'create s':>8} {'drain s':>7} {'runs/s':>7} "
                 f"{'peak RSS MB':>10} {'ru_maxrss MB':>10} {'RSS base MB':>11} "
                 f"{'traced peak MB':>14} "
                 f"{'SQLite MB':>9}  target 2 GB")


def print_memory_row(r: dict[str, Any]) -> None:
    if "error" in r:
        print(f"   {r['runs']:>6} {r['mode']:>8}  {r['error']}")
        return
    open_runs = r["runs"] - r["ended_before_all_created"]
    peak = max(r["peak_rss"], r["traced_peak"] or 0)
    verdict = "met" if peak <= MEMORY_TARGET_BYTES else "NOT met"
    traced = mb(r["traced_peak"]) if r["traced_peak"] is not None else (
        r["traced_error"] or "n/a")
    print(f"   {r['runs']:>6} {r['mode']:>8} {r['workers']:>7} {open_runs:>6} "
          f"{r['peak_model_calls_in_flight']:>9} {r['sessions_s']:>10.1f} {r['create_s']:>8.1f} "
          f"{r['drain_s']:>7.1f} {r['runs_per_s']:>7.0f} {mb(r['peak_rss']):>10} "
          f"{mb(r['ru_maxrss']):>10} "
          f"{mb(r['rss_baseline']):>11} {traced:>14} {mb(r['database_bytes']):>9}  {verdict}")
    bad = {k: v for k, v in r["end_reasons"].items() if k != "completed"}
    if bad:
        print(f"          end reasons other than completed: {bad}")


# -- main -------------------------------------------------------------------------------------


def ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--lengths", type=ints,
                        help="history lengths (default 10,100,1000,10000; over 1000 seeded)")
    parser.add_argument("--sessions", type=int, help="sessions driven in section 1 (default 4)")
    parser.add_argument("--runs", type=int, help="one-call runs in section 2 (default 2000)")
    parser.add_argument("--batch", type=int, default=100, help="runs queued at once in 2")
    parser.add_argument("--concurrent", type=ints,
                        help="runs open at once in section 3 (default 1000,10000)")
    parser.add_argument("--modes", default="queued,inflight",
                        help="section 3: queued (the engine's 2 workers), inflight (1 per run)")
    parser.add_argument("--child-timeout", type=float, default=600.0,
                        help="seconds before a section 3 child is killed")
    parser.add_argument("--sections", default="1,2,3", help="which sections to run")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(asyncio.run(memory_child(spec["runs"], spec["mode"], spec["trace"]))))
        return

    lengths = args.lengths or ([10, 40] if args.quick else [10, 100, 1000, 10_000])
    sessions = args.sessions or (2 if args.quick else 4)
    runs = args.runs or (40 if args.quick else 2000)
    concurrent = args.concurrent or ([50] if args.quick else [1000, 10_000])
    batch = min(args.batch, 20) if args.quick else args.batch
    modes = [m for m in args.modes.split(",") if m]
    sections = set(args.sections.split(","))
    info = machine()
    print(f"bench_runs: {info['cores']} cores ({info['usable_cores']} usable), "
          f"{info['implementation']} {info['python']}, {info['platform']}; load average "
          f"{' '.join(f'{x:.2f}' for x in info['load_average'])}")
    figures: dict[str, Any] = {"machine": info, "quick": args.quick}
    if "1" in sections:
        figures["history"] = asyncio.run(history_section(lengths, sessions))
        print_history(figures["history"])
    if "2" in sections:
        figures["throughput"] = asyncio.run(throughput_section(runs, batch))
        print_throughput(figures["throughput"])
    if "3" in sections:
        print(f"\n3. Runs open at once, virtual time (each run's call: a SlowAnswer of "
              f"{SLOW_SECONDS:g} s; one child process per row, tracemalloc in a second one; "
              "open = runs not ended when the last was created)")
        print(MEMORY_HEADER)
        figures["memory"] = memory_section(concurrent, modes, args.child_timeout)
    figures["machine"]["load_average_end"] = list(os.getloadavg())
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", "utf-8")
        print(f"\nfigures written to {args.json}")


if __name__ == "__main__":
    main()
