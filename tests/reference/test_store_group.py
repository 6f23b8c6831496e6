"""`Store.grouped`, the group commit of receipt intake: work queued together shares one
transaction, each in its own savepoint, and no waiter hears back before the commit."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

from arck.reference.store import Store


def _store(path: Path) -> Store:
    store = Store(str(path))
    store.install("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v INTEGER NOT NULL);")
    return store


def _committed(path: Path) -> dict[str, int]:
    """What another connection sees: committed rows only."""
    other = sqlite3.connect(path)
    try:
        return dict(other.execute("SELECT k, v FROM t"))
    finally:
        other.close()


def test_work_queued_together_shares_one_commit(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite3"
    store = _store(path)
    seen: list[dict[str, int]] = []

    def put(key: str, value: int) -> Callable[[sqlite3.Connection], int]:
        def work(db: sqlite3.Connection) -> int:
            db.execute("INSERT INTO t VALUES (?, ?)", (key, value))
            seen.append(_committed(path))  # nothing of the group is committed yet
            return value
        return work

    def refused(db: sqlite3.Connection) -> int:
        db.execute("INSERT INTO t VALUES ('b', 99)")  # written, then undone alone
        raise ValueError("refused")

    def sees_earlier(db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT COUNT(*) FROM t").fetchone()[0])

    async def main() -> list[object]:
        return await asyncio.gather(
            store.grouped(put("a", 1)), store.grouped(refused), store.grouped(put("c", 3)),
            store.grouped(sees_earlier), return_exceptions=True)

    try:
        changes = _change_counter(path)
        answers = asyncio.run(main())
        assert answers[0] == 1
        assert answers[2] == 3
        assert isinstance(answers[1], ValueError)
        assert answers[3] == 2  # the writes queued before it, not the refused one
        assert seen == [{}, {}]
        assert _committed(path) == {"a": 1, "c": 3}
        assert _change_counter(path) == changes + 1  # one commit for the four
    finally:
        store.close()


def test_a_failed_commit_fails_every_waiter(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite3"
    store = _store(path)

    def ok(db: sqlite3.Connection) -> str:
        db.execute("INSERT INTO t VALUES ('a', 1)")
        return "ok"

    def breaks_the_transaction(db: sqlite3.Connection) -> str:
        db.execute("ROLLBACK")  # as SQLite does itself after some errors
        return "ok"

    async def main() -> list[object]:
        return await asyncio.gather(store.grouped(ok), store.grouped(breaks_the_transaction),
                                    return_exceptions=True)

    try:
        answers = asyncio.run(main())
        assert all(isinstance(a, sqlite3.OperationalError) for a in answers), answers
        assert _committed(path) == {}
        with store.transaction() as db:  # the store is usable afterwards
            db.execute("INSERT INTO t VALUES ('z', 26)")
        assert _committed(path) == {"z": 26}
    finally:
        store.close()


def _change_counter(path: Path) -> int:
    """The file change counter of the database header: one more per commit (rollback journal)."""
    return int.from_bytes(path.read_bytes()[24:28], "big")


def test_a_waiter_cancelled_before_its_group_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite3"
    store = _store(path)

    def put(key: str) -> Callable[[sqlite3.Connection], str]:
        def work(db: sqlite3.Connection) -> str:
            db.execute("INSERT INTO t VALUES (?, 1)", (key,))
            return key
        return work

    async def main() -> str:
        gone = asyncio.ensure_future(store.grouped(put("gone")))
        await asyncio.sleep(0)  # it is queued
        gone.cancel()
        return await store.grouped(put("kept"))

    try:
        assert asyncio.run(main()) == "kept"
        assert _committed(path) == {"kept": 1}
    finally:
        store.close()
