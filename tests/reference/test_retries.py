"""Refused model calls (docs/runs.md, "Model calls"): a retryable refusal (429, 5xx) is sent
again as a new model call after a backoff on the injected clock, at most 3 times a step; any
other refusal, or the last retry refused, ends the run `model_timeout` with nothing charged.
In-process on one virtual clock, with the simulated provider."""

from __future__ import annotations

import asyncio
import functools
import itertools
from typing import Any

import httpx
import runkit
from runkit import (
    FUNDS,
    RESERVATION,
    Swallow,
    World,
    call_started,
    charge,
    event_list,
    of,
    run,
    scenario,
    session,
    wallet,
)

from arck.simulator.clock import until_idle
from arck.simulator.provider import (
    RateLimited,
    ServerError,
    SlowAnswer,
    Step,
)

# These runs are polled every 0.25 s of the clock.
ended = functools.partial(runkit.ended, step=0.25)


async def start(client: httpx.AsyncClient, script: str, wallet_id: str | None = None) -> Any:
    """A new session on its own agent version (no tools), and a run in it."""
    s = await session(client, script, budget=None, wallet_id=wallet_id)
    return s, await run(client, s["session_id"], "Hello")


async def money(client: httpx.AsyncClient, wallet_id: str) -> tuple[int, int, int]:
    w = (await client.get(f"/v1/wallets/{wallet_id}")).json()
    return w["balance"], w["reserved"], w["charged"]


def test_a_503_is_retried_as_a_new_call_after_one_second() -> None:
    async def test(world: World) -> None:
        world.provider.add_script("s", [Step(faults=[ServerError(status=503)]),
                                        Step(text="Done.")])
        client = world.client()
        s, r = await start(client, "s")
        assert (await ended(client, world.clock, r["run_id"]))["end_reason"] == "completed"
        items = await event_list(client, r["run_id"])
        started = of(items, "model_call.started")
        finished = of(items, "model_call.finished")
        assert len(started) == len(finished) == 2
        first, second = (e["call_id"] for e in started)
        assert first != second
        assert started[1]["retry"] == {"attempt": 1, "of": first}
        assert "retry" not in started[0]
        assert [e["reservation"] for e in started] == [RESERVATION, RESERVATION]
        assert started[1]["compaction"]["decision"] == "none"
        assert (finished[0]["outcome"], finished[0]["status"], finished[0]["charge"],
                finished[0]["released"]) == ("refused", 503, 0, RESERVATION)
        assert finished[1]["outcome"] == "answered"
        assert finished[1]["charge"] == charge(finished[1]["usage"])
        [scheduled] = of(items, "model_call.retry_scheduled")
        assert (scheduled["call_id"], scheduled["attempt"], scheduled["status"],
                scheduled["delay"], scheduled["retry_after"]) == (first, 1, 503, 1.0, None)
        sent = world.provider.recorded()
        assert len(sent) == 2
        assert sent[0].body == sent[1].body  # the same request, byte for byte
        keys = [dict(x.headers)["idempotency-key"] for x in sent]
        assert keys == [first, second]
        [a], [b] = world.provider.lookup_key(first), world.provider.lookup_key(second)
        assert b.received_at - a.received_at == 1.0
        assert (a.billed, b.billed) == (False, True)
        assert await money(client, s["wallet_id"]) == (
            FUNDS - finished[1]["charge"], 0, finished[1]["charge"])
        history = (await client.get(f"/v1/sessions/{s['session_id']}/history")).json()
        assert history["items"] == [{"type": "user", "text": "Hello"},
                                    {"type": "assistant", "text": "Done."}]

    scenario(test)


def test_a_429_retry_waits_exactly_its_retry_after() -> None:
    async def test(world: World) -> None:
        world.provider.add_script("s", [Step(faults=[RateLimited(retry_after=7)]),
                                        Step(text="Done.")])
        client = world.client()
        _, r = await start(client, "s")
        assert (await ended(client, world.clock, r["run_id"]))["end_reason"] == "completed"
        items = await event_list(client, r["run_id"])
        [scheduled] = of(items, "model_call.retry_scheduled")
        assert (scheduled["status"], scheduled["retry_after"], scheduled["delay"]) == (429, 7, 7)
        first, second = world.provider.records()
        assert second.received_at - first.received_at == 7.0
        assert scheduled["due_at"] == second.received_at

    scenario(test)


def test_a_long_retry_after_is_capped_at_sixty_seconds() -> None:
    async def test(world: World) -> None:
        world.provider.add_script("s", [Step(faults=[RateLimited(retry_after=600)]),
                                        Step(text="Done.")])
        client = world.client()
        _, r = await start(client, "s")
        assert (await ended(client, world.clock, r["run_id"]))["end_reason"] == "completed"
        first, second = world.provider.records()
        assert second.received_at - first.received_at == 60.0

    scenario(test)


def test_four_refusals_end_the_run_model_timeout_with_nothing_charged() -> None:
    async def test(world: World) -> None:
        world.provider.add_script("s", [
            Step(faults=[ServerError(status=503)]), Step(faults=[ServerError(status=500)]),
            Step(faults=[ServerError(status=502)]), Step(faults=[RateLimited()]),
            Step(text="Never asked for."),
        ])
        client = world.client()
        s, r = await start(client, "s")
        assert (await ended(client, world.clock, r["run_id"]))["end_reason"] == "model_timeout"
        records = world.provider.records()
        assert [x.status_code for x in records] == [503, 500, 502, 429]
        gaps = [b.received_at - a.received_at for a, b in itertools.pairwise(records)]
        assert gaps == [1, 2, 4]
        items = await event_list(client, r["run_id"])
        assert [e["delay"] for e in of(items, "model_call.retry_scheduled")] == [1, 2, 4]
        assert [e["charge"] for e in of(items, "model_call.finished")] == [0, 0, 0, 0]
        [gave_up] = of(items, "model_call.given_up")
        assert (gave_up["status"], gave_up["calls"], gave_up["why"]) == (
            429, 4, "retries exhausted")
        assert gave_up["detail"].startswith("rate_limit_exceeded: ")
        assert items[-1]["type"] == "run.ended"
        assert await money(client, s["wallet_id"]) == (FUNDS, 0, 0)

    scenario(test)


