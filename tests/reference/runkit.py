"""What the in-process tests of runs share: the development credential, one channel and its
prices, and a world of apps on one store, provider and virtual clock (processes that come and
go)."""

from __future__ import annotations

import math
from typing import Any

import httpx

from arck.reference.app import create_app
from arck.reference.engine import Engine
from arck.simulator.clock import VirtualClock
from arck.simulator.provider import SimulatedProvider

FULL = {"Authorization": "Bearer arck-dev-full"}
PRICES = {"input": 2_000_000, "cached_input": 500_000, "output": 8_000_000}
CHANNEL = {"name": "main", "model": "sim-1", "input_capacity": 100_000,
           "total_capacity": 128_000, "output_capacity": 4_000, "timeout_ms": 30_000,
           "prices": PRICES}
RESERVATION = math.ceil((100_000 * 2_000_000 + 4_000 * 8_000_000) / 1_000_000)
FUNDS = 10 * RESERVATION
SCHEMA = {"type": "object"}
LEASE = 15.0


class World:
    """One store, one provider, one clock; apps come and go on it like processes."""

    def __init__(self, *, autojump: bool = True) -> None:
        # autojump=False: time moves only by `clock.advance`, for a test whose interleaving
        # must not depend on when the loop happens to be idle.
        self.clock = VirtualClock(autojump=autojump)
        self.provider = SimulatedProvider(clock=self.clock)
        self.engine = Engine()
        self.apps: list[Any] = []

    def client(self, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
        app = create_app(self.engine, clock=self.clock, lease_seconds=LEASE,
                         provider_transport=transport or self.provider.async_transport())
        self.apps.append(app)
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://reference.test", headers=FULL)

    async def crash(self) -> None:
        """The last app's workers die mid-call (SIGKILL, in-process): nothing is finished."""
        await self.apps[-1].state.runtime.workers.stop()

    async def close(self) -> None:
        for app in self.apps:
            await app.state.runtime.aclose()
