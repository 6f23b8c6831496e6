"""`arck simulate provider --script FILE`: a provider started outside Python, scripted from a
file, drives an agent framework's tool loop (openai-agents over a socket); a file that does not
validate is refused naming its line and field, and nothing is served."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from arck.simulator.clock import VirtualClock
from arck.simulator.provider import SimulatedProvider
from arck.simulator.provider.scriptfile import ScriptFileError, load_script_file

SCRIPT = """\
scripts:
  refund-1:
    - tool_calls: [{name: lookup_order, arguments: {id: A-7}}]
    - text: Refunded.
models:
  sim-1:
    - tool_calls: [{name: get_weather, arguments: {city: Paris}}]
    - text: It is sunny in Paris.
context_windows:
  sim-small: 400
"""


def _file(tmp_path: Path, text: str, name: str = "script.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_file_registers_scripts_model_scripts_and_windows(tmp_path: Path) -> None:
    provider = SimulatedProvider(clock=VirtualClock())
    loaded = load_script_file(_file(tmp_path, SCRIPT))
    loaded.install(provider)
    client = httpx.Client(transport=provider.transport(), base_url="http://provider/v1")
    ask = {"model": "sim-1", "messages": [{"role": "user", "content": "Weather?"}],
           "tools": [{"type": "function", "function": {"name": "get_weather"}}]}
    first = client.post("/chat/completions", json=ask).json()["choices"][0]["message"]
    assert first["tool_calls"][0]["function"] == {"name": "get_weather",
                                                  "arguments": '{"city":"Paris"}'}
    tagged = {"model": "other", "messages": [
        {"role": "system", "content": "Refunds. [arck-script:refund-1]"},
        {"role": "user", "content": "Refund A-7"}]}
    answer = client.post("/chat/completions", json=tagged).json()["choices"][0]["message"]
    assert answer["tool_calls"][0]["function"]["name"] == "lookup_order"
    small = {"model": "sim-small", "max_tokens": 500,
             "messages": [{"role": "user", "content": "hi"}]}
    refused = client.post("/chat/completions", json=small)
    assert (refused.status_code, refused.json()["error"]["code"]) == (
        400, "context_length_exceeded")
    client.close()


def test_json_is_a_script_file_too(tmp_path: Path) -> None:
    text = json.dumps({"models": {"m": [{"text": "hello"}]}})
    assert load_script_file(_file(tmp_path, text, "script.json")).models["m"][0].text == "hello"


@pytest.mark.parametrize(("bad", "message"), [
    ("    - text: Refunded.\n", None),
    ("    - {text: Refunded., faults: [{kind: slow, seconds: 0}]}\n",
     ":4: scripts.refund-1[1].faults[0].seconds: Input should be greater than 0"),
    ("    - {text: Refunded., side_effect: boom}\n",
     ":4: scripts.refund-1[1].side_effect: must be an exception"),
    ("    - {request_approval: Refund, request_input: Which order}\n",
     ":4: scripts.refund-1[1]: "),
])
def test_errors_name_the_file_line_and_field(tmp_path: Path, bad: str,
                                             message: str | None) -> None:
    text = SCRIPT.replace("    - text: Refunded.\n", bad)
    path = _file(tmp_path, text)
    if message is None:
        load_script_file(path)
        return
    with pytest.raises(ScriptFileError) as raised:
        load_script_file(path)
    assert str(raised.value).startswith(f"{path}{message}"), str(raised.value)


@pytest.mark.parametrize(("text", "message"), [
    ("scripts: {bad name: []}\n", "scripts.bad name"),
    ("script: {}\n", ":1: script: Extra inputs are not permitted"),
    ("- text: hi\n", ": a script file is a YAML mapping"),
    ("scripts: {a: [}\n", ":1: not valid YAML"),
    ("context_windows: {m: 0}\n", ":1: context_windows.m: Input should be greater than"),
    ("models: {m: []}\nmodels: {n: []}\n", ":2: models: given twice"),
])
def test_malformed_files_are_refused(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ScriptFileError) as raised:
        load_script_file(_file(tmp_path, text))
    assert message in str(raised.value), str(raised.value)


def test_the_cli_refuses_a_bad_file_with_exit_2(tmp_path: Path) -> None:
    path = _file(tmp_path, "models: {m: [{faults: [{kind: slow}]}]}\n")
    done = subprocess.run([sys.executable, "-m", "arck.conformance.cli", "simulate",
                           "provider", "--port", "0", "--script", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join(done.stdout.split())  # the console wraps long lines
    assert f"{path}:1: models.m[0].faults[0].seconds: Field required" in said, said


@pytest.mark.timeout(120)
def test_an_agent_framework_runs_its_tool_loop_against_the_scripted_provider(
    tmp_path: Path,
) -> None:
    """openai-agents (chat completions, its default non-streaming path) asks, the script
    answers with a tool call, the framework runs the tool and sends its result, the script
    answers the final text; the provider's lookups show both calls of the conversation."""
    path = _file(tmp_path, SCRIPT)
    process = subprocess.Popen(
        [sys.executable, "-m", "arck.conformance.cli", "simulate", "provider", "--port", "0",
         "--script", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("arck simulated provider on http://127.0.0.1:"), line
        assert "1 script(s), 1 model script(s)" in line, line
        url = line.split()[4]
        set_tracing_disabled(True)
        asked: list[str] = []

        @function_tool
        def get_weather(city: str) -> str:
            """The weather in a city."""
            asked.append(city)
            return f"sunny in {city}"

        client = AsyncOpenAI(base_url=url, api_key="unused", max_retries=0)
        agent = Agent(name="weather", instructions="You answer about the weather.",
                      model=OpenAIChatCompletionsModel(model="sim-1", openai_client=client),
                      tools=[get_weather])
        result = Runner.run_sync(agent, "What is the weather in Paris?")
        assert asked == ["Paris"]
        assert result.final_output == "It is sunny in Paris."
        records = httpx.get(f"{url}/arck/requests").json()["data"]
        assert [(r["conversation"], r["step"], r["outcome"]) for r in records] == [
            ("model:sim-1", 0, "answered"), ("model:sim-1", 1, "answered")]
        second = httpx.get(f"{url}/arck/requests/{records[1]['id']}/body").json()
        assert second["messages"][-1]["role"] == "tool"
        assert "sunny in Paris" in second["messages"][-1]["content"]
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_the_documented_file_validates(tmp_path: Path) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "provider.md").read_text()
    section = doc[doc.index("### Script files"):]
    start = section.index("```yaml\n") + len("```yaml\n")
    loaded = load_script_file(_file(tmp_path, section[start:section.index("```\n", start)]))
    assert set(loaded.scripts) == {"refund-1"}
    assert set(loaded.models) == {"sim-1"}
