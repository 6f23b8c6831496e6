"""Durable runs (docs/runs.md "Leases and recovery"): leases, takeover, reconciliation (RUN-02,
RUN-12, BIL-03). In-process on a virtual clock, then `arck serve` killed with SIGKILL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from runkit import (
    FULL,
    FUNDS,
    LEASE,
    RESERVATION,
    Swallow,
    World,
    call_started,
    charge,
    ended,
    event_list,
    of,
    run,
    scenario,
    session,
    until,
)
from servekit import Served, free_port, provider_on_socket

from arck.simulator.provider import SimulatedProvider, SlowAnswer, Step


async def mid_call(client: httpx.AsyncClient, world: World, run_id: str) -> None:
    await until(client, world.clock, run_id, lambda s: s["state"] == "running", 5)
    await call_started(client, world.clock, run_id)


def test_a_lost_worker_is_taken_over_and_its_answer_applied_without_resend() -> None:
    async def test(world: World) -> None:
        world.provider.add_script("s", [Step(text="Done.", faults=[SlowAnswer(seconds=20)])])
        first = world.client()
        s = await session(first, "s")
        r = await run(first, s["session_id"], "Hello")
        await mid_call(first, world, r["run_id"])
        crashed_at = world.clock.now()
        await world.crash()
        second = world.client()
        done = await ended(second, world.clock, r["run_id"])
        assert done["end_reason"] == "completed"
        events = await event_list(second, r["run_id"])
        [recovered] = of(events, "run.recovered")
        assert recovered["previous_worker"].startswith("inst-000001.")
        assert recovered["worker"].startswith("inst-000002.")
        assert recovered["lease_expired_at"] <= crashed_at + LEASE
        [started] = of(events, "model_call.started")
        [reconciled] = of(events, "model_call.reconciled")
        assert (reconciled["verdict"], reconciled["resent"]) == ("processed", False)
        [finished] = of(events, "model_call.finished")
        assert finished["outcome"] == "answered"
        [record] = world.provider.lookup_key(started["call_id"])  # sent once, never again
        assert record.outcome == "lost"
        assert finished["usage"] == record.usage
        history = (await second.get(f"/v1/sessions/{s['session_id']}/history")).json()
        assert history["items"] == [{"type": "user", "text": "Hello"},
                                    {"type": "assistant", "text": "Done."}]
        wallet = (await second.get(f"/v1/wallets/{s['wallet_id']}")).json()
        assert (wallet["reserved"], wallet["charged"]) == (0, charge(record.usage))
        assert wallet["balance"] + wallet["charged"] == FUNDS

    scenario(test)


def test_a_call_that_never_arrived_is_sent_once_after_the_check() -> None:
    async def test(world: World) -> None:
        world.provider.add_script("s", [Step(text="Done.")])
        first = world.client(Swallow(world.provider.async_transport(), completions=True))
        s = await session(first, "s")
        r = await run(first, s["session_id"], "Hello")
        await mid_call(first, world, r["run_id"])
        await world.crash()
        assert world.provider.records() == []
        second = world.client()
        done = await ended(second, world.clock, r["run_id"])
        assert done["end_reason"] == "completed"
        events = await event_list(second, r["run_id"])
        [started] = of(events, "model_call.started")
        [reconciled] = of(events, "model_call.reconciled")
        assert (reconciled["verdict"], reconciled["resent"]) == ("not_processed", True)
        [record] = world.provider.lookup_key(started["call_id"])
        assert record.outcome == "answered"

    scenario(test)


def test_without_the_lookup_the_run_ends_cost_pending_then_settles_later() -> None:
    async def test(world: World) -> None:
        world.provider.add_script("s", [Step(text="Done.", faults=[SlowAnswer(seconds=20)])])
        first = world.client()
        s = await session(first, "s")
        r = await run(first, s["session_id"], "Hello")
        await mid_call(first, world, r["run_id"])
        await world.crash()
        second = world.client(Swallow(world.provider.async_transport(), lookups=True))
        done = await ended(second, world.clock, r["run_id"])
        assert done["end_reason"] == "cost_pending_reconciliation"
        wallet = (await second.get(f"/v1/wallets/{s['wallet_id']}")).json()
        assert (wallet["reserved"], wallet["charged"]) == (RESERVATION, 0)
        [reconciled] = of(await event_list(second, r["run_id"]), "model_call.reconciled")
        assert reconciled["verdict"] == "unavailable"
        await world.crash()
        third = world.client()  # the lookup answers again: the reservation settles
        await third.get(f"/v1/runs/{r['run_id']}")
        await world.clock.sleep(400)
        events = await event_list(third, r["run_id"])
        [record] = world.provider.lookup_key(of(events, "model_call.started")[0]["call_id"])
        late = of(events, "model_call.reconciled")[-1]
        assert (late["verdict"], late["charge"]) == ("processed", charge(record.usage))
        assert events[-1]["type"] == "model_call.reconciled"  # after run.ended: not revived
        snapshot = (await third.get(f"/v1/runs/{r['run_id']}")).json()
        assert snapshot["end_reason"] == "cost_pending_reconciliation"
        history = (await third.get(f"/v1/sessions/{s['session_id']}/history")).json()
        assert history["items"] == [{"type": "user", "text": "Hello"}]
        wallet = (await third.get(f"/v1/wallets/{s['wallet_id']}")).json()
        assert (wallet["reserved"], wallet["charged"]) == (0, charge(record.usage))
        assert wallet["balance"] + wallet["charged"] == FUNDS

    scenario(test)


def test_a_timed_out_call_is_reconciled_and_its_reservation_settles() -> None:
    async def test(world: World) -> None:
        world.provider.add_script("s", [Step(text="late", faults=[SlowAnswer(seconds=120)])])
        client = world.client()
        s = await session(client, "s")
        r = await run(client, s["session_id"], "Hello")
        done = await ended(client, world.clock, r["run_id"])
        assert done["end_reason"] == "model_timeout"
        wallet = (await client.get(f"/v1/wallets/{s['wallet_id']}")).json()
        assert wallet["reserved"] == RESERVATION
        await world.clock.sleep(70)
        events = await event_list(client, r["run_id"])
        [started] = of(events, "model_call.started")
        [record] = world.provider.lookup_key(started["call_id"])
        [reconciled] = of(events, "model_call.reconciled")
        assert reconciled["charge"] == charge(record.usage)
        wallet = (await client.get(f"/v1/wallets/{s['wallet_id']}")).json()
        assert (wallet["reserved"], wallet["charged"]) == (0, charge(record.usage))
        assert (await client.get(f"/v1/runs/{r['run_id']}")).json()["end_reason"] == \
            "model_timeout"

    scenario(test)


def test_the_lease_is_renewed_while_a_call_is_long() -> None:
    async def test(world: World) -> None:
        world.provider.add_script("s", [Step(text="Done.", faults=[SlowAnswer(seconds=25)])])
        client = world.client()
        s = await session(client, "s")
        r = await run(client, s["session_id"], "Hello")
        await ended(client, world.clock, r["run_id"])
        events = await event_list(client, r["run_id"])
        assert of(events, "run.recovered") == []  # 25 s > the 15 s lease: renewed
        assert events[-1]["data"] == {"end_reason": "completed"}

    scenario(test)


# -- arck serve, SIGKILL, restart ---------------------------------------------------------------

RUNS = 3
SLOW = 3.0


@pytest.fixture
def provider_url() -> Iterator[tuple[SimulatedProvider, str]]:
    with provider_on_socket() as served:
        yield served


def _steps(i: int) -> list[Step]:
    return [Step(text=f"First answer {i}.", faults=[SlowAnswer(seconds=SLOW)]),
            Step(text=f"Second answer {i}.")]


async def _sessions(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    """RUNS sessions, each on a version of its own answered by script k{i}, and a wallet."""
    return [await session(client, f"k{i}", prompt=f"Session {i}.", wallet_name=f"w{i}")
            for i in range(RUNS)]


async def _sessions_at(url: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=url, headers=FULL, timeout=10) as client:
        return await _sessions(client)


def _wait_ended(client: httpx.Client, run_ids: list[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        states = [client.get(f"/v1/runs/{r}").json()["state"] for r in run_ids]
        if all(state == "ended" for state in states):
            return
        time.sleep(0.1)
    raise AssertionError(f"runs never ended: {states}")


def _uninterrupted() -> list[tuple[list[Any], list[Any]]]:
    """The same sessions and runs in-process, never interrupted: (formal, execution) each."""

    async def main() -> list[tuple[list[Any], list[Any]]]:
        world = World()
        for i in range(RUNS):
            world.provider.add_script(f"k{i}", _steps(i))
        histories = []
        async with world.client() as client:
            sessions = await _sessions(client)
            for text in ("Where is my order?", "Thanks."):
                for s in sessions:
                    r = await run(client, s["session_id"], text)
                    await ended(client, world.clock, r["run_id"])
            for s in sessions:
                formal = (await client.get(f"/v1/sessions/{s['session_id']}/history")).json()
                execution = (await client.get(
                    f"/v1/sessions/{s['session_id']}/execution-history")).json()
                histories.append((formal["items"], execution["items"]))
            await world.close()
        return histories

    return asyncio.run(main())


@pytest.mark.timeout(180)
def test_sigkill_mid_call_then_restart_continues_every_run_without_a_repeated_paid_call(
    provider_url: tuple[SimulatedProvider, str], tmp_path: Path
) -> None:
    provider, url = provider_url
    for i in range(RUNS):
        provider.add_script(f"k{i}", _steps(i))
    db = tmp_path / "runs.sqlite3"
    port = free_port()
    args = ["--db", str(db), "--provider-url", url, "--lease-seconds", "1"]
    log = tmp_path / "serve.log"
    served = Served(args, port, log)
    try:
        sessions = asyncio.run(_sessions_at(served.url))
        with httpx.Client(base_url=served.url, headers=FULL, timeout=10) as client:
            first = [client.post(f"/v1/sessions/{s['session_id']}/runs",
                                 json={"input": "Where is my order?"}).json()["run_id"]
                     for s in sessions]
            deadline = time.monotonic() + 10  # two workers: two calls in flight, one queued
            while sum(r.outcome == "received" for r in provider.records()) < 2:
                assert time.monotonic() < deadline, provider.records()
                time.sleep(0.02)
        served.kill()
        killed = time.monotonic()
        served = Served(args, port, log)
        with httpx.Client(base_url=served.url, headers=FULL, timeout=10) as client:
            _wait_ended(client, first, 30)
            resumed = time.monotonic() - killed
            second = [client.post(f"/v1/sessions/{s['session_id']}/runs",
                                  json={"input": "Thanks."}).json()["run_id"]
                      for s in sessions]
            _wait_ended(client, second, 30)
            snapshots = [client.get(f"/v1/runs/{r}").json() for r in first + second]
            assert {s["end_reason"] for s in snapshots} == {"completed"}, snapshots
            events = {r: client.get(f"/v1/runs/{r}/events").json()["events"]
                      for r in first + second}
            histories = [
                (client.get(f"/v1/sessions/{s['session_id']}/history").json()["items"],
                 client.get(f"/v1/sessions/{s['session_id']}/execution-history").json()["items"])
                for s in sessions]
            wallets = [client.get(f"/v1/wallets/{s['wallet_id']}").json() for s in sessions]
    finally:
        served.stop()
    # The same formal (and execution) history as an uninterrupted run.
    assert histories == _uninterrupted()
    recovered = [r for r in first if of(events[r], "run.recovered")]
    assert len(recovered) == 2, "two runs were mid-call when the server died"
    for r in recovered:
        [reconciled] = of(events[r], "model_call.reconciled")
        assert (reconciled["verdict"], reconciled["resent"]) == ("processed", False)
    # No repeated paid model call: each call id reached the provider once, billed once.
    call_ids = [c["call_id"] for r in first + second
                for c in of(events[r], "model_call.started")]
    assert len(call_ids) == 2 * RUNS
    records = provider.records()
    assert sorted(r.idempotency_key or "" for r in records) == sorted(call_ids)
    assert all(r.billed for r in records)
    assert sum(r.outcome == "lost" for r in records) == 2  # the two the kill cut off
    # Balances conserved: every charge is the provider's billed usage, nothing left reserved.
    usage = {r.idempotency_key: r.usage for r in records}
    for s, wallet in zip(sessions, wallets, strict=True):
        charges = [f["charge"] for r in first + second for f in
                   of(events[r], "model_call.finished")
                   if client_session(events[r]) == s["session_id"]]
        expected = [charge(usage[c["call_id"]]) for r in first + second  # type: ignore[arg-type]
                    for c in of(events[r], "model_call.started")
                    if client_session(events[r]) == s["session_id"]]
        assert charges == expected
        assert wallet["reserved"] == 0
        assert wallet["charged"] == sum(expected)
        assert wallet["balance"] + wallet["charged"] == FUNDS
    assert resumed < 20, resumed


def client_session(events: list[dict[str, Any]]) -> str:
    return str(events[0]["data"]["session_id"])  # run.created names the session
