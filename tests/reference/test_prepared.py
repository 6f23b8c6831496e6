"""The prepared-messages cache (reference/runtime/prepared.py): only an optimisation.

Whatever happened to the store since the last call (rows appended here or by another process,
a compaction's new generation, a restart, an eviction), the bytes it gives are exactly a fresh
build from the store, and a request body built from them is byte-identical to the one the
stored texts give (compactor.request_body).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import httpx
import runkit
from runkit import PRICES, World, run, scenario, settled

from arck.reference.app import create_app
from arck.reference.canonical import canonical_text
from arck.reference.runtime.compactor import request_body
from arck.reference.runtime.prepared import PreparedMessages
from arck.reference.runtime.runstore import RunStore, SessionRow, append
from arck.reference.runtime.worker import Workers
from arck.reference.store import Store
from arck.simulator.provider import Step

SMALL = {"name": "small", "model": "sim-1", "input_capacity": 8_000, "total_capacity": 12_000,
         "output_capacity": 1_000, "timeout_ms": 30_000, "prices": PRICES}
session = functools.partial(runkit.session, channel=SMALL, prompt="You help with orders.",
                            funds=100 * runkit.FUNDS)


def fresh(runs: RunStore, session_id: str) -> bytes:
    return ",".join(runs.history(session_id, "execution")).encode()


def add(store: Store, session_id: str, *items: dict[str, Any]) -> None:
    with store.transaction() as db:
        for item in items:
            append(db, session_id, "execution", item)


def test_every_change_of_the_store_is_seen(tmp_path: Path) -> None:
    database = str(tmp_path / "arck.db")
    here, there = Store(database), Store(database)  # two connections: two processes
    runs, other = RunStore(here), RunStore(there)
    sid = runs.create_session("t", "a", "v", "w", "c", "You help. \u00e9\u4e2d\U0001f600", "")
    prepared = PreparedMessages(here)
    assert prepared.joined(sid) == fresh(runs, sid)
    add(here, sid, {"role": "user", "content": 'quote " and \\ and \n and \u0000'})
    assert prepared.joined(sid) == fresh(runs, sid)
    assert prepared.joined(sid) == fresh(runs, sid)  # nothing new: the same bytes
    add(there, sid, {"role": "assistant", "content": "\U0001f468\u200d\U0001f469"},
        {"role": "user", "content": "more"})
    assert prepared.joined(sid) == fresh(other, sid)
    # A compaction: a new generation, shorter than the cached one, then appended to.
    with there.transaction() as db:
        kept = other.history(sid, "execution")
        RunStore.rewrite_execution(db, sid, [kept[0], canonical_text(
            {"role": "user", "name": "arck_working_memory", "content": "[working memory]"})])
    assert prepared.joined(sid) == fresh(runs, sid)
    add(there, sid, {"role": "user", "content": "after"})
    assert prepared.joined(sid, b"[", b"]") == b"[" + fresh(runs, sid) + b"]"
    # Two compactions in a row that happen to leave as many rows of as many bytes.
    for text in ("first", "again"):
        with here.transaction() as db:
            RunStore.rewrite_execution(db, sid, [canonical_text({"role": "user",
                                                                 "content": text})])
        assert prepared.joined(sid) == fresh(runs, sid)
    # A restart: a new cache on the same store.
    assert PreparedMessages(there).joined(sid) == fresh(runs, sid)


def test_a_row_committed_late_with_a_lower_seq_is_seen() -> None:
    """A database whose sequences are not commit-ordered (PostgreSQL) may commit a row whose
    seq is below the last one cached: the running count no longer adds up, so it rebuilds."""
    store = Store()
    runs = RunStore(store)
    sid = runs.create_session("t", "a", "v", "w", "c", "You help.", "")
    other = runs.create_session("t", "a", "v", "w", "c", "Other.", "")
    add(store, other, {"role": "user", "content": "reserved seq"})
    add(store, sid, {"role": "user", "content": "second"})
    prepared = PreparedMessages(store)
    prepared.joined(sid)
    with store.transaction() as db:
        [(gap,)] = db.execute("SELECT MAX(seq) FROM history WHERE session_id = ?", (other,))
        db.execute("DELETE FROM history WHERE seq = ?", (gap,))
        late = canonical_text({"role": "user", "content": "first"})
        db.execute("INSERT INTO history (seq, session_id, kind, item, generation) "
                   "VALUES (?, ?, 'execution', ?, 0)", (gap, sid, late))
        db.execute("UPDATE sessions SET exec_count = exec_count + 1, "
                   "exec_bytes = exec_bytes + ? WHERE id = ?", (len(late), sid))
    assert prepared.joined(sid) == fresh(runs, sid)
    assert b'"first"' in prepared.joined(sid)


def test_evicted_sessions_are_rebuilt() -> None:
    store = Store()
    runs = RunStore(store)
    ids = [runs.create_session("t", "a", "v", "w", "c", f"prompt {i}", "") for i in range(3)]
    prepared = PreparedMessages(store, max_sessions=2, max_bytes=60)
    for turn in range(4):
        for sid in ids:
            add(store, sid, {"role": "user", "content": f"turn {turn}"})
            assert prepared.joined(sid) == fresh(runs, sid)
    assert len(prepared._entries) <= 2


def test_a_call_reads_only_the_rows_appended_since_the_last() -> None:
    store = Store()
    runs = RunStore(store)
    sid = runs.create_session("t", "a", "v", "w", "c", "You help.", "")
    add(store, sid, *({"role": "user", "content": f"m{i}"} for i in range(50)))
    prepared = PreparedMessages(store)
    prepared.joined(sid)
    read, returned = store.read, []

    def counted(sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        rows = read(sql, params)
        returned.append(len(rows))
        return rows

    store.read = counted  # type: ignore[method-assign]
    add(store, sid, {"role": "assistant", "content": "a"}, {"role": "user", "content": "b"})
    joined = prepared.joined(sid)
    assert returned == [3]  # one statement: the session's sums, then the two new rows
    store.read = read  # type: ignore[method-assign]
    assert joined == fresh(runs, sid)


class Checked(Workers):
    """The engine's workers, each body compared with one built from the store as it is."""

    bodies = 0

    def _body(self, session: SessionRow, model: str, max_tokens: int) -> bytes:
        body = super()._body(session, model, max_tokens)
        items = self.runs.history(session.session_id, "execution")
        assert body == request_body(model, max_tokens, session.tools, items)
        Checked.bodies += 1
        return body


