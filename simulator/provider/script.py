"""What the provider answers, call by call: scripts, steps and faults (docs/provider.md).

A conversation follows the script named by a tag in its system prompt, one step per model
call in order. Steps and faults are data (pydantic, frozen), so scenario files can carry
them; `side_effect` is the one Python-only member, in respx's vocabulary.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from arck.simulator.errors import UsageError, fault_path

__all__ = [
    "ERROR_FAULTS",
    "FAULT_KINDS",
    "REQUEST_APPROVAL",
    "REQUEST_INPUT",
    "SCRIPT_NAME",
    "ContextLengthExceeded",
    "Fault",
    "LostResponse",
    "RateLimited",
    "Script",
    "ScriptError",
    "ServerError",
    "SlowAnswer",
    "SlowStart",
    "Step",
    "ToolCall",
    "UsageDrift",
    "UsageMissing",
    "UsageReported",
    "make_script",
    "script_name",
    "script_tag",
]

REQUEST_INPUT = "arck_request_input"
REQUEST_APPROVAL = "arck_request_approval"
SCRIPT_NAME = r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}"
_TAG = re.compile(r"\[arck-script:(" + SCRIPT_NAME + r")\]")


class ScriptError(UsageError):
    """A script the harness registered is malformed: a usage error, never a target failure."""


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SlowAnswer(_Data):
    """The answer is ready and billed, then waits `seconds` on the provider's clock."""

    kind: Literal["slow"] = "slow"
    seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)]


class SlowStart(_Data):
    """The request waits `seconds` on the provider's clock before it is processed: a lookup
    meanwhile says it is in progress (`received`, nothing billed). It is processed then
    whether or not its caller is still there, as a real provider does not notice a client
    leave (then billed, its answer lost)."""

    kind: Literal["slow_start"] = "slow_start"
    seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)]


class LostResponse(_Data):
    """Processed and billed, then the connection breaks before the body is sent."""

    kind: Literal["lost_response"] = "lost_response"


class ServerError(_Data):
    kind: Literal["server_error"] = "server_error"
    status: Literal[500, 502, 503] = 500


class RateLimited(_Data):
    kind: Literal["rate_limit"] = "rate_limit"
    retry_after: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None


class ContextLengthExceeded(_Data):
    kind: Literal["context_length"] = "context_length"


class UsageDrift(_Data):
    """Reported prompt_tokens = round(true × factor) + offset, never below 0."""

    kind: Literal["usage_drift"] = "usage_drift"
    factor: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 1.0
    offset: int = 0


class UsageReported(_Data):
    """The named figures reported as given, whatever they are (a negative count, a float, a
    string, a number past any window, null): what a buggy or hostile provider may send. A
    figure left out keeps the true count; `total_tokens` is their sum when both are integers."""

    kind: Literal["usage_reported"] = "usage_reported"
    prompt_tokens: Any = None
    completion_tokens: Any = None
    cached_tokens: Any = None

    @model_validator(mode="after")
    def _names_one(self) -> UsageReported:
        if not self.model_fields_set & {"prompt_tokens", "completion_tokens", "cached_tokens"}:
            raise ValueError("name at least one of prompt_tokens, completion_tokens, "
                             "cached_tokens")
        return self


class UsageMissing(_Data):
    """The answer carries no `usage` member."""

    kind: Literal["usage_missing"] = "usage_missing"


Fault = Annotated[
    SlowAnswer
    | SlowStart
    | LostResponse
    | ServerError
    | RateLimited
    | ContextLengthExceeded
    | UsageDrift
    | UsageReported
    | UsageMissing,
    Field(discriminator="kind"),
]
FAULT_KINDS = (
    "slow",
    "slow_start",
    "lost_response",
    "server_error",
    "rate_limit",
    "context_length",
    "usage_drift",
    "usage_reported",
    "usage_missing",
    "side_effect",
)
# Faults that replace the answer with an error: they combine with nothing else but
# slow_start (the error then comes that much later).
ERROR_FAULTS = frozenset({"server_error", "rate_limit", "context_length"})


