"""What the harness holds besides a target's API: the model provider its channels call, and time.

Checks of runs script the simulated provider and read what it recorded; they move time only
through this seam. In-process, the target and the provider share one virtual clock that moves
only when `advance` is called, and every answer is read after the work its request started
has run, so the same sequence of requests replays to the same result (H-03).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from arck.simulator.asgi import SyncASGITransport
from arck.simulator.clock import VirtualClock
from arck.simulator.provider import SimulatedProvider

__all__ = ["Control", "InProcessControl"]


@runtime_checkable
class Control(Protocol):
    provider: SimulatedProvider
    virtual_time: bool

    def now(self) -> float: ...

    def next_deadline(self) -> float | None:
        """When the next timer of the target or the provider is due (virtual time only)."""
        ...

    def advance(self, seconds: float) -> None:
        """Move time on, running everything due by then (real time: wait that long)."""
        ...


class InProcessControl:
    """A target in this process: time is virtual and moves only when told."""

    virtual_time = True

    def __init__(
        self, transport: SyncASGITransport, clock: VirtualClock, provider: SimulatedProvider
    ) -> None:
        self.transport = transport
        self.clock = clock
        self.provider = provider

    def now(self) -> float:
        return self.clock.now()

    def next_deadline(self) -> float | None:
        return self.clock.next_deadline()

    def advance(self, seconds: float) -> None:
        self.transport.call(self.clock.advance, seconds)
