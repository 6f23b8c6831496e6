"""Receipts accepted per second through the HTTP API on SQLite, beside the raw insert rate of
the same database file at the same durability settings (the aim: at least half).

`arck serve --db <tmp>/receipts.sqlite3 --provider-url ...` runs in a subprocess on a real
socket and the real clock; arck's simulated provider is served from a thread of this process.
For each client concurrency asked (default 1 and 4) the script sets up runs waiting on many
tool calls: every run's version names a script whose first answer asks for `--calls` calls of
one tool and whose second is a text, so the run completes once its calls have their finals.
One executor is registered and claims every call (untimed). Then, timed, the calls are split
round-robin over a pool of `httpx.Client`s, one thread each: first every `accepted` receipt,
then every final `completed` receipt with a small result. The last final of each run queues
it again, so the run's second model call happens inside the timed final phase (one in
`--calls` receipts), as it would in production.

Then the server stops and, on the same file, a connection opened exactly as
`reference/store.py` opens its own (`sqlite3.connect(path, isolation_level=None)`, no pragma:
journal_mode DELETE, synchronous FULL, SQLite's defaults) inserts rows copied from the stored
final receipts into a table of the `receipts` table's shape, one `BEGIN IMMEDIATE ... COMMIT`
per row, then in batches for reference. (The API commits each receipt's transaction before
answering it, but receipts that arrive together share one: a group commit, `Store.grouped`.
How many commits the file saw per final receipt is read from its header's change counter.)

Prints figures; asserts nothing (a loaded machine gives slow numbers, not failures).

    .venv/bin/python benchmarks/bench_receipts.py              # 20 runs x 50 calls per mode
    .venv/bin/python benchmarks/bench_receipts.py --quick      # a smoke run of a few seconds
    .venv/bin/python benchmarks/bench_receipts.py --py-spy prof.txt  # profile the final phases
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from arck.simulator.clock import RealClock
from arck.simulator.provider import SimulatedProvider, Step, ToolCall, script_tag
from arck.simulator.provider.server import listen, server

FULL = {"Authorization": "Bearer arck-dev-full"}
PRICES = {"input": 2_000_000, "cached_input": 500_000, "output": 8_000_000}
CHANNEL = {"name": "main", "model": "sim-1", "input_capacity": 100_000,
           "total_capacity": 128_000, "output_capacity": 4_000, "timeout_ms": 30_000,
           "prices": PRICES}
SCHEMA = {"type": "object"}
FUNDS = 10**15  # one deposit's maximum
RAW_TABLE = "bench_raw_receipts"
# The `receipts` table of reference/runtime/runstore.py, under another name.
RAW_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {RAW_TABLE} (
    seq INTEGER PRIMARY KEY, call_id TEXT NOT NULL, receipt_id TEXT NOT NULL,
    body TEXT NOT NULL, projection TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'completed', claim_id TEXT, applied INTEGER NOT NULL DEFAULT 1,
    answer TEXT, UNIQUE (call_id, receipt_id));
"""
RAW_COLUMNS = ("call_id", "receipt_id", "body", "projection", "kind", "claim_id", "applied",
               "answer")
PY_SPY = Path(sys.executable).with_name("py-spy")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def machine(directory: Path) -> dict[str, Any]:
    return {"cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "platform": platform.platform(), "sqlite": sqlite3.sqlite_version,
            "filesystem": filesystem(directory), "load_average": list(os.getloadavg())}


def filesystem(directory: Path) -> str:
    """The type of the file system the database lives on (fsync costs differ a lot)."""
    best, kind = "", "unknown"
    try:
        mounts = Path("/proc/mounts").read_text("utf-8").splitlines()
    except OSError:
        return kind
    target = str(directory.resolve())
    for line in mounts:
        parts = line.split()
        if len(parts) >= 3 and (target == parts[1] or target.startswith(
                parts[1].rstrip("/") + "/")) and len(parts[1]) > len(best):
            best, kind = parts[1], parts[2]
    return kind


# -- the served engine and provider ----------------------------------------------------------


