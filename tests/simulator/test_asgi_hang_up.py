"""SyncASGITransport.hang_up: read a streaming answer in-process until enough, then drop it
the way a client's closed socket does (RUN-03's target step), and never hang."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from arck.simulator.asgi import SyncASGITransport
from arck.simulator.clock import until_idle
from arck.simulator.target import first_event_read, read_through

pytestmark = pytest.mark.timeout(20)


class App:
    """Streams one SSE event, then waits for ever, as a run's stream does while it is active;
    records what became of its generator."""

    def __init__(self) -> None:
        self.closed = False
        self.sent = 0
        self.returned = False
        self.app = Starlette(routes=[
            Route("/events", self.events), Route("/silent", self.silent),
            Route("/json", self.json), Route("/stuck", self.stuck),
            Route("/live", self.live), Route("/poke", self.poke, methods=["POST"]),
        ])
        self.poked = asyncio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)
        self.returned = True  # not cancelled by the harness: the app ended the answer itself

    async def stream(self, *chunks: bytes) -> AsyncIterator[bytes]:
        try:
            for chunk in chunks:
                yield chunk
                self.sent += 1
            await asyncio.Event().wait()  # nothing more while time stands still
        finally:
            self.closed = True

    async def events(self, request: Request) -> Response:
        # The second event is sent at once after the first: lost, the client is gone.
        return StreamingResponse(self.stream(b": hello\n\nid: 1\nevent: a\ndata: {}\n\n",
                                             b"id: 2\nevent: b\ndata: {}\n\n"),
                                 media_type="text/event-stream")

    async def silent(self, request: Request) -> Response:
        return StreamingResponse(self.stream(b"", b": keep-alive\n\n"),
                                 media_type="text/event-stream")

    async def json(self, request: Request) -> Response:
        return JSONResponse({"events": []})

    async def live(self, request: Request) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            yield b"id: 1\nevent: a\ndata: {}\n\n"
            await self.poked.wait()
            yield b"id: 2\nevent: b\ndata: {}\n\n"

        return StreamingResponse(chunks(), media_type="text/event-stream")

    async def poke(self, request: Request) -> Response:
        self.poked.set()
        return JSONResponse({})

    async def stuck(self, request: Request) -> Response:
        await asyncio.Event().wait()  # deaf to the disconnect, never answers
        raise AssertionError("unreachable")


@pytest.fixture
def served() -> Iterator[tuple[App, SyncASGITransport, list[str]]]:
    app, after = App(), []

    async def idle() -> None:
        await until_idle()
        after.append("after")

    transport = SyncASGITransport(app, after=idle)
    try:
        yield app, transport, after
    finally:
        transport.close()


def _get(path: str) -> httpx.Request:
    return httpx.Request("GET", f"http://app.invalid{path}",
                         headers={"Accept": "text/event-stream"})


def test_drops_after_the_first_event_and_the_stream_is_closed(
    served: tuple[App, SyncASGITransport, list[str]],
) -> None:
    app, transport, after = served
    response = transport.hang_up(_get("/events"), first_event_read)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    # The comment alone is no event; what came after the hang-up is not in the answer.
    assert response.content == b": hello\n\nid: 1\nevent: a\ndata: {}\n\n"
    assert app.sent == 2
    assert app.closed  # starlette saw http.disconnect and cancelled the stream,
    assert app.returned  # and the app's call returned: the harness cancelled nothing
    assert after == ["after"]
    # The transport still answers ordinary requests in the same loop.
    assert transport.handle_request(httpx.Request("GET", "http://app.invalid/json")
                                    ).json() == {"events": []}


def test_a_stream_that_sends_nothing_is_dropped_when_the_app_goes_idle(
    served: tuple[App, SyncASGITransport, list[str]],
) -> None:
    app, transport, _ = served
    response = transport.hang_up(_get("/silent"), first_event_read)
    assert response.status_code == 200
    assert app.sent == 2  # no event among them: read on until the app waited
    assert response.content == b": keep-alive\n\n"
    assert app.closed


def test_an_answer_that_is_no_stream_is_read_whole(
    served: tuple[App, SyncASGITransport, list[str]],
) -> None:
    _, transport, _ = served
    response = transport.hang_up(_get("/json"), first_event_read)
    assert (response.status_code, response.json()) == (200, {"events": []})


def test_no_answer_at_all_is_a_read_timeout_not_a_hang(
    served: tuple[App, SyncASGITransport, list[str]],
) -> None:
    app, transport, after = served
    with pytest.raises(httpx.ReadTimeout):
        transport.hang_up(_get("/stuck"), first_event_read)
    assert not app.returned  # its task was cancelled, and the loop went on
    assert after == ["after"]


@pytest.mark.parametrize(("chunk", "read"), [
    (b"", False), (b": keep-alive\n\n", False), (b"id: 1\nevent: a\ndata: {}", False),
    (b"id: 1\nevent: a\ndata: {}\n\n", True), (b"data: x\r\n\r\n", True),
    (b": c\n\ndata: x\n\n", True),
])
def test_first_event_read(chunk: bytes, read: bool) -> None:
    sse = [(b"content-type", b"text/event-stream; charset=utf-8")]
    assert first_event_read(sse, chunk) is read
    assert first_event_read([(b"content-type", b"application/json")], b"{") is True


@pytest.mark.parametrize("poke", [True, False])
def test_during_runs_with_the_answer_open_and_what_it_causes_is_read(
    served: tuple[App, SyncASGITransport, list[str]], poke: bool,
) -> None:
    """`during` runs once the app is idle, its requests answered by the same loop while the
    stream stays open; what they make the stream send is read, then the app is idle again."""
    _, transport, _ = served
    answers: list[int] = []

    def during() -> None:
        if poke:
            answers.append(transport.handle_request(
                httpx.Request("POST", "http://app.invalid/poke")).status_code)

    response = transport.hang_up(_get("/live"), read_through(None), during)
    first, second = b"id: 1\nevent: a\ndata: {}\n\n", b"id: 2\nevent: b\ndata: {}\n\n"
    assert response.content == (first + second if poke else first)
    assert answers == ([200] if poke else [])
