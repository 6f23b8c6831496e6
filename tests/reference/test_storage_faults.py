"""Storage faults are the operator's conditions, not bugs (issue 29): a full disk, a file made
read-only, another process holding the lock, a damaged file. Each is a real SQLite condition
made deterministically (`PRAGMA max_page_count`, `PRAGMA query_only`, a second connection's
`BEGIN EXCLUSIVE`, bytes overwritten in a page), with the engine served on a real socket.

What must hold: no 500 (503 `storage_unavailable` with Retry-After, the connection kept);
nothing acknowledged is lost and nothing refused is applied; workers survive and every run
ends by itself once the fault clears, with no request to wake it; a read never writes; a
damaged file is refused at start-up, naming it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from servekit import Threaded

from arck.conformance.cli import _serve_problem
from arck.reference.app import create_app
from arck.reference.store import Store
from arck.simulator.clock import RealClock
from arck.simulator.provider import (
    SimulatedProvider,
    SlowAnswer,
    Step,
    ToolCall,
)

CHANNEL = {"name": "main", "model": "sim-1", "input_capacity": 100_000,
           "total_capacity": 128_000, "output_capacity": 4_000, "timeout_ms": 30_000,
           "prices": {"input": 1, "cached_input": 1, "output": 1}}
SCHEMA = {"type": "object"}
LEASE_S = 1.0  # short, so a run a failed worker held is taken over soon
UNLIMITED_PAGES = 1_073_741_823
RUNS = 3

pytestmark = pytest.mark.timeout(120)


class Served(Threaded):
    """The reference on a file database and the wall clock, on a real socket."""

    def __init__(self, database: Path) -> None:
        self.provider = SimulatedProvider(clock=RealClock())
        app = create_app(database=str(database), lease_seconds=LEASE_S,
                         provider_transport=self.provider.async_transport())
        self.store: Store = app.state.engine.store
        self.database = database
        super().__init__(app)

    def pragma(self, text: str) -> None:
        """Set a fault on the engine's own connection (the store's lock held meanwhile)."""
        self.store.read(f"PRAGMA {text}")



@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    s = Served(tmp_path / "arck.db")
    try:
        yield s
    finally:
        s.close()


def _refused_as_unavailable(answer: httpx.Response) -> None:
    """503 storage_unavailable, Retry-After, the connection kept."""
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["code"] == "storage_unavailable"
    assert int(answer.headers["retry-after"]) >= 1
    assert answer.headers.get("connection", "").lower() != "close"


def _state(database: Path, run_id: str) -> str:
    """A run's state read from the file by another connection: no request to the engine."""
    with sqlite3.connect(database, timeout=5) as db:
        row = db.execute("SELECT state FROM runs WHERE id = ?", (run_id,)).fetchone()
    return str(row[0])


def _until(test: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not test():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.05)


def test_a_full_disk_refuses_writes_with_503_and_loses_nothing(served: Served) -> None:
    s = served
    pages = s.store.read("PRAGMA page_count")[0][0]
    s.pragma(f"max_page_count = {pages}")  # the file may not grow: SQLITE_FULL
    made: dict[str, str] = {}
    refused: list[str] = []
    for n in range(300):
        name = f"binding-{n:03d}-" + "x" * 150
        answer = s.client.post("/v1/bindings", json={"name": name})
        if answer.status_code == 201:
            made[name] = answer.json()["binding_id"]
        else:
            _refused_as_unavailable(answer)
            refused.append(name)
    assert refused, "the disk never filled: the fault did not fire"
    s.pragma(f"max_page_count = {UNLIMITED_PAGES}")
    # The same keep-alive client goes on; what was acknowledged is there, the rest is not.
    for name, binding_id in made.items():
        assert s.client.get(f"/v1/bindings/{binding_id}").json()["name"] == name
    stored = {row[0] for row in s.store.read("SELECT name FROM bindings")}
    assert not stored & set(refused)
    assert s.post("/v1/bindings", {"name": "after"})["name"] == "after"