def test_request_bodies_through_compactions_and_a_restart() -> None:
    """Text runs on a small channel reach summaries (new generations) and go on; a second app
    on the same store (a restart: an empty cache) continues the same session. Every body
    equals a fresh build, and the provider received exactly those bodies."""

    async def test(world: World) -> None:
        world.provider.add_script("s", [Step(text="ok") for _ in range(40)])
        session_id = ""
        for _ in range(2):
            app = create_app(world.engine, clock=world.clock, lease_seconds=runkit.LEASE,
                             provider_transport=world.provider.async_transport(),
                             workers_class=Checked)
            world.apps.append(app)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                         base_url="http://reference.test",
                                         headers=runkit.FULL) as client:
                if not session_id:
                    session_id = (await session(client, "s"))["session_id"]
                for size in (4_000, 4_000, 4_000, 4_000, 4_000, 100):
                    r = await run(client, session_id, "w" * size)
                    snapshot = await settled(client, world.clock, r["run_id"])
                    assert snapshot["end_reason"] == "completed"
            await app.state.runtime.aclose()
        runs = world.apps[-1].state.runtime.runs
        [(generations,)] = runs.store.read(
            "SELECT exec_generation FROM sessions WHERE id = ?", (session_id,))
        assert generations >= 2
        sent = [r.body for r in world.provider.recorded() if r.conversation == "s"]
        assert len(sent) == Checked.bodies == 12
        answered = runs.history(session_id, "execution")[:-1]  # less the last answer
        assert sent[-1].endswith(b'"messages":[' + ",".join(answered).encode() + b"]}")

    Checked.bodies = 0
    scenario(test)