@contextmanager
def provider_served() -> Iterator[tuple[SimulatedProvider, str]]:
    provider = SimulatedProvider(clock=RealClock())
    sock = listen("127.0.0.1", 0)
    uvicorn_server = server(provider)
    thread = threading.Thread(target=uvicorn_server.run, kwargs={"sockets": [sock]},
                              daemon=True)
    thread.start()
    try:
        yield provider, f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        uvicorn_server.should_exit = True
        thread.join(10)
        sock.close()


class Served:
    """`arck serve` in a subprocess on a database file."""

    def __init__(self, database: Path, provider_url: str, log: Path) -> None:
        port = free_port()
        self.log = log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "arck.conformance.cli", "serve", "--port", str(port),
             "--db", str(database), "--provider-url", provider_url],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"arck serve exited: {log.read_text('utf-8')[-2000:]}")
            try:
                if httpx.get(f"{self.url}/v1/health", headers=FULL).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("arck serve never answered")
            time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.log.close()


class Profiler:
    """py-spy attached to the server process while the final phases run (raw collapsed
    stacks, appended to one file per phase)."""

    def __init__(self, pid: int, output: Path | None) -> None:
        self.pid, self.output = pid, output
        self.files: list[Path] = []
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, label: str) -> None:
        if self.output is None:
            return
        path = self.output.with_name(f"{self.output.stem}.{label}{self.output.suffix}")
        self.files.append(path)
        self._process = subprocess.Popen(
            [str(PY_SPY), "record", "--pid", str(self.pid), "--format", "raw", "--rate", "250",
             "--output", str(path), "--idle", "--nonblocking"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # py-spy attaches

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.send_signal(signal.SIGINT)
        self._process.wait(30)
        self._process = None


# -- setup ------------------------------------------------------------------------------------


def post(client: httpx.Client, path: str, body: Any, status: int = 201,
         headers: dict[str, str] | None = None) -> Any:
    response = client.post(path, json=body, headers=headers)
    if response.status_code != status:
        raise RuntimeError(f"POST {path}: {response.status_code} {response.text[:300]}")
    return response.json()


@dataclass
class Agent:
    """One tool set, channel, wallet and executor; a version per run (its own script)."""

    tool_set: str
    channel: str
    wallet: str
    executor: dict[str, str]


def configure(client: httpx.Client) -> Agent:
    binding = post(client, "/v1/bindings", {"name": "orders"})["binding_id"]
    tool = {"name": "lookup", "description": "Read an order.", "binding_id": binding,
            "input_schema": SCHEMA, "output_schema": SCHEMA, "max_result_context_bytes": 1024}
    tool_set = post(client, "/v1/tool-sets", {"name": "t", "tools": [tool]})["tool_set_id"]
    channel = post(client, "/v1/channels", CHANNEL)["channel_id"]
    wallet = post(client, "/v1/wallets", {"name": "bench"})["wallet_id"]
    post(client, f"/v1/wallets/{wallet}/deposits", {"amount": FUNDS}, 200)
    registered = post(client, "/v1/executors", {"name": "bench", "bindings": [binding]})
    return Agent(tool_set, channel, wallet, {"Authorization": f"Bearer {registered['token']}"})


@dataclass
class Call:
    call_id: str
    run_id: str
    claim_id: str = ""


def waiting_runs(client: httpx.Client, provider: SimulatedProvider, agent: Agent, label: str,
                 runs: int, calls: int) -> list[str]:
    """`runs` runs, each waiting on `calls` tool calls."""
    run_ids = []
    for i in range(runs):
        script = f"{label}-{i}"
        provider.add_script(script, [
            Step(tool_calls=[ToolCall(name="lookup", arguments={"order": f"{i}-{j}"})
                             for j in range(calls)]),
            Step(text="All orders are on their way.")])
        version = post(client, "/v1/agents/agent-1/versions", {
            "tool_set_id": agent.tool_set, "channel_id": agent.channel,
            "system_prompt": f"You track orders. {script_tag(script)}"})["agent_version"]
        session = post(client, "/v1/sessions", {"agent_version": version,
                                                "wallet_id": agent.wallet})["session_id"]
        run_ids.append(post(client, f"/v1/sessions/{session}/runs",
                            {"input": f"Where are my orders ({i})?"})["run_id"])
    deadline = time.monotonic() + 60 + runs
    for run_id in run_ids:
        while (state := client.get(f"/v1/runs/{run_id}").json()["state"]) != "waiting_tools":
            if state == "ended" or time.monotonic() > deadline:
                raise RuntimeError(f"run {run_id} never waited for tools: {state}")
            time.sleep(0.02)
    return run_ids


def claim_all(client: httpx.Client, agent: Agent, run_ids: list[str]) -> list[Call]:
    post(client, "/v1/executor/heartbeat", {}, 200, headers=agent.executor)
    claimed = []
    for run_id in run_ids:
        for view in client.get(f"/v1/runs/{run_id}/tool-calls").json()["tool_calls"]:
            call = Call(view["call_id"], run_id)
            call.claim_id = post(client, f"/v1/tool-calls/{call.call_id}/claims", {},
                                 headers=agent.executor)["claim_id"]
            claimed.append(call)
    return claimed


def wait_ended(client: httpx.Client, run_ids: list[str], seconds: float) -> dict[str, int]:
    deadline = time.monotonic() + seconds
    while True:
        runs = [client.get(f"/v1/runs/{r}").json() for r in run_ids]
        if all(r["state"] == "ended" for r in runs) or time.monotonic() > deadline:
            return dict(Counter(str(r.get("end_reason") or r["state"]) for r in runs))
        time.sleep(0.05)


# -- the timed phases -------------------------------------------------------------------------


@dataclass
class Phase:
    kind: str
    clients: int
    receipts: int = 0
    wall_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)
        return {"kind": self.kind, "clients": self.clients, "receipts": self.receipts,
                "wall_s": self.wall_s, "per_s": self.receipts / self.wall_s if self.wall_s else 0,
                "median_ms": statistics.median(lat) if lat else 0.0,
                "p95_ms": lat[min(len(lat) - 1, int(len(lat) * 0.95))] if lat else 0.0,
                "errors": self.errors[:5], "error_count": len(self.errors)}


def pooled(url: str, headers: dict[str, str], calls: list[Call], clients: int, kind: str,
           body: Callable[[Call], dict[str, Any]], check: Callable[[Any], bool]) -> Phase:
    """Send one receipt per call, the calls split round-robin over `clients` threads, each
    with its own kept-alive `httpx.Client` (connected before the clock starts)."""
    phase = Phase(kind, clients, len(calls))
    shares = [calls[i::clients] for i in range(clients)]
    pool = [httpx.Client(base_url=url, headers=headers, timeout=60) for _ in range(clients)]
    for client in pool:
        client.get("/v1/health")
    start = threading.Barrier(clients + 1)
    lock = threading.Lock()

    def work(client: httpx.Client, share: list[Call]) -> None:
        latencies, errors = [], []
        start.wait()
        for call in share:
            began = time.perf_counter()
            response = client.post(f"/v1/tool-calls/{call.call_id}/receipts", json=body(call))
            latencies.append((time.perf_counter() - began) * 1e3)
            if response.status_code != 200 or not check(response.json()):
                errors.append(f"{call.call_id}: {response.status_code} {response.text[:200]}")
        with lock:
            phase.latencies_ms.extend(latencies)
            phase.errors.extend(errors)

    threads = [threading.Thread(target=work, args=(c, s)) for c, s in zip(pool, shares,
                                                                            strict=True)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    phase.wall_s = time.perf_counter() - began
    for client in pool:
        client.close()
    return phase


def accepted(call: Call) -> dict[str, Any]:
    return {"receipt_id": f"{call.call_id}.accepted", "claim_id": call.claim_id,
            "kind": "accepted"}


def final(call: Call) -> dict[str, Any]:
    return {"receipt_id": f"{call.call_id}.final", "claim_id": call.claim_id,
            "kind": "completed",
            "result": {"order": call.call_id, "status": "shipped", "eta_days": 2}}


def table_counts(database: Path) -> dict[str, int]:
    db = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    try:
        names = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "AND name != ?", (RAW_TABLE,))]
        return {n: int(db.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0]) for n in names}
    finally:
        db.close()