def test_a_400_that_is_not_context_length_ends_the_run_at_once() -> None:
    async def test(world: World) -> None:
        bad = httpx.Response(400, json={"error": {
            "message": "Invalid value for 'temperature'.", "type": "invalid_request_error",
            "param": "temperature", "code": "invalid_value"}})
        world.provider.add_script("s", [Step(side_effect=bad), Step(text="Never asked for.")])
        client = world.client()
        s, r = await start(client, "s")
        begin = world.clock.now()
        assert (await ended(client, world.clock, r["run_id"]))["end_reason"] == "model_timeout"
        assert world.clock.now() - begin < 1
        assert len(world.provider.recorded()) == 1
        items = await event_list(client, r["run_id"])
        assert of(items, "model_call.retry_scheduled") == []
        [gave_up] = of(items, "model_call.given_up")
        assert (gave_up["status"], gave_up["calls"], gave_up["why"]) == (
            400, 1, "not retryable")
        assert gave_up["detail"] == "invalid_value: Invalid value for 'temperature'."
        assert await money(client, s["wallet_id"]) == (FUNDS, 0, 0)

    scenario(test)


def test_a_retry_without_funds_ends_insufficient_balance() -> None:
    """Run b takes the wallet's funds while run a waits out its backoff; time moves only when
    the test says, so the order cannot depend on when the loop happens to be idle."""

    async def main() -> None:
        world = World(autojump=False)
        try:
            world.provider.add_script("a", [Step(faults=[RateLimited(retry_after=5)]),
                                            Step(text="Never asked for.")])
            world.provider.add_script("b", [Step(text="Slow.",
                                                 faults=[SlowAnswer(seconds=20)])])
            client = world.client()
            shared = await wallet(client, RESERVATION)
            _, a = await start(client, "a", shared)
            await until_idle()
            assert of(await event_list(client, a["run_id"]), "model_call.retry_scheduled")
            _, b = await start(client, "b", shared)  # takes the funds while a waits
            await until_idle()
            await world.clock.advance(5)
            items = await event_list(client, a["run_id"])
            assert (await client.get(f"/v1/runs/{a['run_id']}")).json()["end_reason"] == \
                "insufficient_balance"
            [refused] = of(items, "reservation.refused")
            assert refused == {"reservation": RESERVATION, "available": 0}
            assert len(of(items, "model_call.started")) == 1
            await world.clock.advance(20)
            snapshot = (await client.get(f"/v1/runs/{b['run_id']}")).json()
            assert snapshot["end_reason"] == "completed"
            assert len(world.provider.records()) == 2  # a once, b once
        finally:
            await world.close()

    asyncio.run(main())


def test_a_worker_lost_during_the_backoff_keeps_the_retry_count() -> None:
    async def test(world: World) -> None:
        world.provider.add_script("s", [Step(faults=[RateLimited(retry_after=40)])] * 4
                                  + [Step(text="Never asked for.")])
        first = world.client()
        s, r = await start(first, "s")
        for _ in range(400):  # the second refusal, its retry 40 s away
            if len(of(await event_list(first, r["run_id"]), "model_call.retry_scheduled")) == 2:
                break
            await world.clock.sleep(0.5)
        await world.crash()
        second = world.client()
        done = await ended(second, world.clock, r["run_id"])
        assert done["end_reason"] == "model_timeout"
        items = await event_list(second, r["run_id"])
        assert len(of(items, "run.recovered")) == 1
        started = of(items, "model_call.started")
        assert [e.get("retry", {}).get("attempt") for e in started] == [None, 1, 2, 3]
        records = world.provider.records()
        assert len(records) == 4  # never a fifth: the count survived the worker
        gaps = [b.received_at - a.received_at for a, b in itertools.pairwise(records)]
        assert gaps == [40, 40, 40]  # the backoff survived too
        [gave_up] = of(items, "model_call.given_up")
        assert (gave_up["calls"], gave_up["why"]) == (4, "retries exhausted")
        assert await money(second, s["wallet_id"]) == (FUNDS, 0, 0)

    scenario(test)


def test_a_takeover_whose_checked_call_is_refused_goes_on_to_retry() -> None:
    async def test(world: World) -> None:
        world.provider.add_script("s", [Step(faults=[ServerError(status=502)]),
                                        Step(text="Done.")])
        first = world.client(Swallow(world.provider.async_transport(), completions=True))
        _, r = await start(first, "s")
        await call_started(first, world.clock, r["run_id"])
        await world.crash()
        second = world.client()
        done = await ended(second, world.clock, r["run_id"])
        assert done["end_reason"] == "completed"
        items = await event_list(second, r["run_id"])
        [reconciled] = of(items, "model_call.reconciled")
        assert (reconciled["verdict"], reconciled["resent"]) == ("not_processed", True)
        started = of(items, "model_call.started")
        assert started[1]["retry"] == {"attempt": 1, "of": started[0]["call_id"]}
        refused, answered = world.provider.records()
        assert (refused.status_code, answered.status_code) == (502, 200)
        assert answered.received_at - refused.received_at == 1.0  # at once, no second lapse
        assert len(of(items, "run.recovered")) == 1

    scenario(test)
