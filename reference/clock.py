"""The engine's only source of time (issue 10: one injected clock for everything).

Structurally the same as `arck.simulator.clock.Clock`, which tests pass in (a virtual clock makes
a 30-second model timeout cost no wall time); `reference/` may not import the simulator, so the
small virtual clock `arck serve --test-clock` needs lives here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import time
from collections.abc import Iterator, Sized
from typing import Protocol, runtime_checkable

import anyio

__all__ = [
    "DEFAULT_START", "HOLD_LIMIT_S", "Clock", "ManualClock", "WallClock", "instant", "settle_loop",
    "woken_or_timeout",
]

# 2026-01-01T00:00:00Z, as the simulator's virtual clock starts.
DEFAULT_START = 1_767_225_600.0
# The most real time one advance of a `ManualClock` waits for instant requests to come back.
HOLD_LIMIT_S = 5.0


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


_Sleeper = tuple[float, int, "asyncio.Future[None]"]


class ManualClock:
    """Virtual time that moves only when told (`advance`): the `--test-clock` of `arck serve`.

    It never reads the wall clock and never jumps by itself (the simulator's `VirtualClock`
    with `autojump=False`). Sleepers wake by deadline, then in the order they went to sleep;
    `advance` lets each one run until the event loop is idle before waking the next, so when it
    returns every sleeper due by then has run. One event loop at a time.

    A request that takes no virtual time (a lookup at the provider, answered at once) is
    `hold`: while one is out, `advance` waits for it (at most `HOLD_LIMIT_S` of real time per
    advance) before waking the next sleeper, so a jump of an hour does not fire the lookup's
    own timeout before a loopback answer could arrive.
    """

    def __init__(self, start: float = DEFAULT_START) -> None:
        self._now = start
        self._sleepers: list[_Sleeper] = []
        self._order = itertools.count()
        self._holds = 0

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Keep time still while the body waits on real I/O that takes no virtual time."""
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"seconds must be a finite number >= 0, got {seconds!r}")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._order), future))
        await future  # a cancelled sleeper stays in the heap, done, and is skipped

    async def advance(self, seconds: float) -> float:
        """Move time forward `seconds`, waking every sleeper due by then; the new time."""
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"seconds must be a finite number >= 0, got {seconds!r}")
        target = self._now + seconds
        give_up = time.monotonic() + HOLD_LIMIT_S
        await self._settle(give_up)
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            if future.done():
                continue
            self._now = max(self._now, deadline)
            future.set_result(None)
            await self._settle(give_up)
        self._now = max(self._now, target)
        return self._now

    async def _settle(self, give_up: float) -> None:
        """The loop idle and no hold out (or the advance's real-time allowance spent)."""
        await settle_loop()
        while self._holds and time.monotonic() < give_up:
            await asyncio.sleep(0.001)
            await settle_loop()


async def settle_loop() -> None:
    """Yield until no other callback of the loop is ready, twice in a row.

    Work that waits on real I/O (a socket, a thread) is not waited for: only what the loop can
    run at once. Without CPython's ready queue (another loop), yield a fixed number of times.
    """
    ready = getattr(asyncio.get_running_loop(), "_ready", None)
    if not isinstance(ready, Sized):
        for _ in range(64):
            await asyncio.sleep(0)
        return
    quiet = 0
    while quiet < 2:
        await asyncio.sleep(0)
        quiet = quiet + 1 if len(ready) == 0 else 0


def instant(clock: Clock) -> contextlib.AbstractContextManager[None]:
    """`clock.hold()` where the clock has it (a `ManualClock`); elsewhere nothing to do: real
    time moves by itself, and a virtual clock sharing the loop with its provider settles."""
    hold = getattr(clock, "hold", None)
    return hold() if callable(hold) else contextlib.nullcontext()


async def woken_or_timeout(event: asyncio.Event, clock: Clock, seconds: float) -> bool:
    """Wait until `event` is set or `seconds` pass on `clock`; True when it was set."""
    woken = asyncio.ensure_future(event.wait())
    timer = asyncio.ensure_future(clock.sleep(seconds))
    try:
        await asyncio.wait({woken, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        woken.cancel()
        timer.cancel()
        await asyncio.gather(woken, timer, return_exceptions=True)
    return woken.done() and not woken.cancelled()