def change_counter(database: Path) -> int:
    """The file change counter of the database header (bytes 24..27): one more per committed
    write transaction in rollback-journal mode."""
    with database.open("rb") as file:
        return int.from_bytes(file.read(100)[24:28], "big")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text("utf-8").rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def http_section(database: Path, provider: SimulatedProvider, provider_url: str,
                 modes: list[int], runs: int, calls: int, probe: int, profile: Path | None,
                 log: Path) -> dict[str, Any]:
    served = Served(database, provider_url, log)
    profiler = Profiler(served.process.pid, profile)
    rows: list[dict[str, Any]] = []
    try:
        with httpx.Client(base_url=served.url, headers=FULL, timeout=60) as client:
            agent = configure(client)
            for clients in modes:
                label = f"c{clients}"
                began = time.perf_counter()
                run_ids = waiting_runs(client, provider, agent, label, runs, calls)
                claimed = claim_all(client, agent, run_ids)
                setup_s = time.perf_counter() - began
                acc = pooled(served.url, agent.executor, claimed, clients, "accepted",
                             accepted, lambda a: a["state"] == "accepted")
                before = table_counts(database)
                raw_before = raw_probe(database, probe, f"{label}.before")
                profiler.start(label)
                cpu = cpu_seconds(served.process.pid)
                changes = change_counter(database)
                fin = pooled(served.url, agent.executor, claimed, clients, "completed",
                             final, lambda a: a["state"] == "completed" and a["applied"])
                commits = change_counter(database) - changes
                server_cpu = cpu_seconds(served.process.pid) - cpu
                profiler.stop()
                raw_after = raw_probe(database, probe, f"{label}.after")
                after = table_counts(database)
                reasons = wait_ended(client, run_ids, 60)
                inserted = {t: (after[t] - before.get(t, 0)) / len(claimed) for t in after
                            if after[t] != before.get(t, 0)}
                rows.append({"clients": clients, "runs": runs, "calls_per_run": calls,
                             "setup_s": setup_s, "accepted": acc.figures(),
                             "final": fin.figures(), "end_reasons": reasons,
                             "server_cpu_ms_per_final": server_cpu * 1e3 / len(claimed),
                             "commits_per_final": commits / len(claimed),
                             "raw_around": [raw_before, raw_after],
                             "rows_inserted_per_final": inserted})
    finally:
        profiler.stop()
        served.stop()
    return {"modes": rows, "profiles": [str(p) for p in profiler.files]}


