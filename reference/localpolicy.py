"""A deployment's local policy for one operation (CAP-09): it may only tighten what the
declaration states, so a setting that would loosen a bound is refused at configuration,
naming the field, and never applied (docs/capabilities.md, "Local policy").

Tighter, axis by axis: a timeout no longer than the declared one (or the 60 s default wait
when none is declared); a rate limit that admits no more dispatches in a declared window than
the declaration does, `count × ⌈declared window / window⌉ ≤ declared count` (then no interval
of any length admits more); retries turned on only where idempotency is declared.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, StrictBool, StrictInt

from arck.reference.capability import (
    CapabilityDeclaration,
    CapabilityRateLimit,
    ExecutionPolicy,
    NullsRefused,
    effective,
    window_ms,
)
from arck.reference.models import Binding

__all__ = ["LocalPolicy", "apply", "declaration_of", "enforced", "loosening", "tightened"]


class LocalPolicy(NullsRefused):
    """`PUT /v1/bindings/{id}/local-policy`: every member optional; `{}` clears it."""

    model_config = ConfigDict(extra="forbid", strict=True)
    timeout_ms: StrictInt | None = Field(default=None, gt=0)
    rate_limit: CapabilityRateLimit | None = None
    retries: StrictBool | None = None


def loosening(local: LocalPolicy, declared: ExecutionPolicy) -> tuple[str, str] | None:
    """The first setting that would loosen the declared policy: (JSON Pointer, why)."""
    if local.timeout_ms is not None and local.timeout_ms > declared.timeout_ms:
        bound = "declared" if declared.timeout_source == "declared" else "default"
        return "/timeout_ms", (f"{local.timeout_ms} ms is longer than the {bound} timeout of "
                               f"{declared.timeout_ms} ms: local policy may only shorten it")
    limit = declared.rate_limit
    if local.rate_limit is not None and limit is not None:
        count, window = local.rate_limit.count, local.rate_limit.window
        if count > limit["count"]:
            return "/rate_limit/count", (f"{count} is more than the declared {limit['count']} "
                                         f"per {limit['window']}")
        fits = -(-window_ms(limit["window"]) // window_ms(window))  # windows in the declared one
        if count * fits > limit["count"]:
            return "/rate_limit/window", (
                f"{count} per {window} admits {count * fits} dispatches in {limit['window']}, "
                f"more than the declared {limit['count']}")
    if local.retries is True and not declared.idempotent:
        return "/retries", ("automatic retries need a declaration of idempotency, which this "
                            "operation does not have")
    return None


def apply(declared: ExecutionPolicy, local: LocalPolicy | None) -> ExecutionPolicy:
    """The effective policy: the declared one, tightened by a local policy that passed
    `loosening`."""
    if local is None:
        return declared
    update: dict[str, Any] = {"local": local.model_dump(exclude_unset=True)}
    if local.timeout_ms is not None:
        update |= {"timeout_ms": local.timeout_ms, "timeout_source": "local"}
    if local.rate_limit is not None:
        update["rate_limit"] = local.rate_limit.model_dump()
    if local.retries is False:
        update["retries_allowed"] = False
    return declared.model_copy(update=update)


def declaration_of(binding: Binding) -> CapabilityDeclaration | None:
    """The binding's stored declaration (validated when it was registered)."""
    if binding.capability is None:
        return None
    return CapabilityDeclaration.model_validate(binding.capability)


def enforced(binding: Binding, stored_local: dict[str, Any] | None) -> ExecutionPolicy:
    """CAP-04, CAP-09: the policy enforced for the binding's operation: its declaration's,
    tightened by the deployment's local policy as stored."""
    return tightened(effective(binding.binding_id, declaration_of(binding)), stored_local)


def tightened(declared: ExecutionPolicy, stored_local: dict[str, Any] | None) -> ExecutionPolicy:
    """`declared` (a binding's, which never changes) under the local policy as stored."""
    local = LocalPolicy.model_validate(stored_local) if stored_local is not None else None
    return apply(declared, local)
