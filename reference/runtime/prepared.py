"""The messages of a session's next request, kept serialized and extended by what was appended.

A model request is the stored canonical texts of the execution history joined as they are
(compactor.request_body), so a session's next request is its last one plus the rows appended
since. Rereading and rejoining every stored row on each call made preparation cost grow with
the history (about 0.7 µs a row); this cache keeps, per session, the joined UTF-8 bytes of the
current generation and reads from SQLite only the rows after the last one it holds.

It is only an optimisation, never the truth (RUN-02: nothing lives only in memory): each use
reads the session's generation and running count and size in the same statement as the new
rows, and anything that does not add up (a compaction's new generation, rows written by another
process, a cache evicted or just built after a restart) is rebuilt from the store.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from arck.reference.store import Store

__all__ = ["MAX_BYTES", "MAX_SESSIONS", "PreparedMessages"]

MAX_SESSIONS = 4_096  # sessions kept; the least recently used are dropped first
MAX_BYTES = 128 * 1024**2  # joined bytes kept in all

# One statement, so one snapshot even with other processes writing: first the session's
# generation and running sums (key 0), then its rows of that generation after `?2` (keys are
# their seq, from 1), in order.
_NEW_ROWS = (
    "SELECT 0, exec_generation, exec_count, exec_bytes FROM sessions WHERE id = ?1 "
    "UNION ALL SELECT seq, item, NULL, NULL FROM history WHERE session_id = ?1 "
    "AND kind = 'execution' AND seq > ?2 "
    "AND generation = (SELECT exec_generation FROM sessions WHERE id = ?1) ORDER BY 1"
)


@dataclass
class _Entry:
    """A session's current generation as joined bytes: `,`-separated canonical texts."""

    generation: int
    last_seq: int = 0
    count: int = 0
    size: int = 0  # UTF-8 bytes of the texts, separators excluded (the sessions.exec_bytes sum)
    joined: bytearray = field(default_factory=bytearray)


class PreparedMessages:
    """Per-session joined message bytes for one worker pool (one store)."""

    def __init__(self, store: Store, max_sessions: int = MAX_SESSIONS,
                 max_bytes: int = MAX_BYTES) -> None:
        self.store = store
        self.max_sessions = max_sessions
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def joined(self, session_id: str, before: bytes = b"", after: bytes = b"") -> bytes:
        """The current execution history's texts joined by `,`, UTF-8, between `before` and
        `after`: exactly `before + ",".join(RunStore.history(session_id, "execution"))
        .encode() + after`, built with one copy of the joined texts."""
        # The entry is taken out while it is extended, so no other thread shares it; the lock
        # is never held while the store is read (no lock-order inversion with its own).
        with self._lock:
            entry = self._entries.pop(session_id, None)
            if entry is not None:
                self._bytes -= len(entry.joined)
        entry = self._extend(session_id, entry)
        if entry is None:
            entry = self._extend(session_id, None)
        assert entry is not None  # a build from nothing takes the rows as they are
        found = b"".join((before, entry.joined, after))
        with self._lock:
            self._keep(session_id, entry)
        return found

    def _extend(self, session_id: str, entry: _Entry | None) -> _Entry | None:
        """`entry` extended by the rows stored after it; None when it no longer describes the
        store: another generation, or sums that do not add up (rows appended out of seq order,
        as a database whose sequences are not commit-ordered may commit them): rebuild. With
        no entry, a build from the rows as they are (the truth, whatever the sums say)."""
        rows = self.store.read(_NEW_ROWS, (session_id, entry.last_seq if entry else 0))
        if not rows or rows[0][0] != 0:
            raise KeyError(f"no session {session_id!r}")
        _, generation, count, size = rows[0]
        if entry is not None and entry.generation != generation:
            return None
        fresh = entry is None
        if entry is None:
            entry = _Entry(int(generation))
        if len(rows) > 1:
            texts = [str(row[1]) for row in rows[1:]]
            data = ",".join(texts).encode()
            if entry.count:
                entry.joined += b","
            entry.joined += data
            entry.count += len(texts)
            entry.size += len(data) - (len(texts) - 1)  # less the `,` (one byte) between
            entry.last_seq = int(rows[-1][0])
        if not fresh and (entry.count, entry.size) != (count, size):
            return None
        return entry

    def _keep(self, session_id: str, entry: _Entry) -> None:
        """Keep `entry` as the most recent; drop the least recently used beyond the bounds."""
        replaced = self._entries.pop(session_id, None)  # built meanwhile by another thread
        if replaced is not None:
            self._bytes -= len(replaced.joined)
        self._entries[session_id] = entry
        self._bytes += len(entry.joined)
        while len(self._entries) > 1 and (len(self._entries) > self.max_sessions
                                          or self._bytes > self.max_bytes):
            _, dropped = self._entries.popitem(last=False)
            self._bytes -= len(dropped.joined)
