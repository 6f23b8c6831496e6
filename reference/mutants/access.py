"""Mutants that let the wrong caller in, or answer in the wrong order (AUTH, DRY-06, PRO-02)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Set
from typing import Any, ClassVar

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from arck.reference.auth import DRY_RUN, Principal
from arck.reference.engine import Engine
from arck.reference.errors import ValidationFailed
from arck.reference.models import AgentVersion, DryRunResponse
from arck.reference.mutants.base import serve

# What an anonymous GET runs as: the development credential with configuration:read.
GUEST_TOKEN = b"Bearer arck-dev-configread"


class NoDryRunPermissionEngine(Engine):
    permissions: ClassVar[Mapping[str, frozenset[str]]] = {
        **Engine.permissions,
        "dry_run": frozenset(),
    }


class NoScopeEngine(Engine):
    """Checks the permission but never the agent scope."""

    def authorize(
        self,
        principal: Principal,
        permissions: Set[str],
        agent_id: str | None,
        *,
        path: str = "agent_id",
    ) -> None:
        super().authorize(principal, permissions, None, path=path)


class CrossTenantEngine(Engine):
    """Dry-run finds the version in whichever tenant holds it and previews it there."""

    def dry_run_body(self, principal: Principal, data: object) -> DryRunResponse:
        if isinstance(data, dict) and isinstance(data.get("agent_version"), str):
            tenants = sorted({p.tenant for p in self.credentials.values()})
            for tenant in tenants:
                if self.store.version(tenant, data["agent_version"]) is not None:
                    principal = dataclasses.replace(principal, tenant=tenant)
                    break
        return super().dry_run_body(principal, data)


class ValidateFirstEngine(Engine):
    """Validates the dry-run body (422) before checking the caller's permission (403)."""

    permissions: ClassVar[Mapping[str, frozenset[str]]] = NoDryRunPermissionEngine.permissions

    def dry_run_body(self, principal: Principal, data: object) -> DryRunResponse:
        self.validate_dry_run(data)
        self.authorize(principal, DRY_RUN, None)
        return super().dry_run_body(principal, data)


class UnknownVersion422Engine(Engine):
    def get_version(
        self, principal: Principal, version_id: str, *, path: str = "agent_version"
    ) -> AgentVersion:
        if self.store.version(principal.tenant, version_id) is None:
            raise ValidationFailed(f"{path}: no such agent version", path)
        return super().get_version(principal, version_id, path=path)


class AnonymousReads:
    """ASGI middleware: a GET without credentials runs as the guest credential."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            headers: list[tuple[bytes, bytes]] = list(scope["headers"])
            if not any(name.lower() == b"authorization" for name, _ in headers):
                scope = {**scope, "headers": [*headers, (b"authorization", GUEST_TOKEN)]}
        await self.app(scope, receive, send)


def no_permission_check_on_dry_run() -> FastAPI:
    return serve(NoDryRunPermissionEngine())


def no_scope_check() -> FastAPI:
    return serve(NoScopeEngine())


def cross_tenant_preview() -> FastAPI:
    return serve(CrossTenantEngine())


def validation_before_permission() -> FastAPI:
    return serve(ValidateFirstEngine())


def unknown_version_422() -> FastAPI:
    return serve(UnknownVersion422Engine())


def anonymous_reads() -> FastAPI:
    app = serve()
    middleware: Any = AnonymousReads  # starlette types the factory loosely
    app.add_middleware(middleware)
    return app


def interactive_pages_public() -> FastAPI:
    """FastAPI's default interactive pages (`/docs`, `/redoc`) served without a credential:
    routes outside the document, which the profile keeps closed (only /openapi.json is)."""
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
    from starlette.requests import Request
    from starlette.responses import HTMLResponse

    app = serve()

    async def swagger(request: Request) -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="arck")

    async def redoc(request: Request) -> HTMLResponse:
        return get_redoc_html(openapi_url="/openapi.json", title="arck")

    app.add_route("/docs", swagger, include_in_schema=False)
    app.add_route("/redoc", redoc, include_in_schema=False)
    return app
