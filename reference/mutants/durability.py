"""Mutants of durable runs (RUN-02): what a crash and a restart show, one defect each.

Each works only after a worker died: an engine that never restarts looks right in every
other check, which is why RUN-02 needs a check that kills it.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from arck.reference.mutants.base import serve
from arck.reference.runtime.modelcall import ModelClient
from arck.reference.runtime.runstore import Claim, RunStore, event
from arck.reference.runtime.worker import Workers


class _NoLookup:
    """A provider client whose lookups say every request is unknown to the provider."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def lookup(self, idempotency_key: str, timeout_s: float) -> list[dict[str, Any]]:
        return []


class BlindTakeoverWorkers(Workers):
    """Takes over a dead worker's run by sending its in-flight call again, unchecked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model = _NoLookup(self.model)  # type: ignore[assignment]


def blind_takeover() -> FastAPI:
    return serve(workers_class=BlindTakeoverWorkers)


class _QueuedOnly(RunStore):
    """Claims queued runs only: a running run whose worker died is never taken over."""

    def __init__(self, inner: RunStore) -> None:
        self.__dict__.update(inner.__dict__)

    def claim(self, worker: str, at: float, lease: float = 0.0) -> Claim | None:
        with self.store.transaction() as db:
            row = db.execute(
                "SELECT id FROM runs WHERE state = 'queued' ORDER BY seq LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            db.execute("UPDATE runs SET state = 'running', worker = ?, lease_until = ? "
                       "WHERE id = ?", (worker, at + lease, row[0]))
            event(db, row[0], "run.started", at, worker=worker)
        return Claim(str(row[0]), takeover=False)

    def next_lease_expiry(self) -> float | None:
        return None  # nothing to take over, so no reason to wake


class NoTakeoverWorkers(Workers):
    def __init__(self, store: Any, runs: RunStore, *args: Any, **kwargs: Any) -> None:
        super().__init__(store, _QueuedOnly(runs), *args, **kwargs)


def no_takeover() -> FastAPI:
    return serve(workers_class=NoTakeoverWorkers)
