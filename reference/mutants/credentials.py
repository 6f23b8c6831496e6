"""Mutants of credential kinds (AUTH-04): executor and service credentials standing in for
each other. Both keep every other rule, so only the check of credential kinds sees them."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Set

from fastapi import FastAPI

from arck.reference.auth import (
    CONFIG_READ,
    EXECUTOR_CONNECT,
    RUNTIME_READ,
    TOOLS_EXECUTE,
    Principal,
)
from arck.reference.engine import Engine
from arck.reference.mutants.base import serve
from arck.reference.runtime.executor_wire import Claim, ReceiptAnswer
from arck.reference.runtime.service import Runtime
from arck.reference.store import Store


class ServiceExecutesEngine(Engine):
    """A service credential holding `tools:execute` passes the executor API's check (AUTH-04:
    executor credentials are a kind of their own)."""

    def authorize_executor(self, principal: Principal, permissions: Set[str]) -> None:
        if principal.executor_id is None and permissions & principal.permissions:
            return
        super().authorize_executor(principal, permissions)


class ServiceExecutorRuntime(Runtime):
    """Acts for a service caller as the tenant's built-in executor: every binding in scope,
    always online (with `ServiceExecutesEngine`)."""

    def _as_executor(self, principal: Principal) -> Principal:
        if principal.executor_id is not None:
            return principal
        name = f"built-in executor of {principal.tenant}"
        with self.store.transaction() as db:
            bindings = [r[0] for r in db.execute(
                "SELECT id FROM bindings WHERE tenant = ? ORDER BY seq", (principal.tenant,))]
            row = db.execute("SELECT id FROM executors WHERE tenant = ? AND name = ?",
                             (principal.tenant, name)).fetchone()
            if row is None:
                executor_id = Store.insert(
                    db, "executors", "exe",
                    ("tenant", "name", "bindings", "permissions", "online_until"),
                    (principal.tenant, name, json.dumps(bindings),
                     json.dumps([EXECUTOR_CONNECT, TOOLS_EXECUTE]), 1e18))
            else:
                executor_id = str(row[0])
                db.execute("UPDATE executors SET bindings = ? WHERE id = ?",
                           (json.dumps(bindings), executor_id))
        return dataclasses.replace(principal, executor_id=executor_id)

    def claim(self, principal: Principal, call_id: str, data: object) -> Claim:
        return super().claim(self._as_executor(principal), call_id, data)

    async def submit_receipt(self, principal: Principal, call_id: str,
                             data: object) -> ReceiptAnswer:
        return await super().submit_receipt(self._as_executor(principal), call_id, data)


class ExecutorReadsEngine(Engine):
    """An executor credential may read what its tenant's runs hold, as if it were a reader
    of every agent (AUTH-04: executor credentials serve only the executor API)."""

    def authorize(
        self, principal: Principal, permissions: Set[str], agent_id: str | None, *,
        path: str = "agent_id",
    ) -> None:
        if principal.executor_id is not None and (
            not permissions or permissions & {RUNTIME_READ, CONFIG_READ}
        ):
            return
        super().authorize(principal, permissions, agent_id, path=path)


def service_credential_executes() -> FastAPI:
    return serve(engine=ServiceExecutesEngine(), runtime_class=ServiceExecutorRuntime)


def executor_reads_runs() -> FastAPI:
    return serve(engine=ExecutorReadsEngine())


