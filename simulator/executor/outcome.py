"""What the executor did with one call, every request kept, for a check to judge and show."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arck.simulator.target import Exchange

__all__ = ["CallOutcome", "Delivery", "StepRefused"]


class StepRefused(Exception):
    """A setup step of the executor (register, heartbeat, candidates) was not answered as
    the wire says; `exchange` is the request and answer, for a "not testable" message."""

    def __init__(self, step: str, exchange: Exchange) -> None:
        super().__init__(f"executor could not {step}: {exchange.describe()}")
        self.step = step
        self.exchange = exchange


@dataclass(frozen=True)
class Delivery:
    """One sending of a stored receipt. `repeat`: these bytes were sent before (a duplicate
    or a redelivery); `lost`: the executor treated this answer as lost (lost_confirmation);
    `fault`: a send no well-behaved executor makes (second_final, rebind)."""

    receipt_id: str
    kind: str
    body: bytes
    exchange: Exchange
    repeat: bool = False
    lost: bool = False
    fault: str | None = None  # second_final, rebind: a faulty executor's send, to be refused

    def answer(self) -> Any:
        return self.exchange.json_or_none()


@dataclass
class CallOutcome:
    """`refused` is the exchange that stopped the call (a claim or `accepted` not granted);
    `crashed` says where the process died ("after_effect", "after_store"); `held` is a late
    final waiting for `release`; `rivals` are the other winners of concurrent claims (there
    should be none), each carried on as its own executor would."""

    call_id: str
    executor: str
    process: int
    operation_key: str | None = None
    claims: list[Exchange] = field(default_factory=list)
    claim_id: str | None = None
    grant: Any = None
    confirmed: bool = False
    deliveries: list[Delivery] = field(default_factory=list)
    detach: Exchange | None = None
    handler_runs: int = 0
    refused: Exchange | None = None
    crashed: str | None = None
    held: bool = False
    already_ran: bool = False  # the journal had run this call's handler: not run again
    rivals: list[CallOutcome] = field(default_factory=list)
    fired: list[str] = field(default_factory=list)

    @property
    def claim(self) -> Exchange | None:
        """This executor's claim (the first of concurrent ones)."""
        return self.claims[0] if self.claims else None

    def of_kind(self, kind: str) -> list[Delivery]:
        """Deliveries of receipts of `kind`; "final" for whichever final kind."""
        finals = ("completed", "failed", "cancelled", "submission", "reconciliation_required")
        return [d for d in self.deliveries
                if d.kind == kind or (kind == "final" and d.kind in finals)]

    @property
    def exchanges(self) -> list[Exchange]:
        """Every request of the call in order sent (claims first, then receipts, detach)."""
        sent = [*self.claims, *(d.exchange for d in self.deliveries)]
        return sent + ([self.detach] if self.detach is not None else [])

    def describe(self) -> str:
        """The call's requests one a line, for a failure message."""
        lines = [f"call {self.call_id} by {self.executor} (process {self.process}):"]
        lines += [f"  {exchange.describe()}" for exchange in self.exchanges]
        if self.crashed:
            lines.append(f"  (process died {self.crashed.replace('_', ' ')})")
        return "\n".join(lines)
