"""AUTH: credentials and tenant boundaries (SPEC §9) for the configuration and dry-run API;
the profile's 404 for another tenant's resources (PRO-02)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from arck.conformance.checking import check, expect
from arck.conformance.context import CheckContext
from arck.conformance.judge import refused
from arck.simulator.target import Exchange

# Interactive pages a web framework serves by default (FastAPI's among them).
PAGES = ("/docs", "/redoc", "/docs/oauth2-redirect")


def _operations(ctx: CheckContext) -> list[tuple[str, str]]:
    """Every operation the target documents, with path parameters filled in."""
    version = ctx.version(1024)
    fill = {
        "{binding_id}": ctx.binding_id(),
        "{tool_set_id}": version.tool_set_id,
        "{agent_id}": version.agent_id,
        "{agent_version}": version.agent_version,
    }
    doc = ctx.target.openapi().json_or_none()
    paths = doc.get("paths", {}) if isinstance(doc, dict) else {}
    found: list[tuple[str, str]] = []
    for path, item in paths.items():
        for method in item:
            if method.upper() not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
                continue
            for k, v in fill.items():
                path = path.replace(k, v)
            found.append((method.upper(), path))
    return found or [("POST", "/v1/tools/dry-run"), ("POST", "/v1/tool-sets")]


@check("AUTH-01")
def test_every_endpoint_needs_credentials(ctx: CheckContext) -> None:
    for method, path in _operations(ctx):
        body = b"{}" if method in ("POST", "PUT", "PATCH") else None
        anonymous = ctx.target.request(method, path, content=body, role="none")
        expect(refused(anonymous), "AUTH-01", f"{method} {path} without credentials refused",
               anonymous.describe)
        forged = ctx.target.request(method, path, content=body, role="forged")
        expect(refused(forged), "AUTH-01", f"{method} {path} with an unknown token refused",
               forged.describe)
    if ctx.profile != "reference":
        return  # pages outside the API (interactive docs) are the profile's decision
    for path in PAGES:
        anonymous = ctx.target.request("GET", path, role="none")
        expect(not 200 <= anonymous.status < 400, "AUTH-01", f"profile: GET {path} without "
               "credentials answers no page (only /openapi.json is public)",
               anonymous.describe)


@check("AUTH-03")
def test_tenants_are_isolated(ctx: CheckContext) -> None:
    version = ctx.version(1024)
    secret = "arck-tenant-secret-51c2"
    reads = (
        ctx.target.get_agent_version(version.agent_version, role="other_tenant"),
        ctx.target.get_tool_set(version.tool_set_id, role="other_tenant"),
        ctx.dry_run(version, {"note": secret}, role="other_tenant"),
    )
    for exchange in reads:
        text = exchange.body.decode("utf-8", "replace")
        expect(refused(exchange) and version.system_prompt not in text and secret not in text,
               "AUTH-03", "another tenant's resources not readable", exchange.describe)
    body = {"tool_set_id": version.tool_set_id, "system_prompt": "arck foreign"}
    exchange = ctx.target.publish_agent_version(ctx.agent_id, body, role="other_tenant")
    expect(refused(exchange), "AUTH-03",
           "another tenant's tool set not usable in a new agent version", exchange.describe)


def _same_answer(theirs: Exchange, their_id: str, blank: Exchange, unknown_id: str) -> bool:
    """Whether two answers are the same once each names its own id the same way."""
    return theirs.status == blank.status and theirs.body.replace(
        their_id.encode(), b"<id>") == blank.body.replace(unknown_id.encode(), b"<id>")


@check("PRO-02")
def test_other_tenants_resources_are_not_found(ctx: CheckContext) -> None:
    """Another tenant's version and tool set are 404, answered exactly as an id that exists
    nowhere is: existence across tenants is not revealed (a 403 would reveal it)."""
    version = ctx.version(1024)
    unknown = "arck-no-such-id-0"
    reads: tuple[tuple[str, Callable[[str], Exchange], str], ...] = (
        ("GET the version", lambda rid: ctx.target.get_agent_version(rid, role="other_tenant"),
         version.agent_version),
        ("GET the tool set", lambda rid: ctx.target.get_tool_set(rid, role="other_tenant"),
         version.tool_set_id),
        ("dry-run the version", lambda rid: ctx.dry_run(
            dataclasses.replace(version, agent_version=rid), {"ok": True}, role="other_tenant"),
         version.agent_version),
    )
    for what, read, their_id in reads:
        theirs, blank = read(their_id), read(unknown)
        expect(theirs.status == 404, "PRO-02", f"404 when another tenant tries to {what}",
               theirs.describe)
        expect(_same_answer(theirs, their_id, blank, unknown), "PRO-02",
               f"the same answer as for an unknown id when another tenant tries to {what}",
               lambda: f"{theirs.describe()} against {blank.describe()}")  # noqa: B023
