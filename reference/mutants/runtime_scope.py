"""Mutants of who may reach sessions and runs (PRO-02, AUTH-03): the agent scope dropped from
the runtime's one session lookup, runs found in whichever tenant holds them, a revocation
reaching every tenant's agent of that name. Each keeps the permissions and every other rule;
the runtime permission matrix (conformance/checks/test_auth_runtime.py) sees them, the last
only by reading back what a request answered as expected changed."""

from __future__ import annotations

import dataclasses

from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.mutants.base import serve
from arck.reference.runtime.runstore import SessionRow
from arck.reference.runtime.service import Runtime
from arck.reference.runtime.wire import ToolRevocation


class UnscopedSessionsRuntime(Runtime):
    """Sessions, their histories, runs, events, tool calls, cancels and input look the
    session up in the caller's tenant but never check the caller's agent scope over it."""

    def get_session(
        self, principal: Principal, session_id: str, path: str = "session_id"
    ) -> SessionRow:
        return super().get_session(dataclasses.replace(principal, agents="*"), session_id,
                                   path)


class CrossTenantRunsRuntime(Runtime):
    """A run id is looked up in the caller's tenant first, then in every other tenant: a run
    of another tenant is read (snapshot, events, tool calls) and changed (cancel, input) as
    if it were the caller's."""

    def _run(self, principal: Principal, run_id: str) -> tuple[str, str, str | None]:
        tenants = sorted({p.tenant for p in self.engine.credentials.values()})
        for tenant in (principal.tenant, *tenants):
            if self.runs.run(tenant, run_id) is not None:
                return super()._run(dataclasses.replace(principal, tenant=tenant), run_id)
        return super()._run(principal, run_id)


class RevocationEverywhereRuntime(Runtime):
    """A tool revocation is applied to the agent of that name in every tenant, the caller's
    last: its answer names only the caller's runs, but another tenant's runs end."""

    def revoke_tool(self, principal: Principal, agent_id: str, data: object) -> ToolRevocation:
        tenants = sorted({p.tenant for p in self.engine.credentials.values()})
        for tenant in tenants:
            if tenant != principal.tenant:
                super().revoke_tool(dataclasses.replace(principal, tenant=tenant), agent_id, data)
        return super().revoke_tool(principal, agent_id, data)


def runtime_scope_unchecked() -> FastAPI:
    return serve(runtime_class=UnscopedSessionsRuntime)


def runtime_cross_tenant_runs() -> FastAPI:
    return serve(runtime_class=CrossTenantRunsRuntime)


def revocation_crosses_tenants() -> FastAPI:
    return serve(runtime_class=RevocationEverywhereRuntime)
