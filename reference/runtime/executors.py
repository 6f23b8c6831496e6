"""Executors: registration, their credentials and whether they are online (docs/executors.md).

An executor credential is a kind of its own (AUTH-04): its token is derived from the executor
id and the engine's secret, so nothing secret is stored, but authentication still reads the
executor from the store (tenant, permissions): a token of an executor the store does not hold
is unknown (401). Online means a heartbeat within the last 60 s of the injected clock (EXE-02);
registering is not a heartbeat. Registered executors never change but for that heartbeat.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3

from pydantic import ValidationError

from arck.reference.auth import Principal
from arck.reference.clock import Clock
from arck.reference.errors import NotFound, ValidationFailed
from arck.reference.models import validation_failed
from arck.reference.runtime.executor_wire import (
    PERMISSIONS,
    Executor,
    ExecutorCreate,
    ExecutorRegistered,
    HeartbeatAnswer,
)
from arck.reference.store import Store

__all__ = ["DEV_EXECUTOR_SECRET", "ONLINE_SECONDS", "SCHEMA", "TOKEN_PREFIX", "Executors"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS executors (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL,
    name TEXT NOT NULL, bindings TEXT NOT NULL, permissions TEXT NOT NULL,
    online_until REAL);
"""
# Like the development credentials: for tests and `arck serve` only, never in production.
DEV_EXECUTOR_SECRET = "arck-dev-executor-secret"
TOKEN_PREFIX = "arck-exe-"
ONLINE_SECONDS = 60.0


class Executors:
    """The executors of one store, their tokens (under `secret`) and heartbeats."""

    def __init__(self, store: Store, clock: Clock, secret: str = DEV_EXECUTOR_SECRET) -> None:
        self.store = store
        self.clock = clock
        self._secret = secret.encode()
        store.install(SCHEMA)

    def token(self, executor_id: str) -> str:
        """`arck-exe-<executor_id>-<24 hex digits>`: HMAC-SHA256 of the id under the secret."""
        mac = hmac.new(self._secret, executor_id.encode(), hashlib.sha256).hexdigest()[:24]
        return f"{TOKEN_PREFIX}{executor_id}-{mac}"

    def principal(self, token: str) -> Principal | None:
        """The executor a token names, if it is derived right and the store holds it."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        executor_id, _, _ = token.removeprefix(TOKEN_PREFIX).rpartition("-")
        if not executor_id or not hmac.compare_digest(token, self.token(executor_id)):
            return None
        rows = self.store.read("SELECT tenant, permissions FROM executors WHERE id = ?",
                               (executor_id,))
        if not rows:
            return None
        tenant, permissions = rows[0]
        return Principal(str(tenant), frozenset(json.loads(permissions)), frozenset(),
                         executor_id=executor_id)

    def register(self, tenant: str, data: object) -> ExecutorRegistered:
        """Bindings named are looked up first (404 at `/bindings/<i>`), then the body is
        validated (422): the profile's order for resources named in a body."""
        bindings = data.get("bindings") if isinstance(data, dict) else None
        if isinstance(bindings, list):
            for i, binding_id in enumerate(bindings):
                if isinstance(binding_id, str) and self.store.binding(tenant, binding_id) is None:
                    raise NotFound(f"/bindings/{i}: no binding with this id", f"/bindings/{i}")
        request = _validate(data)
        _distinct(request.bindings, "/bindings")
        _distinct(list(request.permissions), "/permissions")
        if "executor:connect" not in request.permissions:
            raise ValidationFailed("/permissions: must include executor:connect",
                                   "/permissions")
        permissions: list[str] = [p for p in PERMISSIONS if p in request.permissions]
        with self.store.transaction() as db:
            executor_id = Store.insert(
                db, "executors", "exe", ("tenant", "name", "bindings", "permissions"),
                (tenant, request.name, json.dumps(request.bindings),
                 json.dumps(permissions)))
        return ExecutorRegistered(executor_id=executor_id, name=request.name,
                                  bindings=request.bindings, permissions=permissions,
                                  token=self.token(executor_id))

    def get(self, tenant: str, executor_id: str, path: str = "executor_id") -> Executor:
        rows = self.store.read(
            "SELECT name, bindings, permissions, online_until FROM executors "
            "WHERE id = ? AND tenant = ?", (executor_id, tenant))
        if not rows:
            raise NotFound("no executor with this id", path)
        name, bindings, permissions, online_until = rows[0]
        return Executor(executor_id=executor_id, name=name, bindings=json.loads(bindings),
                        permissions=json.loads(permissions), online_until=online_until)

    def heartbeat(self, executor_id: str) -> HeartbeatAnswer:
        until = self.clock.now() + ONLINE_SECONDS
        with self.store.transaction() as db:
            db.execute("UPDATE executors SET online_until = ? WHERE id = ?",
                       (until, executor_id))
        return HeartbeatAnswer(executor_id=executor_id, online_until=until)

    @staticmethod
    def bindings(db: sqlite3.Connection, executor_id: str) -> list[str]:
        row = db.execute("SELECT bindings FROM executors WHERE id = ?",
                         (executor_id,)).fetchone()
        return list(json.loads(row[0])) if row else []

    @staticmethod
    def online(db: sqlite3.Connection, executor_id: str, at: float) -> bool:
        row = db.execute("SELECT online_until FROM executors WHERE id = ?",
                         (executor_id,)).fetchone()
        return row is not None and row[0] is not None and float(row[0]) > at


def _validate(data: object) -> ExecutorCreate:
    try:
        return ExecutorCreate.model_validate(data, strict=True)
    except ValidationError as exc:
        raise validation_failed(exc) from None


def _distinct(items: list[str], path: str) -> None:
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item in seen:
            raise ValidationFailed(f"{path}/{i}: named twice", f"{path}/{i}")
        seen.add(item)
