"""The recording: every body byte for byte, kept as diffs that grow with what is appended."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import httpx
from providerkit import BASE, conversation, provider

from arck.simulator.provider import SimulatedProvider


def _send(p: SimulatedProvider, bodies: list[bytes], **headers: str) -> list[httpx.Response]:
    async def scenario() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
            return [
                await http.post("/chat/completions", content=body,
                                headers={"content-type": "application/json", **headers})
                for body in bodies
            ]

    return asyncio.run(scenario())


def _growing(script: str | None, turns: int, spelling: dict[str, Any]) -> list[bytes]:
    """A conversation's requests, each the previous plus one turn, JSON spelled as given."""
    bodies = []
    for n in range(1, turns + 1):
        messages = conversation(script, *(f"turn {i}: " + "é…" * (i % 5) for i in range(n)))
        bodies.append(json.dumps({"model": "m", "messages": messages}, **spelling).encode())
    return bodies


def test_bodies_are_rebuilt_byte_for_byte() -> None:
    a = _growing("a", 6, {"indent": 2})
    b = _growing(None, 6, {"ensure_ascii": False, "separators": (",", ":")})
    odd = [b'{"model": "m", "messages": [], "junk"', b"\xff not utf-8"]
    sent = [x for pair in zip(a, b, strict=True) for x in pair] + odd
    p = provider()
    p.add_script("a", [])
    _send(p, sent)
    recorded = p.recorded()
    assert [r.body for r in recorded] == sent
    assert [p.recorded_request(r.id).body for r in recorded] == sent  # type: ignore[union-attr]
    assert [r.conversation for r in recorded[:4]] == ["a", None, "a", None]
    # one conversation's requests alone: the same records, only its bodies rebuilt
    assert p.recorded("a") == [r for r in recorded if r.conversation == "a"]
    assert [r.body for r in p.recorded("a")] == a
    assert p.recorded("nobody") == []


def test_memory_grows_with_what_is_appended_not_with_history_squared() -> None:
    bodies = _growing(None, 150, {})
    p = provider()
    _send(p, bodies)
    appended = len(bodies[0]) + sum(len(b) - len(a) for a, b in itertools.pairwise(bodies))
    assert p.recorded_bytes == appended
    assert sum(len(b) for b in bodies) > 40 * appended
    assert [r.body for r in p.recorded()] == bodies


def test_messages_common_counts_the_unchanged_leading_messages() -> None:
    first = conversation(None, "one", "two")
    appended = [*first, {"role": "user", "content": "three"}]
    rewritten = [first[0], {"role": "user", "content": "ONE"}, *appended[2:]]
    bodies = [json.dumps({"model": "m", "messages": m}).encode()
              for m in (first, appended, rewritten)]
    p = provider()
    _send(p, bodies)
    assert [r.messages_common for r in p.recorded()] == [None, 3, 1]


def test_headers_are_kept_and_credentials_redacted() -> None:
    p = provider()
    _send(p, _growing(None, 1, {}), authorization="Bearer sk-secret", x_trace="t-1")
    headers = dict(p.recorded()[0].headers)
    assert headers["authorization"] == "[redacted]"
    assert headers["x_trace"] == "t-1"


def test_the_http_endpoint_serves_the_exact_bytes() -> None:
    p = provider()
    bodies = _growing(None, 3, {"indent": 1})
    ids = [r.headers["x-request-id"] for r in _send(p, bodies)]

    async def scenario() -> list[bytes]:
        async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
            return [(await http.get(f"/arck/requests/{i}/body")).content for i in ids]

    assert asyncio.run(scenario()) == bodies
