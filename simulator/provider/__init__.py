"""The simulated model provider: an OpenAI-compatible chat-completions endpoint for engines
under test, scripted per conversation, with faults, its own token count, a prompt cache,
a reconciliation lookup and a byte-for-byte recording (docs/provider.md)."""

from __future__ import annotations

from arck.simulator.provider.ledger import Outcome, RequestRecord
from arck.simulator.provider.provider import SimulatedProvider
from arck.simulator.provider.recording import RecordedRequest
from arck.simulator.provider.reply import ResponseLost
from arck.simulator.provider.script import (
    FAULT_KINDS,
    REQUEST_APPROVAL,
    REQUEST_INPUT,
    ContextLengthExceeded,
    Fault,
    LostResponse,
    RateLimited,
    Script,
    ScriptError,
    ServerError,
    SlowAnswer,
    SlowStart,
    Step,
    ToolCall,
    UsageDrift,
    UsageMissing,
    UsageReported,
    script_tag,
)
from arck.simulator.provider.server import listen, serve, server
from arck.simulator.provider.transport import SyncProviderTransport

__all__ = [
    "FAULT_KINDS",
    "REQUEST_APPROVAL",
    "REQUEST_INPUT",
    "ContextLengthExceeded",
    "Fault",
    "LostResponse",
    "Outcome",
    "RateLimited",
    "RecordedRequest",
    "RequestRecord",
    "ResponseLost",
    "Script",
    "ScriptError",
    "ServerError",
    "SimulatedProvider",
    "SlowAnswer",
    "SlowStart",
    "Step",
    "SyncProviderTransport",
    "ToolCall",
    "UsageDrift",
    "UsageMissing",
    "UsageReported",
    "listen",
    "script_tag",
    "serve",
    "server",
]
