"""The executor's durable store: what a process keeps on disk across a crash.

Before `accepted` is sent, the call's operation key and assignment (claim, grant, plan) are
stored; every receipt is stored, as the exact bytes to send, before it is sent (EXE-06,
EXE-07). A restarted process (`SimulatedExecutor.restart`) gets the same `Journal` object and
nothing else, so whatever it does after a crash it can only have learnt from here.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from arck.simulator.executor.plan import CallPlan

__all__ = ["Journal", "JournalEntry", "StoredReceipt", "canonical_bytes"]


def canonical_bytes(body: Any) -> bytes:
    """A receipt as sent: sorted keys, no spaces, UTF-8 (the same bytes on every delivery)."""
    return json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


@dataclass
class StoredReceipt:
    receipt_id: str
    kind: str  # accepted | progress | a final kind
    body: bytes
    sequence: int | None = None  # progress receipts only
    sent: bool = False  # put on the wire at least once
    # An answer came back, whatever its status (not a lost one): only unanswered receipts
    # are sent again after a restart.
    answered: bool = False
    held: bool = False  # a late final: stored, sent only when released

    @property
    def final(self) -> bool:
        return self.kind not in ("accepted", "progress")


@dataclass
class JournalEntry:
    """One accepted-or-about-to-be call of this executor."""

    call_id: str
    operation_key: str
    attempt: int
    claim_id: str
    grant: Any
    plan: CallPlan
    receipts: list[StoredReceipt] = field(default_factory=list)
    confirmed: bool = False  # the platform confirmed `accepted` (a 200 with state accepted)
    handler_started: bool = False  # stored before the handler runs: never run it again
    fired: set[str] = field(default_factory=set)  # faults already fired for this call
    closed: bool = False  # nothing more to send: final answered, refused, or given up

    def receipt(self, kind: str, sequence: int | None = None) -> StoredReceipt | None:
        return next((r for r in self.receipts if (r.kind == kind or (
            kind == "final" and r.final)) and (sequence is None or r.sequence == sequence)),
            None)

    def unanswered(self) -> list[StoredReceipt]:
        """Stored receipts with no answer yet, in the order they were stored."""
        return [r for r in self.receipts if not r.answered]


class Journal:
    """In memory, survives `restart()`; one per executor identity (peers have their own)."""

    def __init__(self) -> None:
        self._entries: dict[str, JournalEntry] = {}
        self._attempts: dict[str, int] = {}
        self._lock = threading.Lock()

    def next_attempt(self, call_id: str) -> int:
        """How many times this executor has won a claim on the call, this one included: part
        of receipt ids, so a re-claimed call never reuses one with another body (EXE-09)."""
        with self._lock:
            self._attempts[call_id] = self._attempts.get(call_id, 0) + 1
            return self._attempts[call_id]

    def open(self, entry: JournalEntry) -> JournalEntry:
        with self._lock:
            self._entries[entry.call_id] = entry
            return entry

    def store(self, entry: JournalEntry, receipt: StoredReceipt) -> StoredReceipt:
        with self._lock:
            entry.receipts.append(receipt)
            return receipt

    def get(self, call_id: str) -> JournalEntry | None:
        with self._lock:
            return self._entries.get(call_id)

    def entries(self) -> list[JournalEntry]:
        with self._lock:
            return list(self._entries.values())

    def open_entries(self) -> list[JournalEntry]:
        """Calls a restarted process still has work for, in the order they were journaled."""
        return [e for e in self.entries() if not e.closed]
