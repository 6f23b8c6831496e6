"""What the harness holds besides a target's API: the model provider its channels call, and time.

Checks of runs script the simulated provider and read what it recorded; they move time only
through this seam. In-process, the target and the provider share one virtual clock that moves
only when `advance` is called, and every answer is read after the work its request started
has run, so the same sequence of requests replays to the same result (H-03). A target in
another process gets the provider on a socket (`ProviderServer`, `ServedControl`;
docs/targets.md "Runs"), on a virtual clock moved on both sides when the target declares
capability `test-clock`, else on real time.
"""

from __future__ import annotations

import asyncio
import math
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar, runtime_checkable

from arck.simulator.asgi import SyncASGITransport
from arck.simulator.clock import RealClock, VirtualClock, until_idle
from arck.simulator.provider import SimulatedProvider, listen, server
from arck.simulator.target import WAITING

__all__ = ["Control", "InProcessControl", "ProviderServer", "ServedControl", "serve_provider"]

T = TypeVar("T")


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
        self.executor_faults: Counter[str] = Counter()  # what simulated executors fired

    def now(self) -> float:
        return self.clock.now()

    def next_deadline(self) -> float | None:
        return self.clock.next_deadline()

    def advance(self, seconds: float) -> None:
        # The engine's timers run inside this move: while it lasts the harness waits on the
        # target (a busy engine here is the target's hang, not the check's own time).
        with WAITING(f"the in-process target's timers over {seconds:g} s of virtual time"):
            self.transport.call(self.clock.advance, seconds)

    def advance_idle(self, seconds: float) -> None:
        """One clock for both sides: every timer due runs in order in one move anyway."""
        self.advance(seconds)


# -- a target in another process: the provider on a socket ---------------------------------

STEP = 1.0  # the most virtual time both sides move at once (test-clock mode)
IDLE_CAP = 90.0  # seconds with nothing happening before a run is taken to hang
POLL = 0.25  # real-time mode: how often a waiting check looks again
QUIET = 0.03  # real seconds with no provider traffic before the service counts as idle


class _CountingRealClock(RealClock):
    """Real time that knows how many sleepers wait on it (slow answers in flight)."""

    def __init__(self) -> None:
        self.sleeping = 0

    async def sleep(self, seconds: float) -> None:
        self.sleeping += 1
        try:
            await super().sleep(seconds)
        finally:
            self.sleeping -= 1


class ProviderServer:
    """The simulated provider on a socket, served by uvicorn from a thread with its own loop.

    Every HTTP request to it is counted, so the harness can tell when the service has
    stopped talking to it: nothing in flight but answers asleep on the provider's clock, and
    no request started or finished for a moment.
    """

    def __init__(self, provider: SimulatedProvider, host: str, port: int) -> None:
        self.provider = provider
        self.in_flight = 0
        self.changes = 0
        self.changed_at = time.monotonic()
        self.sock = listen(host, port)
        # Accepted sockets inherit it: without it an answer written in two parts waits for
        # the client's delayed ACK (40 ms a request on a kept-alive connection).
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server = server(provider)
        self.server.config.app = self._tracked
        self.server.config.interface = "asgi3"  # a bound method is no ASGI2 class
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="arck-provider", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"the simulated provider did not start on {host}:{port}")
            time.sleep(0.005)

    @property
    def base_url(self) -> str:
        host, port = self.sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/v1"

    async def _tracked(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.provider.app(scope, receive, send)
            return
        self._changed(+1)
        try:
            await self.provider.app(scope, receive, send)
        finally:
            self._changed(-1)

    def _changed(self, delta: int) -> None:
        self.in_flight += delta
        self.changes += 1
        self.changed_at = time.monotonic()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.server.serve(sockets=[self.sock]))
        finally:
            # Answers still asleep (a virtual clock nobody moves any more) are dropped.
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.close()

    def call(self, make: Callable[[], Coroutine[Any, Any, T]], timeout: float = 30.0) -> T:
        """Run a coroutine in the provider's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(make(), self.loop).result(timeout)

    async def _state(self) -> tuple[int, float | None]:
        await until_idle()
        clock = self.provider.clock
        busy = self.in_flight - int(getattr(clock, "sleeping", 0))
        due = clock.next_deadline() if isinstance(clock, VirtualClock) else None
        return busy, due

    def state(self) -> tuple[int, float | None]:
        """Requests in flight that are not asleep on the clock; the clock's next deadline."""
        return self.call(self._state)

    def close(self) -> None:
        self.server.should_exit = True
        self.server.force_exit = True
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(10)
        self.sock.close()


