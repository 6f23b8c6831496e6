"""Reconciliation lookups, slow answers on the virtual clock, side effects, fault coverage."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

import httpx
import pytest
from providerkit import BASE, START, conversation, provider

from arck.simulator.clock import VirtualClock
from arck.simulator.provider import (
    FAULT_KINDS,
    ContextLengthExceeded,
    LostResponse,
    RateLimited,
    ServerError,
    SimulatedProvider,
    SlowAnswer,
    SlowStart,
    Step,
    UsageDrift,
    UsageMissing,
)


def _post(
    http: httpx.AsyncClient, script: str, key: str | None = None
) -> Coroutine[Any, Any, httpx.Response]:
    headers = {"Idempotency-Key": key} if key else {}
    return http.post("/chat/completions", headers=headers,
                     json={"model": "m", "messages": conversation(script, "go")})


def test_a_lost_response_is_found_by_its_idempotency_key_billed() -> None:
    p = provider()
    p.add_script("lost", [Step(text="You got it.", faults=[LostResponse()])])

    async def scenario() -> tuple[Any, Any]:
        async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
            with pytest.raises(httpx.RemoteProtocolError):
                await _post(http, "lost", key="k-1")
            listed = (await http.get("/arck/requests", params={"idempotency_key": "k-1"})).json()
            one = (await http.get(f"/arck/requests/{listed['data'][0]['id']}")).json()
            return listed, one

    listed, one = asyncio.run(scenario())
    assert [r["id"] for r in listed["data"]] == ["chatcmpl-arck-000001"]
    assert one == listed["data"][0]
    assert (one["outcome"], one["billed"], one["faults"]) == ("lost", True, ["lost_response"])
    assert one["response"]["choices"][0]["message"]["content"] == "You got it."
    assert one["usage"] == one["response"]["usage"] == one["true_usage"]
    record = p.lookup_key("k-1")[0]
    assert record == p.lookup("chatcmpl-arck-000001")
    assert record.response is not None
    assert p.lookups("k-1") == [START]  # the engine's lookup, not the harness's own
    assert p.lookups("k-2") == []


def test_a_slow_answer_loses_to_the_engines_timeout_on_the_same_clock() -> None:
    clock = VirtualClock(START)
    p = SimulatedProvider(clock=clock)
    p.add_script("slow", [Step(faults=[SlowAnswer(seconds=60)])])

    async def scenario() -> bool:
        async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
            call = asyncio.ensure_future(_post(http, "slow", key="k-2"))
            timeout = asyncio.ensure_future(clock.sleep(30))
            done, _ = await asyncio.wait({call, timeout}, return_when=asyncio.FIRST_COMPLETED)
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            return timeout in done and call not in done

    assert asyncio.run(scenario())
    assert clock.now() == START + 30
    assert clock.sleeping == 0
    record = p.lookup_key("k-2")[0]
    assert (record.outcome, record.billed, record.finished_at) == ("lost", True, START + 30)
    assert p.fault_counts()["slow"] == 1


def test_a_slow_answer_arrives_after_its_virtual_delay() -> None:
    p = provider()
    p.add_script("slow", [Step(text="late", faults=[SlowAnswer(seconds=90)])])

    async def scenario() -> httpx.Response:
        async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
            return await _post(http, "slow")

    answer = asyncio.run(scenario())
    assert answer.json()["choices"][0]["message"]["content"] == "late"
    record = p.lookup(answer.headers["x-request-id"])
    assert record is not None
    assert (record.outcome, record.received_at, record.finished_at) == ("answered", START,
                                                                        START + 90)


def test_a_resend_is_billed_again_and_both_are_listed() -> None:
    p = provider()

    async def scenario() -> None:
        async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
            await _post(http, "x", key="same")
            await _post(http, "x", key="same")

    asyncio.run(scenario())
    assert [(r.id, r.billed) for r in p.lookup_key("same")] == [
        ("chatcmpl-arck-000001", True), ("chatcmpl-arck-000002", True)]


def test_unknown_ids_are_404_in_openais_shape() -> None:
    async def scenario() -> httpx.Response:
        async with httpx.AsyncClient(transport=provider().async_transport(), base_url=BASE) as h:
            return await h.get("/arck/requests/nope")

    answer = asyncio.run(scenario())
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "not_found"


def _respond(request: httpx.Request) -> httpx.Response | None:
    return httpx.Response(418, json={"seen": len(request.content) > 0})


@pytest.mark.parametrize(
    ("effect", "status", "outcome"),
    [
        (httpx.Response(529, json={"error": {"message": "overloaded"}}), 529, "answered"),
        (_respond, 418, "answered"),
        (lambda request: None, 200, "answered"),
        (httpx.ConnectError("reset by peer"), None, "failed"),
        (httpx.ReadError, None, "failed"),
    ],
)
def test_side_effects_speak_respx(effect: Any, status: int | None, outcome: str) -> None:
    p = provider()
    p.add_script("effect", [Step(text="normal", side_effect=effect)])

    async def scenario() -> httpx.Response | BaseException:
        async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
            try:
                return await _post(http, "effect", key="k")
            except httpx.TransportError as exc:
                return exc

    answer = asyncio.run(scenario())
    record = p.lookup_key("k")[0]
    assert record.outcome == outcome
    assert record.faults == ("side_effect",)
    if status is None:
        assert isinstance(answer, httpx.TransportError)
        assert not record.billed
    else:
        assert isinstance(answer, httpx.Response)
        assert answer.status_code == status
        assert answer.headers["x-request-id"] == record.id
        assert record.billed == (status == 200)


def test_fault_coverage_counts_each_kind_that_fired() -> None:
    p = provider()
    steps = [
        Step(faults=[RateLimited()]),
        Step(faults=[ServerError(status=503)]),
        Step(faults=[ServerError()]),
        Step(faults=[ContextLengthExceeded()]),
        Step(faults=[UsageDrift(factor=2.0), SlowAnswer(seconds=5)]),
        Step(faults=[UsageMissing(), LostResponse()]),
        Step(text="plain"),
        Step(text="late", faults=[SlowStart(seconds=3)]),
    ]
    p.add_script("all", steps)
    assert p.fault_counts() == dict.fromkeys(FAULT_KINDS, 0)

    async def scenario() -> dict[str, int]:
        async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
            for _ in steps:
                with contextlib.suppress(httpx.RemoteProtocolError):
                    await _post(http, "all")
            result: dict[str, int] = (await http.get("/arck/faults")).json()
            return result

    over_http = asyncio.run(scenario())
    expected = {"rate_limit": 1, "server_error": 2, "context_length": 1, "usage_drift": 1,
                "slow": 1, "usage_missing": 1, "lost_response": 1, "side_effect": 0,
                "usage_reported": 0, "slow_start": 1}
    assert p.fault_counts() == over_http == expected
    assert [r.outcome for r in p.records()] == ["answered"] * 5 + ["lost"] + ["answered"] * 2
    assert [r.billed for r in p.records()] == [False] * 4 + [True] * 4


def test_a_slow_start_is_in_progress_then_processed_even_when_its_caller_left() -> None:
    """`slow_start`: nothing billed while the request waits (a lookup says `received`); it
    is processed after its seconds whether or not the caller stayed: one that stayed gets
    the answer, one that left (its call cancelled) leaves it billed and `lost`."""
    clock = VirtualClock(autojump=False)
    p = SimulatedProvider(clock=clock)
    p.add_script("stay", [Step(text="in time", faults=[SlowStart(seconds=10)])])
    p.add_script("leave", [Step(text="unseen", faults=[SlowStart(seconds=10)])])

    async def scenario() -> tuple[list[tuple[str, bool]], str, list[tuple[str, bool]]]:
        async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
            stay = asyncio.ensure_future(_post(http, "stay", key="k-stay"))
            leave = asyncio.ensure_future(_post(http, "leave", key="k-leave"))
            for _ in range(20):
                await asyncio.sleep(0)
            waiting = [(r.outcome, r.billed) for r in p.records()]
            leave.cancel()
            await clock.advance(10)
            answer = (await stay).json()["choices"][0]["message"]["content"]
            for _ in range(20):
                await asyncio.sleep(0)
            return waiting, answer, [(r.outcome, r.billed) for r in p.records()]

    waiting, answer, after = asyncio.run(scenario())
    assert waiting == [("received", False), ("received", False)]
    assert answer == "in time"
    assert after == [("answered", True), ("lost", True)]
    assert p.fault_counts()["slow_start"] == 2
