"""The steps every capability check takes on a target (docs/capabilities.md, "How the checks
judge"): registering a declared binding, and telling a target that takes no declarations
("not applicable") from one that refuses a valid one (a CAP-01 failure)."""

from __future__ import annotations

import re
from typing import Any

from arck.conformance.checking import expect
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotApplicable, NotTestable
from arck.conformance.judge import refused
from arck.simulator.target import CapabilityTarget, Exchange

__all__ = ["ABSENT", "declare", "error_path", "kept", "scope", "supported", "target"]

ABSENT = ("not applicable: the target takes no capability declarations on its bindings "
          "(docs/capabilities.md)")


def target(ctx: CheckContext) -> CapabilityTarget:
    if not isinstance(ctx.target, CapabilityTarget):
        raise NotApplicable(ABSENT + ": it has no declare_binding step")
    return ctx.target


def declare(ctx: CheckContext, decl: Any) -> Exchange:
    return target(ctx).declare_binding(ctx.name("operation"), decl)


def scope(ctx: CheckContext, what: str) -> str:
    """A scope of the plainest form (`op.<letters, digits, _>`), unique to this run."""
    return "op." + re.sub(r"[^a-z0-9_]", "_", ctx.name(what).lower())


def supported(ctx: CheckContext) -> None:
    """"Not applicable" unless the target takes a plain valid declaration."""
    kept(ctx, declare(ctx, {"version": 1, "enabled": True, "scope": scope(ctx, "probe")}))


def kept(ctx: CheckContext, exchange: Exchange, judged: bool = True) -> dict[str, Any]:
    """A valid declaration's binding; "not applicable" when the target shows it does not
    take declarations at all (it refuses the member itself, or answers without it). A
    refusal fails CAP-01 where the check `judged` it, else the check could not set up."""
    data = exchange.json_or_none()
    if refused(exchange) and error_path(exchange) == "/capability":
        raise NotApplicable(ABSENT + f": {exchange.describe()[:300]}")
    if not judged and not 200 <= exchange.status < 300:
        raise NotTestable(f"setup could not register a valid declaration (CAP-01 judges "
                          f"that): {exchange.describe()}", exchange=exchange)
    expect(200 <= exchange.status < 300, "CAP-01", "a valid declaration accepted",
           exchange.describe)
    if not isinstance(data, dict) or "capability" not in data:
        raise NotApplicable(ABSENT + f": its binding answers no `capability`: "
                                      f"{exchange.describe()[:300]}")
    return data


def error_path(exchange: Exchange) -> Any:
    data = exchange.json_or_none()
    error = data.get("error") if isinstance(data, dict) else None
    return error.get("path") if isinstance(error, dict) else None
