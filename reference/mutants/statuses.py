"""Mutants of the profile's success statuses (PRO-03): a claim answered 200 where the wire
table says 201 (every client that asks "did it work?" is content), a served document that
lists 202 for a claim while the answer stays 201, and one that leaves the run events'
`text/event-stream` out of their 200."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, Response

from arck.reference.mutants.base import serve


def claims_answered_200() -> FastAPI:
    app = serve()

    async def middleware(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        if (request.method == "POST" and request.url.path.endswith("/claims")
                and response.status_code == 201):
            response.status_code = 200
        return response

    app.middleware("http")(middleware)
    return app


def _documented(edit: Callable[[dict[str, Any]], None]) -> FastAPI:
    """The reference app whose served document is changed by `edit` (the answers are not)."""
    app = serve()
    built = app.openapi

    def openapi() -> dict[str, Any]:
        doc = built()
        edit(doc)
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _claim_as_202(doc: dict[str, Any]) -> None:
    responses = doc["paths"]["/v1/tool-calls/{call_id}/claims"]["post"]["responses"]
    if "201" in responses:
        responses["202"] = responses.pop("201")


def _stream_left_out(doc: dict[str, Any]) -> None:
    answer = doc["paths"]["/v1/runs/{run_id}/events"]["get"]["responses"].get("200", {})
    answer.get("content", {}).pop("text/event-stream", None)


def _input_400_left_out(doc: dict[str, Any]) -> None:
    doc["paths"]["/v1/runs/{run_id}/input"]["post"]["responses"].pop("400", None)


def claim_documented_202() -> FastAPI:
    return _documented(_claim_as_202)


def stream_undocumented() -> FastAPI:
    return _documented(_stream_left_out)


def input_400_undocumented() -> FastAPI:
    return _documented(_input_400_left_out)
