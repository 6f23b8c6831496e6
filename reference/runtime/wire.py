"""Wire models of runs in the reference profile (docs/runs.md), pydantic strict like models.py.

Bounds keep every integer inside SQLite's 64-bit column with room for sums, so no valid body
can overflow the store into a 500.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

__all__ = [
    "MAX_AMOUNT",
    "CancelRequest",
    "Channel",
    "ChannelCreate",
    "Deposit",
    "EventList",
    "HistoryItems",
    "InputAccepted",
    "InputAppend",
    "Prices",
    "Run",
    "RunCreate",
    "RunEvent",
    "Session",
    "SessionCreate",
    "ToolCallList",
    "ToolCallView",
    "ToolRevocation",
    "ToolRevocationCreate",
    "Wallet",
    "WalletCreate",
]

_STRICT = ConfigDict(strict=True, extra="forbid")
MAX_TOKENS = 1_000_000_000
MAX_PRICE = 1_000_000_000_000  # micro-units per million tokens
MAX_AMOUNT = 1_000_000_000_000_000  # one deposit; a balance stays below 2**62
RunState = Literal["queued", "running", "waiting_tools", "ended"]


def _tokens() -> Any:
    return Field(ge=1, le=MAX_TOKENS)


class Prices(BaseModel):
    model_config = _STRICT
    input: StrictInt = Field(ge=0, le=MAX_PRICE)
    cached_input: StrictInt = Field(ge=0, le=MAX_PRICE)
    output: StrictInt = Field(ge=0, le=MAX_PRICE)


class ChannelCreate(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1)
    model: str = Field(min_length=1)
    input_capacity: StrictInt = _tokens()
    total_capacity: StrictInt = _tokens()
    output_capacity: StrictInt = _tokens()
    timeout_ms: StrictInt = Field(ge=1, le=86_400_000)
    prices: Prices


class Channel(BaseModel):
    channel_id: str
    name: str
    model: str
    input_capacity: int
    total_capacity: int
    output_capacity: int
    timeout_ms: int
    prices: Prices


class WalletCreate(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1)


class Deposit(BaseModel):
    model_config = _STRICT
    amount: StrictInt = Field(ge=1, le=MAX_AMOUNT)


class Wallet(BaseModel):
    """Micro-units; `available` = `balance` − `reserved` (cost-pending reservations included)."""

    wallet_id: str
    name: str
    balance: int
    reserved: int
    available: int
    charged: int


class SessionCreate(BaseModel):
    """`subject`: whom the session acts for, named in every grant of its tool calls (EXE-05);
    default `session:<session_id>`."""

    model_config = _STRICT
    agent_version: str
    wallet_id: str
    subject: str | None = Field(default=None, min_length=1, max_length=200)


class Session(BaseModel):
    session_id: str
    agent_version: str
    wallet_id: str
    subject: str


class HistoryItems(BaseModel):
    items: list[dict[str, Any]]


class RunCreate(BaseModel):
    model_config = _STRICT
    input: str = Field(min_length=1)


class CancelRequest(BaseModel):
    """Every POST of the profile carries a JSON object; `{}` is enough here."""

    model_config = _STRICT
    reason: str = Field(default="", max_length=500)


class Run(BaseModel):
    run_id: str
    session_id: str
    state: RunState
    end_reason: str | None


class RunEvent(BaseModel):
    """`id` is sequential per run, so a stream can resume from `Last-Event-ID`."""

    id: int
    type: str
    at: float
    data: dict[str, Any]


class EventList(BaseModel):
    events: list[RunEvent]


class ToolCallView(BaseModel):
    call_id: str
    run_id: str
    tool_call_id: str
    name: str
    arguments: str
    state: Literal["dispatchable", "claimed", "accepted", "completed", "failed", "cancelled",
                   "submitted", "reconciliation_required", "revoked"]
    cancel_requested: bool


class ToolCallList(BaseModel):
    tool_calls: list[ToolCallView]


class InputAppend(BaseModel):
    """`POST /v1/runs/{run_id}/input`: user input appended while the run is active (RUN-06)."""

    model_config = _STRICT
    input: str = Field(min_length=1)


class InputAccepted(BaseModel):
    """The input is stored, pending: the run's next model call takes it (docs/runs.md)."""

    run_id: str
    input_id: str
    state: Literal["pending"]


class ToolRevocationCreate(BaseModel):
    """`POST /v1/agents/{agent_id}/tool-revocations`: the agent may no longer call the tool."""

    model_config = _STRICT
    tool_name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")


class ToolRevocation(BaseModel):
    """A revocation and the runs it reached (active runs whose version has the tool)."""

    revocation_id: str
    agent_id: str
    tool_name: str
    runs: list[str]
