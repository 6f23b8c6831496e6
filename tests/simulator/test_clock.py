"""The virtual clock: waiting is free, and wake-ups come in one order every time."""

from __future__ import annotations

import asyncio

import pytest

from arck.simulator.clock import DEFAULT_START, Clock, RealClock, VirtualClock


def test_both_clocks_are_clocks() -> None:
    assert isinstance(RealClock(), Clock)
    assert isinstance(VirtualClock(), Clock)


def test_a_minute_of_sleep_passes_in_virtual_time() -> None:
    clock = VirtualClock()

    async def scenario() -> None:
        await clock.sleep(60)

    asyncio.run(scenario())
    assert clock.now() == DEFAULT_START + 60
    assert clock.sleeping == 0


def _wake_order(clock: VirtualClock) -> list[tuple[str, float]]:
    woken: list[tuple[str, float]] = []

    async def sleeper(name: str, *naps: float) -> None:
        for nap in naps:
            await clock.sleep(nap)
            woken.append((name, clock.now()))

    async def scenario() -> None:
        await asyncio.gather(
            sleeper("a", 30), sleeper("b", 10, 10), sleeper("c", 20), sleeper("d", 10, 0)
        )

    asyncio.run(scenario())
    return woken


def test_sleepers_wake_by_deadline_then_by_the_order_they_slept() -> None:
    # c slept for 20 at 0, before b slept again at 10 for another 10: c wakes first.
    expected = [("b", 10.0), ("d", 10.0), ("d", 10.0), ("c", 20.0), ("b", 20.0), ("a", 30.0)]
    first = _wake_order(VirtualClock(0.0))
    assert first == expected
    assert _wake_order(VirtualClock(0.0)) == first


def test_a_timeout_on_the_same_clock_fires_before_a_slower_answer() -> None:
    clock = VirtualClock(0.0)

    async def scenario() -> tuple[bool, float]:
        answer = asyncio.ensure_future(clock.sleep(60))
        timeout = asyncio.ensure_future(clock.sleep(30))
        done, _ = await asyncio.wait({answer, timeout}, return_when=asyncio.FIRST_COMPLETED)
        at = clock.now()
        answer.cancel()
        return done == {timeout}, at

    assert asyncio.run(scenario()) == (True, 30.0)
    assert clock.sleeping == 0


def test_without_autojump_only_advance_moves_time() -> None:
    clock = VirtualClock(0.0, autojump=False)
    woken: list[tuple[str, float]] = []

    async def sleeper(name: str, nap: float) -> None:
        await clock.sleep(nap)
        woken.append((name, clock.now()))

    async def scenario() -> list[list[tuple[str, float]]]:
        tasks = [asyncio.ensure_future(sleeper(n, s)) for n, s in (("x", 5), ("y", 2), ("z", 9))]
        for _ in range(10):
            await asyncio.sleep(0)
        seen = [list(woken)]
        await clock.advance(5)
        seen.append(list(woken))
        await clock.advance(10)
        await asyncio.gather(*tasks)
        return seen

    before, after_five = asyncio.run(scenario())
    assert before == []
    assert after_five == [("y", 2.0), ("x", 5.0)]
    assert woken[-1] == ("z", 9.0)
    assert clock.now() == 15.0


@pytest.mark.parametrize("seconds", [-1.0, float("nan"), float("inf")])
def test_sleep_refuses_impossible_durations(seconds: float) -> None:
    clock = VirtualClock()
    with pytest.raises(ValueError, match="seconds"):
        asyncio.run(clock.sleep(seconds))


def test_two_autojumping_clocks_in_one_loop_are_refused() -> None:
    first, second = VirtualClock(), VirtualClock()

    async def scenario() -> None:
        nap = asyncio.ensure_future(first.sleep(1))
        await asyncio.sleep(0)
        try:
            await second.sleep(1)
        finally:
            await nap

    with pytest.raises(RuntimeError, match="one autojumping VirtualClock per event loop"):
        asyncio.run(scenario())