def test_receipts_on_a_read_only_file_are_503_then_taken_when_sent_again(
    served: Served,
) -> None:
    """The grouped receipt path: a storage fault fails the group whole (never "no such
    savepoint"), nothing is applied, and the same receipts sent again are taken."""
    s = served
    run_ids, bindings = [], []
    for n in range(RUNS):
        s.provider.add_script(f"r{n}", [
            Step(tool_calls=[ToolCall(name="lookup", arguments={"n": n})]), Step(text="Done.")])
        session_id = s.session(f"r{n}", CHANNEL)
        bindings.append(s.binding)
        run_ids.append(s.post(f"/v1/sessions/{session_id}/runs", {"input": "hi"})["run_id"])
    _until(lambda: all(_state(s.database, r) == "waiting_tools" for r in run_ids))
    executor = s.post("/v1/executors", {"name": "e", "bindings": bindings})
    headers = {"Authorization": f"Bearer {executor['token']}"}
    s.post("/v1/executor/heartbeat", {}, 200, headers=headers)
    finals = []
    for run_id in run_ids:
        [call] = s.client.get(f"/v1/runs/{run_id}/tool-calls").json()["tool_calls"]
        path = f"/v1/tool-calls/{call['call_id']}/receipts"
        claim = s.post(f"/v1/tool-calls/{call['call_id']}/claims", {}, headers=headers)
        s.post(path, {"receipt_id": "a", "claim_id": claim["claim_id"], "kind": "accepted"},
               200, headers=headers)
        finals.append((path, {"receipt_id": "f", "claim_id": claim["claim_id"],
                              "kind": "completed", "result": {"ok": True}}))

    def send_all() -> list[httpx.Response]:
        """At once, so the engine takes them in one group."""
        with httpx.Client(base_url=s.url, headers=headers, timeout=10) as client, \
                ThreadPoolExecutor(RUNS) as pool:
            return list(pool.map(lambda f: client.post(f[0], json=f[1]), finals))

    s.pragma("query_only = 1")
    for answer in send_all():
        _refused_as_unavailable(answer)
    assert all(_state(s.database, r) == "waiting_tools" for r in run_ids)
    s.pragma("query_only = 0")
    assert [a.json()["replayed"] for a in send_all()] == [False] * RUNS
    _until(lambda: all(_state(s.database, r) == "ended" for r in run_ids))


def test_workers_survive_a_fault_and_finish_runs_by_themselves(served: Served) -> None:
    """The answer of a call in flight cannot be stored (the file read-only): the worker's
    step fails, the workers keep trying with backoff, and once the file is writable again
    the run ends without any request (its state read from the file)."""
    s = served
    s.provider.add_script("w", [Step(text="Done.", faults=[SlowAnswer(seconds=0.5)])])
    session_id = s.session("w", CHANNEL)
    run_id = s.post(f"/v1/sessions/{session_id}/runs", {"input": "hello"})["run_id"]
    _until(lambda: bool(s.provider.records()))  # the call is in flight
    s.pragma("query_only = 1")
    _until(lambda: s.provider.records()[0].outcome != "received")  # answered, not stored
    time.sleep(LEASE_S * 2)  # its lease lapses; the workers meet the fault meanwhile
    assert _state(s.database, run_id) == "running"
    s.pragma("query_only = 0")
    _until(lambda: _state(s.database, run_id) == "ended")


def test_another_process_holding_the_lock_is_503_and_the_server_stays_responsive(
    served: Served,
) -> None:
    s = served
    other = sqlite3.connect(s.database, isolation_level=None, timeout=0)
    try:
        other.execute("BEGIN EXCLUSIVE")
        # The loop is not stalled: health answers while the lock is held, and a write is
        # refused within the busy timeout, not after the other process lets go.
        assert s.client.get("/v1/health", timeout=3).status_code == 200
        _refused_as_unavailable(s.client.post("/v1/bindings", json={"name": "locked"},
                                              timeout=3))
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert s.post("/v1/bindings", {"name": "unlocked"})["name"] == "unlocked"
    assert not s.store.read("SELECT 1 FROM bindings WHERE name = 'locked'")


