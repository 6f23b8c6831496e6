"""The capability contract v1 declaration (`x-agent-capability`, CAP-01, CAP-14) and the
execution policy it yields (CAP-04), as the reference profile reads them.

A declaration travels on a binding (`POST /v1/bindings` with `capability`). It is validated
strictly: every error names its JSON Pointer, unknown members are refused, and a `version`
other than 1 is refused as unknown, never read as 1. The effective policy fills each hint the
declaration leaves out with its conservative value and derives no hint from another:
docs/capabilities.md.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from arck.reference.canonical import pointer_token

__all__ = ["DEFAULT_WAIT_MS", "KNOWN_VERSION", "CapabilityDeclaration", "CapabilityRateLimit",
           "ExecutionPolicy", "NullsRefused", "effective", "refuse_nulls", "window_ms"]

KNOWN_VERSION = 1
DEFAULT_WAIT_MS = 60_000  # CAP-14: the wait when no timeout is declared
# CAP-15: an imported operation's tool is named by its scope, so a scope is a tool name.
SCOPE_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"  # a scope names its tool: a tool name's pattern
WINDOW_PATTERN = r"^[1-9][0-9]{0,8}(ms|s|m|h|d)$"  # CAP-14: <n>ms|s|m|h|d, n positive
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_STRICT = ConfigDict(extra="forbid", strict=True)


def window_ms(window: str) -> int:
    """A `window` of the profile's form in milliseconds."""
    unit = "ms" if window.endswith("ms") else window[-1]
    return int(window[: -len(unit)]) * _UNIT_MS[unit]


class CapabilityRateLimit(BaseModel):
    model_config = _STRICT
    count: StrictInt = Field(gt=0)
    window: str = Field(pattern=WINDOW_PATTERN)


class CapabilityExecution(BaseModel):
    model_config = _STRICT
    readonly: StrictBool | None = None
    idempotent: StrictBool | None = None
    timeout_ms: StrictInt | None = Field(default=None, gt=0)
    rate_limit: CapabilityRateLimit | None = None


class CapabilityRisk(BaseModel):
    model_config = _STRICT
    level: Literal["low", "medium", "high", "critical"]


class CapabilitySubject(BaseModel):
    model_config = _STRICT
    required: StrictBool


class CapabilityAudit(BaseModel):
    model_config = _STRICT
    sensitive: StrictBool


class NullsRefused(BaseModel):
    """A body where a null declares nothing: refused where it is (`refuse_nulls`)."""

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        return refuse_nulls(data)


class CapabilityDeclaration(NullsRefused):
    """One operation's `x-agent-capability`; what was left out stays unset (and is answered
    left out), so a declaration reads back as it was sent."""

    model_config = _STRICT
    version: Any  # checked first, by hand: an unknown version is refused by name
    scope: str = Field(pattern=SCOPE_PATTERN)
    enabled: StrictBool | None = None
    risk: CapabilityRisk | None = None
    subject: CapabilitySubject | None = None
    audit: CapabilityAudit | None = None
    execution: CapabilityExecution | None = None

    @field_validator("version", mode="before")
    @classmethod
    def _known_version(cls, value: Any) -> int:
        if type(value) is not int or value != KNOWN_VERSION:
            raise PydanticCustomError(
                "unknown_version",
                "capability contract version {version} is not known to this runtime (it "
                "knows version 1): refused, not read as 1", {"version": repr(value)[:40]})
        return value


def refuse_nulls(data: Any) -> Any:
    """A null declares nothing: refused where it is, not read as a member left out."""
    found = _first_null(data, "")
    if found is not None:
        raise PydanticCustomError("null_member", "null is not a value of this member; "
                                  "leave the member out instead", {"pointer": found})
    return data


def _first_null(value: Any, at: str) -> str | None:
    """The JSON Pointer of the first null member of an object tree, if any."""
    if not isinstance(value, dict):
        return None
    for key, member in value.items():
        here = f"{at}/{pointer_token(key)}"
        if member is None:
            return here
        found = _first_null(member, here)
        if found is not None:
            return found
    return None


class ExecutionPolicy(BaseModel):
    """What the platform enforces for a binding (`GET /v1/bindings/{id}/policy`)."""

    binding_id: str
    declared: bool  # whether the binding carries a declaration
    agent_facing: bool  # CAP-02: declared `enabled: true`, or a binding with no contract
    readonly: bool
    idempotent: bool
    timeout_ms: int
    timeout_source: Literal["declared", "default", "local"]
    rate_limit: dict[str, Any] | None
    # CAP-07, CAP-09: automatic retries only where idempotency is declared, unless turned off
    retries_allowed: bool
    subject_required: bool
    audit_sensitive: bool
    risk_level: str | None
    local: dict[str, Any] | None = None  # the deployment's local policy, as set


def effective(binding_id: str, declaration: CapabilityDeclaration | None) -> ExecutionPolicy:
    """CAP-04: each hint as declared, else its conservative value; none read from another.
    A binding without a declaration predates the contract (docs/capabilities.md): it stays
    agent-facing, with every conservative value."""
    execution = (declaration.execution if declaration else None) or CapabilityExecution()
    timeout = execution.timeout_ms
    return ExecutionPolicy(
        binding_id=binding_id,
        declared=declaration is not None,
        agent_facing=declaration is None or declaration.enabled is True,
        readonly=execution.readonly is True,
        idempotent=execution.idempotent is True,
        timeout_ms=timeout if timeout is not None else DEFAULT_WAIT_MS,
        timeout_source="declared" if timeout is not None else "default",
        rate_limit=execution.rate_limit.model_dump() if execution.rate_limit else None,
        retries_allowed=execution.idempotent is True,
        subject_required=bool(declaration and declaration.subject
                              and declaration.subject.required),
        audit_sensitive=bool(declaration and declaration.audit and declaration.audit.sensitive),
        risk_level=declaration.risk.level if declaration and declaration.risk else None,
    )
