"""Wake-ups for readers of a run's events in this process (the SSE stream, RUN-03).

`runstore.event` calls `CHANGES.changed(run_id)` inside the transaction that appends the event.
A waiter is an asyncio task, which can only run after the synchronous transaction has
committed; a waiter on another thread's loop is woken through that loop, and its read then
waits on the store's lock until the writer commits. A rolled back transaction only causes a
spurious wake-up: readers always re-read the store. Other processes sharing the database wake
nobody here; readers also poll on the injected clock (see stream.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["CHANGES", "Changes"]


class Changes:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}

    def changed(self, key: str) -> None:
        with self._lock:
            waiters = list(self._waiters.get(key, ()))
        if not waiters:
            return
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        for loop, flag in waiters:
            if loop is current:
                flag.set()
            elif not loop.is_closed():
                loop.call_soon_threadsafe(flag.set)

    @contextmanager
    def watch(self, key: str) -> Iterator[asyncio.Event]:
        """An event set whenever `key` changes, while the block runs (clear it after waking)."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiters.setdefault(key, set()).add(entry)
        try:
            yield entry[1]
        finally:
            with self._lock:
                found = self._waiters.get(key)
                if found is not None:
                    found.discard(entry)
                    if not found:
                        del self._waiters[key]


CHANGES = Changes()