class ToolCall(_Data):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: Annotated[str, Field(min_length=1)] | None = None

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name in (REQUEST_INPUT, REQUEST_APPROVAL):
            raise ValueError(
                f"{name!r} is reserved: use the step's request_input or request_approval"
            )
        return name

    def arguments_json(self) -> str:
        """The `function.arguments` string: a given string as is, else compact JSON."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


class Step(_Data):
    """One model call: at most one of tool_calls / request_input / request_approval, with
    optional text beside it; no answer member means the default text answer."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    text: str | None = None
    tool_calls: Sequence[ToolCall] | None = None
    request_input: str | None = None
    request_approval: str | None = None
    faults: Sequence[Fault] = ()
    side_effect: Any = Field(default=None, exclude=True)

    @field_validator("tool_calls")
    @classmethod
    def _some_calls(cls, calls: Sequence[ToolCall] | None) -> tuple[ToolCall, ...] | None:
        if calls is not None and not calls:
            raise ValueError("at least one call (or leave tool_calls out)")
        return None if calls is None else tuple(calls)

    @field_validator("faults")
    @classmethod
    def _frozen_faults(cls, faults: Sequence[Fault]) -> tuple[Fault, ...]:
        return tuple(faults)

    @field_validator("side_effect")
    @classmethod
    def _respx_side_effect(cls, value: Any) -> Any:
        exception = isinstance(value, BaseException) or (
            isinstance(value, type) and issubclass(value, BaseException)
        )
        if value is None or exception or isinstance(value, httpx.Response) or callable(value):
            return value
        raise ValueError("must be an exception, an httpx.Response, or a callable(request)")

    @model_validator(mode="after")
    def _consistent(self) -> Step:
        asked = [
            name for name in ("tool_calls", "request_input", "request_approval")
            if getattr(self, name) is not None
        ]
        if len(asked) > 1:
            raise ValueError(f"{' and '.join(asked)}: a step asks for one of them at most")
        kinds = [fault.kind for fault in self.faults]
        if len(set(kinds)) < len(kinds):
            raise ValueError(f"faults: a kind appears twice in {kinds}")
        errors = ERROR_FAULTS.intersection(kinds)
        others = [k for k in kinds if k not in errors and k != "slow_start"]
        if errors and (len(errors) > 1 or others or asked or self.text is not None):
            raise ValueError(
                f"faults: {sorted(errors)[0]} answers with an error: no other fault (but "
                "slow_start, which delays it), text or call on the same step"
            )
        if {"usage_drift", "usage_missing"} <= set(kinds):
            raise ValueError("faults: usage_drift and usage_missing exclude each other")
        return self


class Script(_Data):
    name: Annotated[str, Field(pattern="^" + SCRIPT_NAME + "$")]
    steps: Sequence[Step]

    @field_validator("steps")
    @classmethod
    def _frozen_steps(cls, steps: Sequence[Step]) -> tuple[Step, ...]:
        return tuple(steps)

    @property
    def tag(self) -> str:
        return script_tag(self.name)


def make_script(name: str, steps: Iterable[Step | Mapping[str, Any]]) -> Script:
    """Validate a script, or raise ScriptError naming the field, e.g. `steps[1].faults[0]`."""
    try:
        return Script.model_validate({"name": name, "steps": list(steps)})
    except ValidationError as exc:
        lines = [f"{fault_path(error['loc'], '(script)')}: {error['msg']}"
                 for error in exc.errors()]
        raise ScriptError(f"script {name!r}: " + "; ".join(lines)) from None



def script_tag(name: str) -> str:
    """The text to put in an agent's system prompt so its conversation follows `name`."""
    return f"[arck-script:{name}]"


def script_name(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The first script tag in a system or developer message, in order."""
    for message in messages:
        if message.get("role") not in ("system", "developer"):
            continue
        content = message.get("content")
        texts = (
            [content] if isinstance(content, str)
            else [p.get("text") for p in content or () if isinstance(p, Mapping)]
        )
        for text in texts:
            found = _TAG.search(text) if isinstance(text, str) else None
            if found:
                return found.group(1)
    return None