class ServedControl:
    """A target in another process, whose model provider is arck's, served on a socket.

    With `post_clock` (the target declares capability `test-clock`) time is virtual on both
    sides: `advance` moves the provider's clock and the service's (`POST
    /v1/test-control/clock`) together, at most `STEP` at a time and never past a provider
    timer, letting the service go quiet before each step. Without it time is real:
    `advance` waits, and `next_deadline` says "look again shortly".

    `next_deadline` sees only the provider's timers; the service's own (model timeout,
    leases, backoff) are reached by stepping `STEP` at a time until `IDLE_CAP` seconds pass
    with no request to the provider and no change asked by the harness: then it answers
    None, and a run still active counts as hanging.
    """

    def __init__(
        self,
        served: ProviderServer,
        *,
        post_clock: Callable[[float], float | None] | None,
        limit: float = 30.0,
        quiet: float = QUIET,
    ) -> None:
        self.served = served
        self.provider = served.provider
        self.executor_faults: Counter[str] = Counter()  # what simulated executors fired
        self.virtual_time = post_clock is not None
        self.post_clock = post_clock
        self.limit = limit
        self.quiet = quiet
        self.writes = 0
        self._quiet_lock = threading.Lock()
        self.touched = time.monotonic()
        self._marker = (-1, -1)
        self._idle_since = self.now()

    def now(self) -> float:
        return self.provider.clock.now()

    def written(self) -> None:
        """The harness changed something on the target: let the work it started happen."""
        self.writes += 1
        self.touched = time.monotonic()
        self.wait_quiet()

    def wait_quiet(self) -> None:
        """Until no request to the provider is being worked on (answers asleep on its clock
        aside) and none started or finished for `quiet` seconds; at most `limit` seconds.
        One caller at a time: requests sent from several threads at once (concurrent claims)
        would each ask the provider's loop to go idle while the others keep it busy."""
        with self._quiet_lock:
            self._wait_quiet()

    def _wait_quiet(self) -> None:
        give_up = time.monotonic() + self.limit
        while True:
            busy, _ = self.served.state()
            idle_for = time.monotonic() - max(self.served.changed_at, self.touched)
            if (busy <= 0 and idle_for >= self.quiet) or time.monotonic() >= give_up:
                return
            time.sleep(min(max(self.quiet - idle_for, 0.002), 0.01))

    def next_deadline(self) -> float | None:
        self.wait_quiet()
        _, due = self.served.state()
        now = self.now()
        marker = (self.served.changes, self.writes)
        if marker != self._marker:
            self._marker, self._idle_since = marker, now
        sleeping = int(getattr(self.provider.clock, "sleeping", 0))
        if not self.virtual_time:
            return now + POLL if sleeping or now - self._idle_since < IDLE_CAP else None
        if due is not None:
            return min(due, now + STEP)
        return now + STEP if now - self._idle_since < IDLE_CAP else None

    def advance(self, seconds: float) -> None:
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"seconds must be a finite number >= 0, got {seconds!r}")
        if self.post_clock is None:
            time.sleep(min(seconds, self.limit))
            self.wait_quiet()
            return
        end = self.now() + seconds
        first = True
        while first or end - self.now() > 1e-9:
            first = False
            self.wait_quiet()
            now = self.now()
            _, due = self.served.state()
            step = max(0.0, min(end, now + STEP) - now)
            if due is not None and due - now <= step:
                # A provider timer ends this step: the service's timers up to it run first
                # (a timeout due with a slow answer wins, as on one clock).
                step = max(0.0, due - now)
                service_now = self._service(step)
                self._provider(step)
            else:
                # The provider moves first, so what the service's timers send is stamped
                # with the time they were due.
                self._provider(step)
                service_now = self._service(step)
            ahead = (service_now or 0.0) - self.now()
            if ahead > 1e-6:  # the service's clock ran ahead: bring the provider level
                self._provider(ahead)
            self.touched = time.monotonic()
        self.wait_quiet()

    def advance_idle(self, seconds: float) -> None:
        """Move time over a stretch in which the check needs nothing of the provider (an
        executor's silence, say): as `advance` up to each provider timer due in it, then
        the rest in one step, provider first, so the service runs its own timers in order
        on its side. What those send the provider is stamped at the end of the stretch
        instead of within a step of when it was due: sound only where the check judges
        none of it. A day costs a few clock requests instead of 86,400 (docs/targets.md)."""
        if self.post_clock is None or not math.isfinite(seconds) or seconds < 0:
            self.advance(seconds)
            return
        end = self.now() + seconds
        while end - self.now() > 1e-9:
            self.wait_quiet()
            _, due = self.served.state()
            now = self.now()
            if due is not None and due < end:
                self.advance(max(0.0, due - now))  # the provider's timer, in step
                continue
            self._provider(end - now)
            ahead = (self._service(end - now) or 0.0) - self.now()
            if ahead > 1e-6:
                self._provider(ahead)
            self.touched = time.monotonic()
        self.wait_quiet()

    def _provider(self, seconds: float) -> None:
        clock = self.provider.clock
        assert isinstance(clock, VirtualClock)
        self.served.call(lambda: clock.advance(seconds), timeout=self.limit)

    def _service(self, seconds: float) -> float | None:
        assert self.post_clock is not None
        return self.post_clock(seconds)

    def close(self) -> None:
        self.served.close()


def serve_provider(host: str, port: int, *, seed: int, start: float | None) -> ProviderServer:
    """Start the simulated provider on `host:port`: on a virtual clock from `start` (moved
    only by a `ServedControl`), or on real time when `start` is None."""
    clock = VirtualClock(start, autojump=False) if start is not None else _CountingRealClock()
    return ProviderServer(SimulatedProvider(clock=clock, seed=seed), host, port)