# -- raw inserts ------------------------------------------------------------------------------


def connect(database: Path) -> sqlite3.Connection:
    """A connection opened as `reference/store.py` opens its own: no pragma set."""
    return sqlite3.connect(str(database), check_same_thread=False, isolation_level=None)


def raw_rows(db: sqlite3.Connection, tag: str) -> Callable[[int], tuple[Any, ...]]:
    """Values of row i: a stored final receipt's (the receipt whose accepted receipt it is,
    before any final is stored), with a receipt_id of its own."""
    db.executescript(RAW_SCHEMA)
    samples = db.execute(f"SELECT {', '.join(RAW_COLUMNS)} FROM receipts "
                         "ORDER BY kind = 'completed' DESC, seq LIMIT 1000").fetchall()
    if not samples:
        raise RuntimeError("no receipt was stored")

    def values(i: int) -> tuple[Any, ...]:
        row = samples[i % len(samples)]
        return (row[0], f"{row[1]}.{tag}{i}", *row[2:])

    return values


RAW_INSERT = (f"INSERT INTO {RAW_TABLE} ({', '.join(RAW_COLUMNS)}) "
              f"VALUES ({', '.join('?' * len(RAW_COLUMNS))})")


def single_inserts(db: sqlite3.Connection, values: Callable[[int], tuple[Any, ...]],
                   rows: int) -> float:
    """Seconds for `rows` inserts, one BEGIN IMMEDIATE ... COMMIT each."""
    began = time.perf_counter()
    for i in range(rows):
        db.execute("BEGIN IMMEDIATE")
        db.execute(RAW_INSERT, values(i))
        db.execute("COMMIT")
    return time.perf_counter() - began


