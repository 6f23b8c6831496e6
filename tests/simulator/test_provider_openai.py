"""The provider through the official openai client, in-process: the shapes are the real ones."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import httpx
import openai
import pytest
from providerkit import BASE, START, async_openai, conversation, provider

from arck.simulator.provider import (
    REQUEST_APPROVAL,
    REQUEST_INPUT,
    ContextLengthExceeded,
    LostResponse,
    RateLimited,
    ServerError,
    SimulatedProvider,
    Step,
    ToolCall,
    UsageDrift,
    UsageMissing,
)

TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}
]


def _create(p: SimulatedProvider, messages: list[dict[str, Any]], **options: Any) -> Any:
    async def scenario() -> Any:
        return await async_openai(p).chat.completions.create(
            model="sim-1", messages=messages, **options  # type: ignore[arg-type]
        )

    return asyncio.run(scenario())


def _fails(p: SimulatedProvider, messages: list[dict[str, Any]], **options: Any) -> Any:
    with pytest.raises(openai.OpenAIError) as caught:
        _create(p, messages, **options)
    return caught.value


def test_a_text_answer_has_the_chat_completion_shape() -> None:
    p = provider()
    p.add_script("hello", [Step(text="Hello there, friend.")])

    async def scenario() -> Any:
        raw = await async_openai(p).chat.completions.with_raw_response.create(
            model="sim-1", messages=conversation("hello", "hi")  # type: ignore[arg-type]
        )
        return raw.headers, raw.parse()

    headers, completion = asyncio.run(scenario())
    assert completion.id == headers["x-request-id"] == "chatcmpl-arck-000001"
    assert completion.object == "chat.completion"
    assert completion.created == int(START)
    assert completion.model == "sim-1"
    choice = completion.choices[0]
    assert (choice.message.role, choice.message.content) == ("assistant", "Hello there, friend.")
    assert choice.finish_reason == "stop"
    usage = completion.usage
    assert usage is not None
    assert usage.prompt_tokens_details is not None
    # frame 3; system 3 + "You are a care ful agen t . [ arck - scri pt : hell o ]" 17; user 3 + 1
    assert usage.prompt_tokens == 27
    assert usage.completion_tokens == 8  # Hell o ther e , frie nd .
    assert usage.total_tokens == 35
    assert usage.prompt_tokens_details.cached_tokens == 0


def test_tool_calls_round_trip_through_the_client() -> None:
    p = provider()
    calls = [ToolCall(name="search", arguments={"q": "paris"}), ToolCall(name="search",
                                                                         arguments='{"q":1}')]
    p.add_script("tools", [Step(text="Looking.", tool_calls=calls), Step(text="Done.")])
    messages = conversation("tools", "find paris")
    first = _create(p, messages, tools=TOOLS)
    assert first.choices[0].finish_reason == "tool_calls"
    made = first.choices[0].message.tool_calls
    assert [(c.id, c.function.name, c.function.arguments) for c in made] == [
        ("call_000001_0", "search", '{"q":"paris"}'),
        ("call_000001_1", "search", '{"q":1}'),
    ]
    assert first.choices[0].message.content == "Looking."
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages += [{"role": "tool", "tool_call_id": c.id, "content": "found"} for c in made]
    second = _create(p, messages, tools=TOOLS)
    assert second.choices[0].message.content == "Done."


@pytest.mark.parametrize(
    ("step", "name", "arguments"),
    [
        (Step(request_input="Which city?"), REQUEST_INPUT, {"question": "Which city?"}),
        (Step(request_approval="Pay 5 EUR"), REQUEST_APPROVAL, {"request": "Pay 5 EUR"}),
    ],
)
def test_requests_for_input_and_approval_are_reserved_calls(
    step: Step, name: str, arguments: dict[str, str]
) -> None:
    p = provider()
    p.add_script("ask", [step])
    message = _create(p, conversation("ask", "go")).choices[0].message
    assert len(message.tool_calls) == 1
    assert message.tool_calls[0].function.name == name
    assert json.loads(message.tool_calls[0].function.arguments) == arguments


def test_no_script_and_past_the_end_get_the_seeded_plain_answer() -> None:
    p = provider(seed=5)
    p.add_script("short", [Step(text="only")])
    untagged = _create(p, conversation(None, "hi")).choices[0].message.content
    assert _create(p, conversation("short", "a")).choices[0].message.content == "only"
    past = _create(p, conversation("short", "a", "b")).choices[0].message.content
    again = provider(seed=5)
    assert _create(again, conversation(None, "hi")).choices[0].message.content == untagged
    assert untagged
    assert past
    assert past != "only"
    other_seed = [_create(provider(seed=s), conversation(None, "hi")) for s in range(6, 9)]
    assert any(c.choices[0].message.content != untagged for c in other_seed)
    assert [r.step for r in p.records()] == [None, 0, 1]


def test_max_tokens_cuts_the_answer() -> None:
    p = provider()
    p.add_script("long", [Step(text="conformance checks"), Step(tool_calls=[
        ToolCall(name="search", arguments={"query": "weather"})])])
    cut = _create(p, conversation("long", "x"), max_completion_tokens=4)
    # conf orma nce chec | ks
    assert (cut.choices[0].message.content, cut.choices[0].finish_reason) == (
        "conformance chec", "length"
    )
    assert cut.usage.completion_tokens == 4
    calls = _create(p, conversation("long", "x", "y"), max_tokens=9).choices[0]
    # 3 overhead + sear ch, then 4 tokens of {"query":"weather"}: { " quer y
    assert calls.message.tool_calls[0].function.arguments == '{"query'
    assert calls.finish_reason == "length"


def test_rate_limit() -> None:
    p = provider()
    p.add_script("busy", [Step(faults=[RateLimited(retry_after=20)])])
    error = _fails(p, conversation("busy", "x"))
    assert isinstance(error, openai.RateLimitError)
    assert (error.code, error.type, error.param) == ("rate_limit_exceeded", "requests", None)
    assert error.response.headers["retry-after"] == "20"
    assert error.request_id == "chatcmpl-arck-000001"


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors(status: Literal[500, 502, 503]) -> None:
    p = provider()
    p.add_script("down", [Step(faults=[ServerError(status=status)])])
    error = _fails(p, conversation("down", "x"))
    assert isinstance(error, openai.InternalServerError)
    assert (error.status_code, error.type) == (status, "server_error")


def test_context_length_exceeded_explicit_and_by_window() -> None:
    p = provider(context_windows={"sim-1": 30})
    p.add_script("full", [Step(faults=[ContextLengthExceeded()])])
    for messages in (conversation("full", "x"), conversation(None, "a much longer turn " * 3)):
        error = _fails(p, messages)
        assert isinstance(error, openai.BadRequestError)
        assert (error.code, error.param) == ("context_length_exceeded", "messages")
    fits = _create(p, conversation(None, "hi"), max_tokens=12)
    assert fits.usage.prompt_tokens == 18  # 3 + (3 + "You are a care ful agen t .") + (3 + 1)
    assert _fails(p, conversation(None, "hi"), max_tokens=13).code == "context_length_exceeded"


def test_a_lost_response_is_a_connection_error() -> None:
    p = provider()
    p.add_script("lost", [Step(faults=[LostResponse()])])
    error = _fails(p, conversation("lost", "x"))
    assert type(error) is openai.APIConnectionError
    assert isinstance(error.__cause__, httpx.RemoteProtocolError)


def test_usage_drift_and_missing_usage() -> None:
    p = provider()
    p.add_script("drift", [
        Step(faults=[UsageDrift(factor=1.5)]),
        Step(faults=[UsageDrift(factor=0.5, offset=-3)]),
        Step(faults=[UsageMissing()]),
    ])
    messages = conversation("drift", "x")
    reported = []
    for _ in range(3):
        completion = _create(p, messages)
        reported.append(completion.usage)
        messages += [completion.choices[0].message.model_dump(exclude_none=True),
                     {"role": "user", "content": "more"}]
    true = [r.true_usage["prompt_tokens"] for r in p.records() if r.true_usage]
    assert reported[0].prompt_tokens == round(true[0] * 1.5)
    assert reported[1].prompt_tokens == round(true[1] * 0.5) - 3
    assert reported[1].prompt_tokens_details.cached_tokens <= reported[1].prompt_tokens
    assert reported[2] is None


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}, "stream"),
        ({"messages": [{"role": "user", "content": "x"}]}, "model"),
        ({"model": "m", "messages": []}, "messages"),
        ({"model": "m", "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        ({"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": "x"}]},
         "messages[0].tool_call_id"),
        ({"model": "m", "messages": [
            {"role": "assistant", "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "user", "content": "x"}]}, "messages[1].role"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 0},
         "max_tokens"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "x"}]},
         "tools[0].type"),
    ],
)
def test_invalid_requests_are_refused_naming_the_field(body: dict[str, Any], param: str) -> None:
    p = provider()

    async def scenario() -> httpx.Response:
        async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
            return await http.post("/chat/completions", json=body)

    answer = asyncio.run(scenario())
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == param
    assert error["type"] == "invalid_request_error"
    assert set(error) == {"message", "type", "param", "code"}


def test_the_sync_client_through_the_provider_transport() -> None:
    p = provider()
    p.add_script("sync", [Step(text="fine"), Step(faults=[LostResponse()])])
    with httpx.Client(transport=p.transport()) as http:
        client = openai.OpenAI(
            base_url=BASE, api_key="test", max_retries=0, http_client=http  # type: ignore[arg-type]
        )
        messages: Any = conversation("sync", "x")
        answer = client.chat.completions.create(model="m", messages=messages)
        assert answer.choices[0].message.content == "fine"
        with pytest.raises(openai.APIConnectionError):
            client.chat.completions.create(model="m", messages=messages)


def test_same_script_and_requests_give_byte_identical_answers() -> None:
    def exchange() -> list[tuple[int, str, bytes]]:
        p = provider(seed=3)
        p.add_script("same", [Step(tool_calls=[ToolCall(name="search")]),
                              Step(faults=[UsageDrift(offset=7)])])

        async def scenario() -> list[tuple[int, str, bytes]]:
            seen = []
            async with httpx.AsyncClient(transport=p.async_transport(), base_url=BASE) as http:
                for turns in (("a",), ("a", "b"), ("c",)):
                    for script in ("same", None):
                        body = {"model": "m", "messages": conversation(script, *turns)}
                        answer = await http.post("/chat/completions", json=body)
                        seen.append((answer.status_code, answer.headers["x-request-id"],
                                     answer.content))
            return seen

        return asyncio.run(scenario())

    first = exchange()
    assert first == exchange()
    assert len({content for _, _, content in first}) == len(first)
