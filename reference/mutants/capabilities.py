"""Mutants of capability declarations (CAP-01, 02, 04, 14): a declaration read leniently, a
refusal that names nothing, an operation not enabled offered anyway, a policy that derives
one hint from another or loosens a default."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.capability import ExecutionPolicy
from arck.reference.engine import Engine
from arck.reference.errors import UnknownBinding, ValidationFailed
from arck.reference.localpolicy import LocalPolicy
from arck.reference.models import Binding, BindingCreate
from arck.reference.mutants.base import serve

_BOOLEAN_WORDS = {"true": True, "false": False, 1: True, 0: False}
_BOOLEAN_KEYS = {"enabled", "readonly", "idempotent", "required", "sensitive"}
_TOP = {"version", "scope", "enabled", "risk", "subject", "audit", "execution"}
_EXECUTION = {"readonly", "idempotent", "timeout_ms", "rate_limit"}


def _declaration(data: object) -> dict[str, Any] | None:
    found = data.get("capability") if isinstance(data, dict) else None
    return found if isinstance(found, dict) else None


class VersionGuessedEngine(Engine):
    """Any integer version is read as version 1."""

    def validate_binding(self, data: object) -> BindingCreate:
        decl = _declaration(data)
        if decl is not None and type(decl.get("version")) is int:
            decl["version"] = 1
        return super().validate_binding(data)


class NonPositiveTimeoutEngine(Engine):
    """A timeout of 0 or less is taken as 'no timeout declared'."""

    def validate_binding(self, data: object) -> BindingCreate:
        execution = (_declaration(data) or {}).get("execution")
        if isinstance(execution, dict):
            timeout = execution.get("timeout_ms")
            if type(timeout) is int and timeout <= 0:
                del execution["timeout_ms"]
        return super().validate_binding(data)


class CoercedBooleansEngine(Engine):
    """"true", "false", 1 and 0 are taken for booleans in a declaration."""

    def validate_binding(self, data: object) -> BindingCreate:
        decl = _declaration(data)
        for place in (decl, *((decl or {}).get(k) for k in ("execution", "subject", "audit"))):
            if isinstance(place, dict):
                for key, value in place.items():
                    if key in _BOOLEAN_KEYS and not isinstance(value, bool) and \
                            isinstance(value, str | int) and value in _BOOLEAN_WORDS:
                        place[key] = _BOOLEAN_WORDS[value]
        return super().validate_binding(data)


class AnyScopeEngine(Engine):
    """Any string is a scope, the empty one included."""

    def validate_binding(self, data: object) -> BindingCreate:
        decl = _declaration(data)
        scope = decl.get("scope") if decl is not None else None
        if decl is not None and isinstance(scope, str):
            decl["scope"] = "checked-later"
            made = super().validate_binding(data)
            if made.capability is not None:
                made.capability.scope = scope
            decl["scope"] = scope
            return made
        return super().validate_binding(data)


class UnknownMembersDroppedEngine(Engine):
    """Members a declaration does not know are dropped silently, not refused."""

    def validate_binding(self, data: object) -> BindingCreate:
        decl = _declaration(data)
        known = {"": _TOP, "execution": _EXECUTION, "subject": {"required"},
                 "audit": {"sensitive"}, "risk": {"level"}}
        for where, names in known.items():
            place = decl if not where else (decl or {}).get(where)
            if isinstance(place, dict):
                for key in [k for k in place if k not in names]:
                    del place[key]
        return super().validate_binding(data)


class PathlessErrorsEngine(Engine):
    """A broken declaration is refused with neither path nor member named."""

    def validate_binding(self, data: object) -> BindingCreate:
        try:
            return super().validate_binding(data)
        except ValidationFailed as exc:
            if exc.path.startswith("/capability"):
                raise ValidationFailed("the capability declaration is invalid", "") from None
            raise


class DisabledOfferedEngine(Engine):
    """A tool set may name an operation not enabled; its tool reaches the model."""

    def check_binding(self, principal: Principal, binding_id: str, path: str) -> None:
        if self.store.binding(principal.tenant, binding_id) is None:
            raise UnknownBinding(f"{path}: no registered binding {binding_id[:64]!r}", path)


class OmittedEnabledEngine(Engine):
    """A declaration that leaves `enabled` out is taken as enabled."""

    def check_binding(self, principal: Principal, binding_id: str, path: str) -> None:
        binding = self.store.binding(principal.tenant, binding_id)
        if binding is not None and binding.capability is not None \
                and "enabled" not in binding.capability:
            return
        super().check_binding(principal, binding_id, path)


class ReadonlyIdempotentEngine(Engine):
    """Read-only is taken to mean idempotent (a hint derived from another, CAP-04)."""

    def binding_policy(self, principal: Principal, binding_id: str) -> ExecutionPolicy:
        policy = super().binding_policy(principal, binding_id)
        return policy.model_copy(update={"idempotent": policy.idempotent or policy.readonly})


class ShortDefaultWaitEngine(Engine):
    """With no declared timeout the wait is a model call's 30 s, not the profile's 60 s."""

    def binding_policy(self, principal: Principal, binding_id: str) -> ExecutionPolicy:
        policy = super().binding_policy(principal, binding_id)
        if policy.timeout_source == "default":
            return policy.model_copy(update={"timeout_ms": 30_000})
        return policy


class HintsDroppedEngine(Engine):
    """The declaration is kept without its rate limit (it answers without it)."""

    def publish_binding(self, principal: Principal, data: object) -> Binding:
        execution = (_declaration(data) or {}).get("execution")
        if isinstance(execution, dict):
            execution.pop("rate_limit", None)
        return super().publish_binding(principal, data)


class LongerLocalTimeoutEngine(Engine):
    """A local timeout longer than the declared one is applied."""

    def loosens(self, local: LocalPolicy, declared: ExecutionPolicy) -> tuple[str, str] | None:
        return super().loosens(local.model_copy(update={"timeout_ms": None}), declared)


class CountOnlyRateEngine(Engine):
    """A local rate limit is compared by its count alone: a shorter window is taken."""

    def loosens(self, local: LocalPolicy, declared: ExecutionPolicy) -> tuple[str, str] | None:
        limit, mine = declared.rate_limit, local.rate_limit
        if limit is not None and mine is not None and mine.count <= limit["count"]:
            local = local.model_copy(update={"rate_limit": None})
        return super().loosens(local, declared)


class LocalRetriesEngine(Engine):
    """Local policy may turn retries on for an operation not declared idempotent."""

    def loosens(self, local: LocalPolicy, declared: ExecutionPolicy) -> tuple[str, str] | None:
        return super().loosens(local.model_copy(update={"retries": None}), declared)

    def set_local_policy(
        self, principal: Principal, binding_id: str, data: object
    ) -> ExecutionPolicy:
        policy = super().set_local_policy(principal, binding_id, data)
        if isinstance(data, dict) and data.get("retries") is True:
            return policy.model_copy(update={"retries_allowed": True})
        return policy


def version_guessed() -> FastAPI:
    return serve(VersionGuessedEngine())


def non_positive_timeout() -> FastAPI:
    return serve(NonPositiveTimeoutEngine())


def coerced_booleans() -> FastAPI:
    return serve(CoercedBooleansEngine())


def pathless_errors() -> FastAPI:
    return serve(PathlessErrorsEngine())


def disabled_offered() -> FastAPI:
    return serve(DisabledOfferedEngine())


def omitted_enabled() -> FastAPI:
    return serve(OmittedEnabledEngine())


def readonly_idempotent() -> FastAPI:
    return serve(ReadonlyIdempotentEngine())


def short_default_wait() -> FastAPI:
    return serve(ShortDefaultWaitEngine())


def hints_dropped() -> FastAPI:
    return serve(HintsDroppedEngine())


def longer_local_timeout() -> FastAPI:
    return serve(LongerLocalTimeoutEngine())


def count_only_rate() -> FastAPI:
    return serve(CountOnlyRateEngine())


def local_retries() -> FastAPI:
    return serve(LocalRetriesEngine())


def any_scope() -> FastAPI:
    return serve(AnyScopeEngine())


def unknown_members_dropped() -> FastAPI:
    return serve(UnknownMembersDroppedEngine())