def raw_probe(database: Path, rows: int, tag: str) -> float:
    """Raw inserts per second (one per transaction) on the live file, the server idle: the
    disk's fsync cost changes from minute to minute on a shared machine, so each HTTP row is
    compared with probes taken just before and just after it."""
    db = connect(database)
    try:
        return rows / single_inserts(db, raw_rows(db, tag), rows)
    finally:
        db.close()


def raw_section(database: Path, rows: int, batch: int) -> dict[str, Any]:
    """Rows copied from the stored final receipts into a table of the same shape, on the same
    file once the server has stopped."""
    db = connect(database)
    try:
        settings = {name: db.execute(f"PRAGMA {name}").fetchone()[0]
                    for name in ("journal_mode", "synchronous", "locking_mode", "page_size")}
        values = raw_rows(db, "raw")
        row_bytes = statistics.mean(
            sum(len(str(v).encode()) for v in values(i)) for i in range(100))
        sql = RAW_INSERT
        single_s = single_inserts(db, values, rows)
        batched_rows = rows * 10
        began = time.perf_counter()
        for first in range(rows, rows + batched_rows, batch):
            db.execute("BEGIN IMMEDIATE")
            db.executemany(sql, [values(i) for i in range(first, first + batch)])
            db.execute("COMMIT")
        batched_s = time.perf_counter() - began
    finally:
        db.close()
    return {"settings": settings, "row_bytes": row_bytes,
            "single": {"rows": rows, "wall_s": single_s, "per_s": rows / single_s},
            "batched": {"rows": batched_rows, "batch": batch, "wall_s": batched_s,
                        "per_s": batched_rows / batched_s}}


# -- profile summary --------------------------------------------------------------------------


