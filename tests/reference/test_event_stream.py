"""A run's events as SSE over a real socket (RUN-03, RUN-16), and the test clock of `arck serve`.

uvicorn serves the app from a thread: httpx's ASGI transport reads whole responses, so only a
socket shows that events arrive while the run is still going. Engine and provider share one
`ManualClock`, moved by `POST /v1/test-control/clock` (the `--test-clock` capability).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from servekit import Threaded

from arck.reference.app import create_app
from arck.reference.clock import DEFAULT_START, ManualClock
from arck.reference.runtime import stream
from arck.reference.runtime.changes import Changes
from arck.simulator.provider import SimulatedProvider, SlowAnswer, Step
from arck.simulator.target import HttpTarget, TargetInfo

FULL = {"Authorization": "Bearer arck-dev-full"}
STREAM = {**FULL, "Accept": "text/event-stream"}
PRICES = {"input": 2_000_000, "cached_input": 500_000, "output": 8_000_000}
CHANNEL = {"name": "main", "model": "sim-1", "input_capacity": 100_000,
           "total_capacity": 128_000, "output_capacity": 4_000, "timeout_ms": 30_000,
           "prices": PRICES}
SCHEMA = {"type": "object"}


class Served(Threaded):
    def __init__(self, *, test_clock: bool = True, **options: Any) -> None:
        self.clock = ManualClock()
        self.provider = SimulatedProvider(clock=self.clock)
        super().__init__(create_app(
            clock=self.clock if test_clock else None, test_clock=test_clock,
            provider_transport=self.provider.async_transport(), **options))

    def advance(self, seconds: float) -> float:
        now: float = self.post("/v1/test-control/clock", {"advance_seconds": seconds}, 200)["now"]
        return now




@pytest.fixture
def served() -> Iterator[Served]:
    s = Served()
    try:
        yield s
    finally:
        s.close()


def read_events(lines: Iterator[str], until: str | None = None) -> list[dict[str, Any]]:
    """SSE messages as {"id", "event", "data"} (and {"comment"}), until an event of type
    `until`, or the end of the stream."""
    found: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for line in lines:
        if line == "":
            if current:
                found.append(current)
                if current.get("event") == until:
                    return found
            current = {}
        elif line.startswith(":"):
            found.append({"comment": line[1:].strip()})
        else:
            name, _, value = line.partition(": ")
            current[name] = value
    assert until is None, f"the stream ended before {until}: {found}"
    return found


def wait_state(s: Served, run_id: str, state: str) -> None:
    deadline = time.monotonic() + 10
    while s.client.get(f"/v1/runs/{run_id}").json()["state"] != state:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_events_stream_resume_after_last_event_id_and_a_dropped_stream_cancels_nothing(
    served: Served,
) -> None:
    s = served
    s.provider.add_script("s", [Step(text="Done.", faults=[SlowAnswer(seconds=10)])])
    run_id = s.post(f"/v1/sessions/{s.session('s', CHANNEL)}/runs", {"input": "Hello"})["run_id"]
    path = f"/v1/runs/{run_id}/events"
    with s.client.stream("GET", path, headers=STREAM) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        first = read_events(response.iter_lines(), until="model_call.started")
    # The run is mid-call and the stream is dropped: the run goes on (RUN-03).
    assert [m["event"] for m in first] == ["run.created", "run.queued", "run.started",
                                           "model_call.started"]
    assert [m["id"] for m in first] == ["1", "2", "3", "4"]
    data = json.loads(first[3]["data"])
    assert (data["id"], data["type"]) == (4, "model_call.started")
    assert first[3]["data"] == json.dumps(data, sort_keys=True, separators=(",", ":"))
    assert s.client.get(f"/v1/runs/{run_id}").json()["state"] == "running"
    assert s.advance(10) == DEFAULT_START + 10
    assert s.client.get(f"/v1/runs/{run_id}").json()["end_reason"] == "completed"
    # Resume after the last id seen: the rest, ending with run.ended, then the stream closes.
    with s.client.stream("GET", path, headers={**STREAM, "Last-Event-ID": "4"}) as response:
        rest = read_events(response.iter_lines())
    assert [m["event"] for m in rest] == ["model_call.finished", "run.ended"]
    assert [m["id"] for m in rest] == ["5", "6"]
    everything = s.client.get(path).json()["events"]  # a JSON client: the JSON list
    assert [e["type"] for e in everything] == [m["event"] for m in first + rest]
    assert [json.loads(m["data"]) for m in first + rest] == everything


def test_a_stream_follows_a_live_run_with_keep_alives_on_the_clock(served: Served) -> None:
    s = served
    s.provider.add_script("s", [Step(text="Done.", faults=[SlowAnswer(seconds=20)])])
    run_id = s.post(f"/v1/sessions/{s.session('s', CHANNEL)}/runs", {"input": "Hello"})["run_id"]
    wait_state(s, run_id, "running")
    with s.client.stream("GET", f"/v1/runs/{run_id}/events",
                         headers={**STREAM, "Last-Event-ID": "2"}) as response:
        lines = response.iter_lines()
        seen = read_events(lines, until="model_call.started")
        assert [m["event"] for m in seen] == ["run.started", "model_call.started"]
        s.advance(15)  # the stream's keep-alive is due; the answer is not
        [comment] = read_events(_take_until_blank(lines))
        assert comment == {"comment": "keep-alive"}
        s.advance(5)
        rest = read_events(lines)
    assert [m["event"] for m in rest] == ["model_call.finished", "run.ended"]


def _take_until_blank(lines: Iterator[str]) -> Iterator[str]:
    for line in lines:
        yield line
        if line == "":
            return


def test_stream_errors_and_the_clock_capability(served: Served) -> None:
    s = served
    assert s.client.get("/v1/runs/run-999999/events", headers=STREAM).status_code == 404
    s.provider.add_script("s", [Step(text="Done.")])
    run_id = s.post(f"/v1/sessions/{s.session('s', CHANNEL)}/runs", {"input": "Hello"})["run_id"]
    bad = s.client.get(f"/v1/runs/{run_id}/events", headers={**STREAM, "Last-Event-ID": "x"})
    assert (bad.status_code, bad.json()["error"]["path"]) == (422, "Last-Event-ID")
    anonymous = httpx.post(f"{s.url}/v1/test-control/clock", json={"advance_seconds": 1})
    assert anonymous.status_code == 401
    for body in ({"advance_seconds": -1}, {"advance_seconds": "1"}, {}, {"advance_seconds": 1,
                                                                         "extra": 1}):
        assert s.client.post("/v1/test-control/clock", json=body).status_code == 422, body
    assert s.advance(0) == DEFAULT_START


def test_without_the_flag_there_is_no_clock_endpoint() -> None:
    s = Served(test_clock=False)
    try:
        answer = s.client.post("/v1/test-control/clock", json={"advance_seconds": 1})
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "not_found"
    finally:
        s.close()


@pytest.mark.parametrize(("flags", "message"), [
    (["--db", "/nonexistent-folder/x.sqlite3"], "does not exist"),
    (["--provider-url", "ftp://example"], "must be an http(s) URL"),
    (["--provider-url", "http://127.0.0.1:99999/v1"], "Port out of range"),
    (["--port", "0"], "--port must be 1..65535"),
    (["--lease-seconds", "0"], "--lease-seconds must be"),
    (["--executor-secret", "too short"], "must have at least 16 characters"),
])
def test_serve_flags_are_checked_with_clear_errors(flags: list[str], message: str) -> None:
    from typer.testing import CliRunner

    from arck.conformance.cli import app

    done = CliRunner().invoke(app, ["serve", *flags])
    assert done.exit_code == 2
    assert message in " ".join(done.output.split())
    assert "Traceback" not in done.output


def test_serve_test_clock_over_http(tmp_path: Any) -> None:
    import socket
    import subprocess
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "arck.conformance.cli", "serve", "--port", str(port), "--db",
         str(tmp_path / "db.sqlite3"), "--test-clock"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/v1/test-control/clock"
        deadline = time.monotonic() + 30
        while True:
            try:
                answer = httpx.post(url, json={"advance_seconds": 2.5}, headers=FULL)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert (answer.status_code, answer.json()) == (200, {"now": DEFAULT_START + 2.5})
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.parametrize("woken", [True, False], ids=["reference", "stream-polls-only"])
def test_watch_event_stream_over_a_socket(woken: bool) -> None:
    """The target step `watch_event_stream` over a URL: a reader thread holds the stream
    while `during` moves the test clock and the run completes. The reference's stream sends
    the events as they are stored, through run.ended; one woken only at its keep-alive tick
    (15 s, never reached) sends nothing more, and the step gives up at the read timeout."""
    def polling(runtime: Any, principal: Any, run_id: str, after: int) -> Any:
        return stream.sse(runtime.runs, run_id, after, runtime.clock, Changes())

    s = Served() if woken else Served(event_stream=polling)
    try:
        s.provider.add_script("s", [Step(text="Done.", faults=[SlowAnswer(seconds=10)])])
        session_id = s.session("s", CHANNEL)
        run_id = s.post(f"/v1/sessions/{session_id}/runs", {"input": "Hello"})["run_id"]
        wait_state(s, run_id, "running")
        stored = len(s.client.get(f"/v1/runs/{run_id}/events").json()["events"])
        # The read timeout bounds each wait: long where the events must come (a busy machine
        # may be slow to send them), short where they never will.
        target = HttpTarget(httpx.Client(base_url=s.url, timeout=20 if woken else 2),
                            TargetInfo("t", "url", s.url, "reference"),
                            {"full": "arck-dev-full"})
        moved: list[float] = []
        exchange = target.watch_event_stream(run_id, stored, lambda: moved.append(
            s.advance(10)))
        target.close()
        assert moved == [DEFAULT_START + 10]
        assert exchange.status == 200
        events = [m["event"] for m in read_events(iter(exchange.body.decode().split("\n")))]
        assert events[:stored] == ["run.created", "run.queued", "run.started",
                                   "model_call.started"][:stored]
        assert (events[-2:] == ["model_call.finished", "run.ended"]) is woken
    finally:
        s.close()
