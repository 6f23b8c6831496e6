"""The business system behind the simulated executor: it counts side effects per operation key.

This is what "no side effect before confirmed acceptance" and "no handler run twice" are
judged on (EXE-06, EXE-10): each effect records whether the executor that caused it held a
confirmed acceptance at that moment. It is shared by an executor, its restarts and its peers
(one business system, several processes), and thread-safe for concurrent claimers.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

__all__ = ["BusinessSystem", "Effect"]


@dataclass(frozen=True)
class Effect:
    """One side effect: its operation key, the call and executor process that caused it, and
    whether that process had the platform's confirmation of its acceptance (`confirmed`)."""

    index: int
    operation_key: str
    call_id: str
    executor: str
    process: int
    confirmed: bool
    at: float | None  # the harness clock's time, when the target has one


class BusinessSystem:
    def __init__(self) -> None:
        self._effects: list[Effect] = []
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def perform(
        self, operation_key: str, *, call_id: str, executor: str, process: int,
        confirmed: bool, at: float | None,
    ) -> Effect:
        """Do the operation once more: a business system without deduplication, so a
        handler run twice shows as a count of 2."""
        with self._lock:
            effect = Effect(len(self._effects) + 1, operation_key, call_id, executor, process,
                            confirmed, at)
            self._effects.append(effect)
            self._counts[operation_key] += 1
            return effect

    def count(self, operation_key: str) -> int:
        with self._lock:
            return self._counts[operation_key]

    def total(self) -> int:
        with self._lock:
            return len(self._effects)

    def effects(self, operation_key: str | None = None) -> list[Effect]:
        """Every effect in order, or those of one operation key."""
        with self._lock:
            return [e for e in self._effects
                    if operation_key is None or e.operation_key == operation_key]

    def unconfirmed(self) -> list[Effect]:
        """Effects done without a confirmed acceptance: each one breaks EXE-06."""
        return [e for e in self.effects() if not e.confirmed]

    def repeated(self) -> dict[str, int]:
        """Operation keys done more than once, with their counts: each one breaks EXE-10."""
        with self._lock:
            return {key: n for key, n in sorted(self._counts.items()) if n > 1}
