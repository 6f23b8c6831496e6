"""Mutants of pacing (CAP-08): no pacing, a window counted per session instead of per
operation × tenant, one dispatch too many, a fixed window, a window read in the wrong unit."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from arck.reference.capability import ExecutionPolicy, window_ms
from arck.reference.mutants.base import serve
from arck.reference.runtime import pacing
from arck.reference.runtime.worker import Workers


class _Unpaced(Workers):
    """The declared rate limit is never applied: every call is dispatched at once."""

    @staticmethod
    def pace(db: sqlite3.Connection, tenant: str, policy: ExecutionPolicy, at: float,
             call_id: str) -> int | None:
        return None


class _PerSession(Workers):
    """Dispatches are counted per session (each of a tenant's sessions has its own window)."""

    @staticmethod
    def pace(db: sqlite3.Connection, tenant: str, policy: ExecutionPolicy, at: float,
             call_id: str) -> int | None:
        session = call_id.partition("/")[0]
        return pacing.admit(db, f"{tenant}/{session}", policy, at, call_id)


def _admitting(change: Callable[[dict[str, Any]], dict[str, Any]], doc: str) -> type[Workers]:
    """Workers whose window is asked with the rate limit as `change` reads it."""

    def pace(db: sqlite3.Connection, tenant: str, policy: ExecutionPolicy, at: float,
             call_id: str) -> int | None:
        if policy.rate_limit is None:
            return None
        changed = policy.model_copy(update={"rate_limit": change(dict(policy.rate_limit))})
        return pacing.admit(db, tenant, changed, at, call_id)

    return type("AltWindowWorkers", (Workers,), {"pace": staticmethod(pace), "__doc__": doc})


_OneTooMany = _admitting(lambda limit: {**limit, "count": int(limit["count"]) + 1},
                         "The window admits count + 1 dispatches.")
# `1m` lasts one second: the number read as seconds whatever its unit
_WindowInSeconds = _admitting(
    lambda limit: {**limit, "window": str(limit["window"]).rstrip("smhd") + "s"},
    "A window's number read as seconds whatever its unit.")


class _FixedWindow(Workers):
    """A fixed window (calendar buckets of the window's length) instead of a sliding one:
    within the core bound, not the profile's."""

    @staticmethod
    def pace(db: sqlite3.Connection, tenant: str, policy: ExecutionPolicy, at: float,
             call_id: str) -> int | None:
        if policy.rate_limit is None:
            return None
        window = window_ms(str(policy.rate_limit["window"]))
        now = round(at * 1000)
        start = now - now % window
        inside = db.execute("SELECT COUNT(*) FROM dispatches WHERE tenant = ? AND binding_id = ? "
                            "AND at_ms >= ?", (tenant, policy.binding_id, start)).fetchone()[0]
        if inside >= int(policy.rate_limit["count"]):
            return start + window - now
        pacing.record(db, tenant, policy.binding_id, now, call_id)
        return None


def unpaced() -> FastAPI:
    return serve(workers_class=_Unpaced)


def per_session() -> FastAPI:
    return serve(workers_class=_PerSession)


def one_too_many() -> FastAPI:
    return serve(workers_class=_OneTooMany)


def fixed_window() -> FastAPI:
    return serve(workers_class=_FixedWindow)


def window_in_seconds() -> FastAPI:
    return serve(workers_class=_WindowInSeconds)
