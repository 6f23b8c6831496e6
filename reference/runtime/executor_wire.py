"""Wire models of the executor protocol (docs/executors.md), pydantic strict like wire.py.

Kept apart from wire.py because they are the other side of a run: what executors send and
read. A receipt is one model with every kind's members optional; `receipts.members` then
refuses a member the kind does not take and asks for one it needs, naming its path, which a
discriminated union would report under the kind's name instead of the body's pointer.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

__all__ = [
    "FINAL_KINDS",
    "MAX_SEQUENCE",
    "PERMISSIONS",
    "Candidate",
    "CandidateList",
    "Claim",
    "ClaimRequest",
    "Detach",
    "DetachAnswer",
    "Executor",
    "ExecutorCall",
    "ExecutorCreate",
    "ExecutorRegistered",
    "Grant",
    "Heartbeat",
    "HeartbeatAnswer",
    "Receipt",
    "ReceiptAnswer",
    "ReceiptError",
    "Subject",
    "ToolCallCancel",
    "ToolCallCancelled",
]

_STRICT = ConfigDict(strict=True, extra="forbid")
Permission = Literal["executor:connect", "tools:execute"]
PERMISSIONS: tuple[Permission, ...] = ("executor:connect", "tools:execute")
MAX_SEQUENCE = 2**53
ReceiptKind = Literal["accepted", "progress", "completed", "failed", "cancelled", "submission",
                      "reconciliation_required"]
FINAL_KINDS = frozenset({"completed", "failed", "cancelled", "submission",
                         "reconciliation_required"})
CallState = Literal["dispatchable", "claimed", "accepted", "completed", "failed", "cancelled",
                    "submitted", "reconciliation_required", "revoked"]


class ExecutorCreate(BaseModel):
    """`POST /v1/executors`; bindings are looked up (404) before the rest is validated."""

    model_config = _STRICT
    name: str = Field(min_length=1, max_length=200)
    bindings: list[str] = Field(min_length=1, max_length=100)
    permissions: list[Permission] = Field(
        default_factory=lambda: list(PERMISSIONS), min_length=1)


class Executor(BaseModel):
    executor_id: str
    name: str
    bindings: list[str]
    permissions: list[str]
    online_until: float | None


class ExecutorRegistered(BaseModel):
    """The token is shown once, here."""

    executor_id: str
    name: str
    bindings: list[str]
    permissions: list[str]
    token: str


class Heartbeat(BaseModel):
    model_config = _STRICT


class HeartbeatAnswer(BaseModel):
    executor_id: str
    online_until: float


class Candidate(BaseModel):
    """No arguments and no grant before a claim (EXE-03)."""

    call_id: str
    binding_id: str
    tool_name: str
    cancel_requested: bool


class CandidateList(BaseModel):
    candidates: list[Candidate]


class ExecutorCall(BaseModel):
    """A call as its executor sees it; `claim_id` is its claim while that is current."""

    call_id: str
    state: CallState
    claim_id: str | None
    cancel_requested: bool
    run_ended: bool


class ClaimRequest(BaseModel):
    model_config = _STRICT


class Subject(BaseModel):
    tenant: str
    id: str


class Grant(BaseModel):
    """What the winner of a claim may do (EXE-05): the product checks each call against it."""

    subject: Subject
    agent_id: str
    agent_version: str
    tool_set_id: str
    tool_name: str
    binding_id: str
    run_id: str
    call_id: str
    arguments: Any
    arguments_digest: str


class Claim(BaseModel):
    claim_id: str
    call_id: str
    executor_id: str
    lease_until: float
    grant: Grant


class ReceiptError(BaseModel):
    model_config = _STRICT
    code: str = Field(min_length=1, max_length=200)
    message: str = Field(max_length=10_000)


class Receipt(BaseModel):
    """A receipt of any kind; which members a kind takes is checked by `receipts.members`."""

    model_config = _STRICT
    receipt_id: str = Field(min_length=1, max_length=200)
    claim_id: str = Field(min_length=1, max_length=200)
    kind: ReceiptKind
    result: Any = None
    error: ReceiptError | None = None
    reason: str | None = Field(default=None, max_length=500)
    sequence: StrictInt | None = Field(default=None, ge=1, le=MAX_SEQUENCE)
    data: Any = None


class ReceiptAnswer(BaseModel):
    call_id: str
    receipt_id: str
    replayed: bool
    state: CallState
    run_ended: bool
    applied: bool


class Detach(BaseModel):
    model_config = _STRICT
    claim_id: str = Field(min_length=1, max_length=200)


class DetachAnswer(BaseModel):
    call_id: str
    state: CallState


class ToolCallCancel(BaseModel):
    """`POST /v1/tool-calls/{call_id}/cancel`: a business cancel request; `{}`."""

    model_config = _STRICT


class ToolCallCancelled(BaseModel):
    call_id: str
    state: CallState
    cancel_requested: Literal[True]
