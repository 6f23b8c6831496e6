"""The engine's only source of time (issue 10: one injected clock for everything).

Structurally the same as `arck.simulator.clock.Clock`, which tests pass in (a virtual clock makes
a 30-second model timeout cost no wall time); `reference/` may not import the simulator.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

import anyio

__all__ = ["Clock", "WallClock"]


@runtime_checkable
class Clock(Protocol):
    """Seconds since the epoch, and a sleep measured on the same clock."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class WallClock:
    """Real time, for `arck serve`."""

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)
