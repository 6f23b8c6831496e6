"""`ManualClock`, the test clock of `arck serve --test-clock`: sleepers wake in order, and a
request that takes no virtual time (a lookup, `hold`) comes back before a jump fires its own
timeout (the flaky cost-pending check over HTTP that CI once failed)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

import arck.reference.clock as clock_module
from arck.reference.clock import DEFAULT_START, ManualClock, instant


def test_sleepers_wake_in_deadline_order() -> None:
    async def main() -> list[str]:
        clock, woke = ManualClock(), []

        async def sleeper(name: str, seconds: float) -> None:
            await clock.sleep(seconds)
            woke.append(f"{name}@{clock.now() - DEFAULT_START:g}")

        tasks = [asyncio.ensure_future(sleeper(n, s)) for n, s in (("b", 20), ("a", 10))]
        await asyncio.sleep(0)
        assert await clock.advance(15) == DEFAULT_START + 15
        await clock.advance(15)
        await asyncio.gather(*tasks)
        return woke

    assert asyncio.run(main()) == ["a@10", "b@20"]


async def _lookup(clock: ManualClock, held: bool, answer_after_s: float) -> str:
    """A real-time answer (`answer_after_s` of wall time) raced against a 10 s timeout on the
    clock, as the reference's reconciliation lookup does."""
    answer = asyncio.ensure_future(asyncio.sleep(answer_after_s, "answered"))
    timer = asyncio.ensure_future(clock.sleep(10))
    with instant(clock) if held else contextlib.nullcontext():
        await asyncio.wait({answer, timer}, return_when=asyncio.FIRST_COMPLETED)
    timer.cancel()
    return answer.result() if answer.done() else "timed out"


def _jump_over(held: bool, answer_after_s: float) -> str:
    async def main() -> str:
        clock = ManualClock()
        looked = asyncio.ensure_future(_lookup(clock, held, answer_after_s))
        await asyncio.sleep(0)
        await clock.advance(3600)  # an idle hour in one move
        return await looked

    return asyncio.run(main())


def test_a_held_lookup_comes_back_before_a_jump_fires_its_timeout() -> None:
    assert _jump_over(held=True, answer_after_s=0.05) == "answered"


def test_without_the_hold_the_jump_fires_the_timeout() -> None:
    """The failure the hold exists for: the timer is due inside the jump, the answer is not."""
    assert _jump_over(held=False, answer_after_s=0.05) == "timed out"


def test_a_hold_that_never_ends_costs_at_most_the_allowance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A provider that never answers: the advance gives up after its real-time allowance and
    the timeout fires as it would without the hold."""
    monkeypatch.setattr(clock_module, "HOLD_LIMIT_S", 0.1)
    assert _jump_over(held=True, answer_after_s=30) == "timed out"
