"""Cached tokens: the longest token prefix shared with any earlier request, per model."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st
from providerkit import BASE, conversation, provider

from arck.simulator.provider import RateLimited, SimulatedProvider, Step
from arck.simulator.provider.cache import common_prefix


def _usages(p: SimulatedProvider, bodies: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(prompt_tokens, cached_tokens) of each request, sent in order."""

    async def scenario() -> list[tuple[int, int]]:
        found = []
        async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
            for body in bodies:
                answer = (await http.post("/chat/completions", json=body)).json()
                usage = answer.get("usage")
                found.append((usage["prompt_tokens"], usage["prompt_tokens_details"]
                              ["cached_tokens"]) if usage else (-1, -1))
        return found

    return asyncio.run(scenario())


def _body(messages: list[dict[str, Any]], model: str = "m", **rest: Any) -> dict[str, Any]:
    return {"model": model, "messages": messages, **rest}


def test_an_append_only_request_hits_the_whole_previous_prompt() -> None:
    turns = [conversation(None, *(f"turn {i}" for i in range(n))) for n in range(1, 6)]
    usages = _usages(provider(), [_body(m) for m in turns])
    assert usages[0][1] == 0
    for before, after in itertools.pairwise(usages):
        assert after[1] == before[0]


def test_a_rewritten_message_is_cached_up_to_the_first_changed_token() -> None:
    original = conversation(None, "alpha beta gamma", "next")
    rewritten = conversation(None, "alpha beta delta", "next")
    (first, _), (_, cached) = _usages(provider(), [_body(original), _body(rewritten)])
    # frame 3 + system (3 + 8) + user: <|start|> <|role:user|> alph a beta, then gamm != delt
    assert cached == 3 + 11 + 5
    assert cached < first


def test_the_cache_is_per_model() -> None:
    messages = conversation(None, "same prompt")
    (_, first), (_, other), (_, again) = _usages(
        provider(), [_body(messages, "m1"), _body(messages, "m2"), _body(messages, "m1")]
    )
    assert (first, other) == (0, 0)
    assert again > 0


def test_the_longest_match_is_over_every_earlier_request() -> None:
    a = conversation(None, "first conversation")
    b = conversation(None, "another one entirely")
    extended = [*a, {"role": "user", "content": "x"}]
    usages = _usages(provider(), [_body(a), _body(b), _body(extended)])
    assert usages[2][1] == usages[0][0]


def test_tools_are_part_of_the_prefix() -> None:
    tools = [{"type": "function", "function": {"name": "search"}}]
    messages = conversation(None, "hi")
    usages = _usages(provider(), [_body(messages), _body(messages, tools=tools)])
    assert usages[1][1] == 2  # <|request|> <|tools|>, then the tools differ


def test_a_refused_request_is_not_cached() -> None:
    p = provider()
    p.add_script("busy", [Step(faults=[RateLimited()])])
    messages = conversation("busy", "hello")
    (refused, _), (prompt, cached) = _usages(p, [_body(messages), _body(messages)])
    assert refused == -1
    assert cached == 0 < prompt


@given(st.lists(st.sampled_from("ab"), max_size=12), st.lists(st.sampled_from("ab"), max_size=12))
def test_common_prefix_counts_the_shared_leading_items(a: list[str], b: list[str]) -> None:
    shared = common_prefix(tuple(a), tuple(b))
    assert a[:shared] == b[:shared]
    assert shared == min(len(a), len(b)) or a[shared] != b[shared]
