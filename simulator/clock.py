"""Time as an injected dependency: a real clock, and a virtual one where waiting is free.

The virtual clock never reads the wall clock. Its time moves only when it is told
(`advance`) or, with `autojump` (the default), when the event loop has nothing else to run:
then it jumps to the earliest sleeper's deadline and wakes that sleeper alone, so a
60-second timeout costs no wall time and every run wakes its sleepers in the same order —
by deadline, then by the order in which they went to sleep.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
import weakref
from collections.abc import Sized
from typing import Protocol, runtime_checkable

import anyio

__all__ = ["DEFAULT_START", "Clock", "RealClock", "VirtualClock", "until_idle"]

# 2026-01-01T00:00:00Z: virtual time starts at a fixed, plausible epoch second.
DEFAULT_START = 1_767_225_600.0


@runtime_checkable
class Clock(Protocol):
    """Seconds since the epoch, and a sleep measured on the same clock."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    """Wall-clock time, for a server that real engines call."""

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


_Sleeper = tuple[float, int, "asyncio.Future[None]"]
# Two jumpers in one loop would each see the other as busy and neither would ever jump.
_JUMPING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, VirtualClock] = (
    weakref.WeakKeyDictionary()
)


class VirtualClock:
    """Deterministic time for one asyncio event loop at a time (not thread-safe).

    `autojump` needs CPython's event loop, whose queue of ready callbacks shows when every
    task is waiting; the loop must not wait on real I/O or threads while sleepers are due,
    or time would jump under them. With `autojump=False` only `advance` moves time.
    """

    def __init__(self, start: float = DEFAULT_START, *, autojump: bool = True) -> None:
        self._now = start
        self._autojump = autojump
        self._sleepers: list[_Sleeper] = []
        self._order = itertools.count()
        self._jumper: asyncio.Task[None] | None = None
        self._new_sleeper: asyncio.Event | None = None

    def now(self) -> float:
        return self._now

    @property
    def sleeping(self) -> int:
        """How many sleepers wait (cancelled ones are not counted)."""
        return sum(1 for *_, future in self._sleepers if not future.done())

    def next_deadline(self) -> float | None:
        """When the earliest sleeper is due, or None with nobody asleep."""
        live = [deadline for deadline, _, future in self._sleepers if not future.done()]
        return min(live) if live else None

    async def sleep(self, seconds: float) -> None:
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"seconds must be a finite number >= 0, got {seconds!r}")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._order), future))
        if self._autojump:
            self._ensure_jumper(loop)
        await future  # a cancelled sleeper stays in the heap, done, and is skipped

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking every sleeper due by then, each in turn."""
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"seconds must be a finite number >= 0, got {seconds!r}")
        target = self._now + seconds
        while True:
            due = self._pop_earliest(until=target)
            if due is None:
                break
            self._wake(due)
            await until_idle()
        self._now = max(self._now, target)

    def _ensure_jumper(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._jumper is None or self._jumper.done() or self._jumper.get_loop() is not loop:
            other = _JUMPING.get(loop)
            if other is not None and other is not self and other._jumping_in(loop):
                raise RuntimeError("one autojumping VirtualClock per event loop: share it")
            _JUMPING[loop] = self
            # Sleepers left by another loop can never be woken from this one.
            self._sleepers = [s for s in self._sleepers if s[2].get_loop() is loop]
            heapq.heapify(self._sleepers)
            self._new_sleeper = asyncio.Event()
            self._jumper = loop.create_task(self._jump_when_idle(self._new_sleeper))
        elif self._new_sleeper is not None:
            self._new_sleeper.set()

    def _jumping_in(self, loop: asyncio.AbstractEventLoop) -> bool:
        jumper = self._jumper
        return jumper is not None and not jumper.done() and jumper.get_loop() is loop

    async def _jump_when_idle(self, new_sleeper: asyncio.Event) -> None:
        while True:
            await until_idle()
            due = self._pop_earliest(until=math.inf)
            if due is None:
                new_sleeper.clear()
                await new_sleeper.wait()
                continue
            self._wake(due)

    def _pop_earliest(self, until: float) -> _Sleeper | None:
        while self._sleepers and self._sleepers[0][0] <= until:
            sleeper = heapq.heappop(self._sleepers)
            if not sleeper[2].done():
                return sleeper
        return None

    def _wake(self, sleeper: _Sleeper) -> None:
        deadline, _, future = sleeper
        self._now = max(self._now, deadline)
        future.set_result(None)


async def until_idle() -> None:
    """Yield until no other callback is ready to run, twice in a row."""
    ready = getattr(asyncio.get_running_loop(), "_ready", None)
    if not isinstance(ready, Sized):
        raise RuntimeError(
            "VirtualClock needs CPython's asyncio event loop, whose ready queue shows "
            "when every task waits"
        )
    quiet = 0
    while quiet < 2:
        await asyncio.sleep(0)
        quiet = quiet + 1 if len(ready) == 0 else 0