def test_reads_never_write(served: Served) -> None:
    """On a read-only file every documented GET, on real ids, answers as before (no 503)."""
    s = served
    s.provider.add_script("g", [Step(tool_calls=[ToolCall(name="lookup", arguments={})]),
                                Step(text="Done.")])
    session_id = s.session("g", CHANNEL)
    run_id = s.post(f"/v1/sessions/{session_id}/runs", {"input": "hi"})["run_id"]
    _until(lambda: _state(s.database, run_id) == "waiting_tools")
    [call] = s.client.get(f"/v1/runs/{run_id}/tool-calls").json()["tool_calls"]
    session = s.client.get(f"/v1/sessions/{session_id}").json()
    version = s.client.get(f"/v1/agent-versions/{session['agent_version']}").json()
    executor = s.post("/v1/executors", {"name": "e", "bindings": [s.binding]})
    ids = {"binding_id": s.binding, "tool_set_id": version["tool_set_id"],
           "agent_version": session["agent_version"], "agent_id": "agent-1",
           "channel_id": version["channel_id"], "wallet_id": session["wallet_id"],
           "session_id": session_id, "run_id": run_id, "call_id": call["call_id"],
           "executor_id": executor["executor_id"], "kind": "formal"}
    paths = s.client.get("/openapi.json").json()["paths"]
    s.pragma("query_only = 1")
    read = 0
    for path, item in paths.items():
        if "get" not in item:
            continue
        filled = path.format(**ids)
        answer = s.client.get(filled)
        assert answer.status_code not in (500, 503), f"GET {filled}: {answer.text}"
        read += 1
    assert read >= 10
    s.pragma("query_only = 0")


def test_a_damaged_file_is_refused_at_start_up(tmp_path: Path) -> None:
    database = tmp_path / "damaged.db"
    store = Store(str(database))
    for n in range(200):
        store.add_binding("t", f"b{n}" + "x" * 200, "")
    store.close()
    size = sqlite3.connect(database).execute("PRAGMA page_size").fetchone()[0]
    with database.open("r+b") as raw:
        raw.seek(size * 2)  # page 3: a page of the bindings table
        raw.write(b"\xff" * 64)
    problem = _serve_problem(8000, str(database), None, 30.0)
    assert problem is not None
    assert str(database) in problem
    assert "damaged" in problem or "not a usable SQLite database" in problem
    assert _serve_problem(8000, str(tmp_path / "new.db"), None, 30.0) is None


class _Enough(Exception):
    """Ends a worker's loop once it has waited enough times."""


def test_a_worker_waits_half_a_second_doubling_to_15_s() -> None:
    """docs/profile.md, Storage faults: while its store refuses writes, each worker waits
    0.5 s, then twice as long each time up to 15 s, on the injected clock."""
    app = create_app()
    workers = app.state.runtime.workers
    waits: list[float] = []

    class Recording:
        """The injected clock, recording each wait (and ending the loop after eight)."""

        @staticmethod
        def now() -> float:
            return 0.0

        @staticmethod
        async def sleep(seconds: float) -> None:
            waits.append(seconds)
            if len(waits) == 8:
                raise _Enough

    async def loop() -> None:
        workers.start()  # the tasks of the running loop, then one loop driven alone
        await workers.stop()
        workers.clock = Recording()
        app.state.engine.store.read("PRAGMA query_only = ON")  # every claim is refused
        await workers._loop("arck-test.worker")

    with pytest.raises(_Enough):
        asyncio.run(loop())
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0, 15.0]
