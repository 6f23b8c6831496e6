"""Services that lack one area of the protocol, built from the reference engine.

A service that never implemented an area does not document it and does not route it: its
paths answer as any unknown path does (the reference's own answer, 401 without a credential,
then 404), and its OpenAPI document leaves them out. `Without` makes such a service of the
reference app, area by area, so `test_partial_services.py` can run the whole suite against
it over HTTP; `python partialkit.py --port N --lacks AREA ...` serves one.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

STREAM = "text/event-stream"
# The paths of each area (docs/runs.md and docs/executors.md, "Wire"), as regular
# expressions over the request path.
_EXECUTORS = (r"/v1/executors(/.*)?", r"/v1/executor/.*", r"/v1/tool-calls/.*")
AREAS: dict[str, tuple[str, ...]] = {
    "runs": (r"/v1/channels(/.*)?", r"/v1/wallets(/.*)?", r"/v1/sessions(/.*)?",
             r"/v1/runs/.*", r"/v1/agents/[^/]+/tool-revocations", r"/v1/test-control/.*",
             *_EXECUTORS),
    "executors": _EXECUTORS,
    "stream": (),  # the events stay, as JSON; only their SSE form is missing
    "nothing": (),  # every route: what is missing is in the target file (restart, clock)
}
ABSENT = "/v1/arck-absent"  # a prefix the reference routes nothing under


class Without:
    """An ASGI app answering as `app` does, but for the paths of area `lacks`."""

    def __init__(self, app: Any, lacks: str) -> None:
        if lacks not in AREAS:
            raise ValueError(f"unknown area {lacks!r}; known: {', '.join(AREAS)}")
        self.app, self.lacks = app, lacks
        self.paths = [re.compile(p) for p in AREAS[lacks]]

    def absent(self, path: str) -> bool:
        return any(p.fullmatch(path) for p in self.paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if self.absent(path):
            scope = {**scope, "path": ABSENT + path, "raw_path": (ABSENT + path).encode()}
        elif self.lacks == "stream" and re.fullmatch(r"/v1/runs/[^/]+/events", path):
            headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"accept"]
            scope = {**scope, "headers": [*headers, (b"accept", b"application/json")]}
        elif path == "/openapi.json":
            await self.app(scope, receive, self._documented(send))
            return
        await self.app(scope, receive, send)

    def _documented(self, send: Send) -> Send:
        """`send` for the OpenAPI document, with the area's paths left out of it."""
        start: Message = {}
        body = bytearray()

        async def filtered(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body"):
                return
            content = bytes(body)
            doc = json.loads(content) if start.get("status") == 200 else None
            if isinstance(doc, dict) and isinstance(doc.get("paths"), dict):
                doc["paths"] = {p: v for p, v in doc["paths"].items()
                                if not self.absent(re.sub(r"\{[^}]+\}", "x", p))}
                content = json.dumps(doc).encode()
            headers = [(k, v) for k, v in start.get("headers", [])
                       if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(content)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": content})

        return filtered


def build(lacks: str, provider_url: str | None, test_clock: bool) -> Without:
    """The reference engine (an in-memory store) without area `lacks`."""
    from arck.reference.app import create_app

    wiring: dict[str, Any] = {"test_clock": test_clock}
    if provider_url is not None:
        wiring["provider_url"] = provider_url
    return Without(create_app(**wiring), lacks)


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--lacks", choices=sorted(AREAS), required=True)
    parser.add_argument("--provider-url")
    parser.add_argument("--test-clock", action="store_true")
    args = parser.parse_args()
    app = build(args.lacks, args.provider_url, args.test_clock)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