def summarize_profile(path: Path, top: int = 12) -> dict[str, Any]:
    """From py-spy's raw collapsed stacks (sampled with --idle, so time blocked in fsync
    counts): the share of busy samples under a few frames of interest, and the busiest lines
    by self time. Busy: not the event loop waiting in `select` (which also covers the second
    py-spy takes to attach) and not an idle thread of anyio's pool."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = idle = 0
    try:
        lines = path.read_text("utf-8").splitlines()
    except OSError:
        return {}
    for line in lines:
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        frames = stack.split(";")
        if "WorkerThread.run" in stack and "Condition.wait" in frames[-1]:
            continue  # an idle thread of anyio's pool
        count = int(count_text)
        if "EpollSelector.select" in frames[-1]:
            idle += count
            continue
        total += count
        for name in {f.split(" (")[0] for f in frames}:
            inclusive[name] += count
        own[frames[-1]] += count
    if not total:
        return {}
    share = {name: 100 * inclusive[name] / total for name in PROFILE_FRAMES}
    busiest = [(name, 100 * n / total) for name, n in own.most_common(top)]
    return {"samples": total, "idle_samples": idle, "inclusive_percent": share,
            "self_percent": busiest}


PROFILE_FRAMES = ("Store._group", "Runtime.submit_receipt.<locals>.intake", "Store.transaction",
                  "take", "finish", "Workers._loop", "JSONResponse.render", "solve_dependencies",
                  "RequestResponseCycle.send", "H11Protocol.data_received")


# -- main -------------------------------------------------------------------------------------


def ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def report(figures: dict[str, Any]) -> None:
    raw = figures["raw"]
    single = raw["single"]["per_s"]
    print(f"\nraw inserts on the same file, the server stopped ({raw['settings']}; rows of "
          f"~{raw['row_bytes']:.0f} bytes copied from the stored receipts):")
    print(f"   one row per transaction: {single:.0f}/s ({raw['single']['rows']} rows); "
          f"{raw['batched']['batch']} rows per transaction: {raw['batched']['per_s']:.0f}/s "
          f"({raw['batched']['rows']} rows)")
    print(f"\nreceipts through the HTTP API (arck serve, real socket, {figures['runs']} runs x "
          f"{figures['calls']} calls per row; setup excluded). raw /s: one-row transactions on "
          "the live file just before and after the final phase (mean); ratio = /s over it")
    print(f"   {'clients':>7} {'kind':>9} {'receipts':>8} {'/s':>7} {'median ms':>9} "
          f"{'p95 ms':>7} {'raw /s':>7} {'ratio':>6}  aim >= 0.5")
    for row in figures["http"]["modes"]:
        around = statistics.mean(row["raw_around"])
        for phase in (row["accepted"], row["final"]):
            ratio = phase["per_s"] / around
            verdict = ("met" if ratio >= 0.5 else "NOT met") if phase["kind"] == "completed" \
                else "(accepted receipts)"
            print(f"   {row['clients']:>7} {phase['kind']:>9} {phase['receipts']:>8} "
                  f"{phase['per_s']:>7.0f} {phase['median_ms']:>9.2f} {phase['p95_ms']:>7.2f} "
                  f"{around:>7.0f} {ratio:>6.2f}  {verdict}")
            if phase["error_count"]:
                print(f"          {phase['error_count']} errors, first: {phase['errors'][:2]}")
        inserted = ", ".join(f"{t} {n:.2f}" for t, n in sorted(row["rows_inserted_per_final"]
                                                               .items()))
        before, after = row["raw_around"]
        print(f"          raw before/after {before:.0f}/{after:.0f} per s; server CPU "
              f"{row['server_cpu_ms_per_final']:.2f} ms and "
              f"{row['commits_per_final']:.2f} commits per final; runs ended "
              f"{row['end_reasons']}; setup {row['setup_s']:.1f} s")
        print(f"          rows inserted per final (the runs' second model calls included): "
              f"{inserted}")
    for path in figures["http"]["profiles"]:
        summary = summarize_profile(Path(path))
        if summary:
            figures.setdefault("profile_summaries", {})[path] = summary
            print(f"\npy-spy --idle, server process during the final phase ({path}, "
                  f"{summary['samples']} busy samples, {summary['idle_samples']} idle in select); "
                  "share of busy samples:")
            print("   " + "; ".join(f"{name} {pct:.1f}%" for name, pct in
                                    summary["inclusive_percent"].items()))
            print("   self time by line:")
            for name, pct in summary["self_percent"]:
                print(f"   {pct:5.1f}%  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--runs", type=int, help="runs per concurrency (default 20)")
    parser.add_argument("--calls", type=int, help="tool calls per run (default 50)")
    parser.add_argument("--clients", type=ints, default=[1, 4],
                        help="client concurrencies, one row each (default 1,4)")
    parser.add_argument("--raw", type=int, help="raw inserts one per transaction (default 2000)")
    parser.add_argument("--probe", type=int,
                        help="raw inserts just before and after each final phase (default 300)")
    parser.add_argument("--batch", type=int, default=100, help="rows per batched transaction")
    parser.add_argument("--dir", type=Path, help="where the database goes (default: a temp dir)")
    parser.add_argument("--py-spy", type=Path, dest="py_spy",
                        help="profile the server during each final phase with py-spy; raw "
                             "collapsed stacks to FILE.c<clients>.<suffix>")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    runs = args.runs or (2 if args.quick else 20)
    calls = args.calls or (5 if args.quick else 50)
    raw_count = args.raw or (50 if args.quick else 2000)
    probe = args.probe or (20 if args.quick else 300)
    with tempfile.TemporaryDirectory(prefix="bench-receipts-", dir=args.dir) as tmp:
        directory = Path(tmp)
        database = directory / "receipts.sqlite3"
        info = machine(directory)
        print(f"bench_receipts: {info['cores']} cores ({info['usable_cores']} usable), "
              f"{info['implementation']} {info['python']}, SQLite {info['sqlite']}, database on "
              f"{info['filesystem']} ({directory}); load average "
              f"{' '.join(f'{x:.2f}' for x in info['load_average'])}")
        with provider_served() as (provider, url):
            http = http_section(database, provider, url, args.clients, runs, calls, probe,
                                args.py_spy, directory / "serve.log")
        raw = raw_section(database, raw_count, args.batch)
        figures = {"machine": info, "quick": args.quick, "runs": runs, "calls": calls,
                   "http": http, "raw": raw}
        figures["machine"]["load_average_end"] = list(os.getloadavg())
        report(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", "utf-8")
        print(f"\nfigures written to {args.json}")


if __name__ == "__main__":
    main()
