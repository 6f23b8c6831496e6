"""The provider on a real socket: the openai client over TCP, a lost response, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageFunctionToolCall
from providerkit import conversation, provider

from arck.simulator.provider import (
    LostResponse,
    SimulatedProvider,
    Step,
    ToolCall,
    listen,
    server,
)


@pytest.fixture
def served() -> Iterator[tuple[SimulatedProvider, str]]:
    """A provider in a uvicorn thread; its socket listens before the thread starts."""
    p = provider()
    sock = listen("127.0.0.1", 0)
    uvicorn_server = server(p)
    thread = threading.Thread(target=uvicorn_server.run, kwargs={"sockets": [sock]})
    thread.start()
    try:
        yield p, f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        uvicorn_server.should_exit = True
        thread.join()
        sock.close()


def test_the_openai_client_over_a_socket(served: tuple[SimulatedProvider, str]) -> None:
    p, url = served
    p.add_script("tcp", [
        Step(tool_calls=[ToolCall(name="search", arguments={"q": "x"})]),
        Step(faults=[LostResponse()]),
        Step(text="after"),
    ])
    client = openai.OpenAI(base_url=url, api_key="test", max_retries=0)
    messages = conversation("tcp", "go")
    first = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    made = first.choices[0].message.tool_calls
    assert made is not None
    assert isinstance(made[0], ChatCompletionMessageFunctionToolCall)
    assert made[0].function.name == "search"
    assert first.usage is not None
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="m", messages=messages,  # type: ignore[arg-type]
                                       extra_headers={"Idempotency-Key": "k-tcp"})
    third = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert third.choices[0].message.content == "after"
    found = httpx.get(f"{url}/arck/requests", params={"idempotency_key": "k-tcp"}).json()
    assert [(r["outcome"], r["billed"]) for r in found["data"]] == [("lost", True)]


def test_a_lost_response_looks_the_same_to_httpx_on_a_socket_and_in_process(
    served: tuple[SimulatedProvider, str],
) -> None:
    p, url = served
    p.add_script("gone", [Step(faults=[LostResponse()]), Step(faults=[LostResponse()])])
    body = {"model": "m", "messages": conversation("gone", "go")}
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(f"{url}/chat/completions", json=body)
    with httpx.Client(transport=p.transport()) as in_process, pytest.raises(
        httpx.RemoteProtocolError
    ):
        in_process.post("http://provider/v1/chat/completions", json=body)
    assert [r.outcome for r in p.records()] == ["lost", "lost"]


def _in_process_answer(seed: int, messages: list[dict[str, object]]) -> str | None:
    with httpx.Client(transport=provider(seed=seed).transport()) as http:
        body = {"model": "m", "messages": messages}
        answer = http.post("http://provider/v1/chat/completions", json=body).json()
    content: str | None = answer["choices"][0]["message"]["content"]
    return content


@pytest.mark.timeout(120)
def test_arck_simulate_provider_serves_and_prints_its_url() -> None:
    command = [sys.executable, "-m", "arck.conformance.cli", "simulate", "provider",
               "--port", "0", "--seed", "7"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("arck simulated provider on http://127.0.0.1:"), line
        url = line.split()[4]
        client = openai.OpenAI(base_url=url, api_key="test", max_retries=0)
        messages = conversation(None, "hi")
        answer = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        assert answer.choices[0].message.content == _in_process_answer(7, messages)
        assert answer.choices[0].message.content != _in_process_answer(0, messages)
    finally:
        process.terminate()
        process.wait(timeout=60)
