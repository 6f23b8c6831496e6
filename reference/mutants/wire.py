"""Mutants of the wire profile: lenient bodies, crashes, error shape and headers, the OpenAPI
document.

The lenient parsers fall back only where the strict one refused, then hand the repaired value
back to the strict parser, so each lets exactly one kind of bad body through (PRO-01, BUD-05).
"""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from arck.reference.auth import Principal
from arck.reference.engine import Engine
from arck.reference.errors import ApiError, InvalidJSON, MethodNotAllowed
from arck.reference.mutants.base import serve


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _finite_or_none(text: str) -> float | None:
    value = float(text)
    return None if value in (float("inf"), float("-inf")) else value


def _scrub(text: str) -> str:
    """Lone surrogates become U+FFFD (valid pairs are single code points in a str already)."""
    return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _scrub(value)
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_scrub(k): _replace_surrogates(v) for k, v in value.items()}
    return value


class LenientEngine(Engine):
    """Retries a refused body with `lenient` and re-checks the repaired value strictly."""

    def parse_body(self, body: bytes) -> Any:
        try:
            return super().parse_body(body)
        except InvalidJSON as refused:
            try:
                repaired = json.dumps(self.lenient(body), ensure_ascii=True, allow_nan=False)
            except (ValueError, RecursionError):
                raise refused from None
            return super().parse_body(repaired.encode("ascii"))

    def lenient(self, body: bytes) -> Any:
        raise ValueError("not lenient")


class NanToNullEngine(LenientEngine):
    def lenient(self, body: bytes) -> Any:
        return json.loads(
            body,
            parse_constant=lambda _: None,
            parse_float=_finite_or_none,
            object_pairs_hook=_no_duplicates,
        )


class SurrogatesReplacedEngine(LenientEngine):
    def lenient(self, body: bytes) -> Any:
        value = json.loads(body, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicates)
        return _replace_surrogates(value)


class LastKeyWinsEngine(LenientEngine):
    def lenient(self, body: bytes) -> Any:
        return json.loads(body, parse_constant=_refuse_constant)


class ReplacingDecoderEngine(LenientEngine):
    """Decodes invalid UTF-8 with errors="replace" instead of refusing it."""

    def lenient(self, body: bytes) -> Any:
        text = body.decode("utf-8", "replace")
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicates)


class PrecheckEngine(Engine):
    """A lenient pre-check whose RecursionError (deeply nested bodies) escapes as a 500."""

    def parse_body(self, body: bytes) -> Any:
        with contextlib.suppress(ValueError):  # the strict parser judges malformed bodies
            json.loads(body)
        return super().parse_body(body)


def nan_to_null() -> FastAPI:
    return serve(NanToNullEngine())


def surrogates_replaced() -> FastAPI:
    return serve(SurrogatesReplacedEngine())


def duplicate_keys_accepted() -> FastAPI:
    return serve(LastKeyWinsEngine())


def lenient_utf8() -> FastAPI:
    return serve(ReplacingDecoderEngine())


def crash_on_corpus() -> FastAPI:
    return serve(PrecheckEngine())


def fastapi_error_shape() -> FastAPI:
    """Errors rendered as FastAPI's default `{"detail": "..."}`."""
    app = serve()

    async def detail(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return JSONResponse({"detail": exc.message}, status_code=exc.status, headers=exc.headers)

    app.add_exception_handler(ApiError, detail)
    return app


def no_allow_header() -> FastAPI:
    """The 405 for a published tool set or version, with its body but no `Allow` header."""
    app = serve()

    async def bare(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, MethodNotAllowed)
        return JSONResponse(exc.body(), status_code=exc.status)

    app.add_exception_handler(MethodNotAllowed, bare)
    return app


def unrouted_before_credentials() -> FastAPI:
    """404 and 405 from the router come before the credential is looked at."""
    app = serve()

    async def plain(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = "not_found" if exc.status_code == 404 else "method_not_allowed"
        body = {"error": {"code": code, "message": str(exc.detail), "path": ""}}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    app.add_exception_handler(StarletteHTTPException, plain)
    return app


class ValidateFirstEngine(Engine):
    """A new version's body is validated (422) before its tool set is looked up (404)."""

    def publish_version(self, principal: Principal, agent_id: str, data: object) -> Any:
        self.validate_version(data)
        return super().publish_version(principal, agent_id, data)


def version_validated_first() -> FastAPI:
    return serve(ValidateFirstEngine())


def openapi_lies() -> FastAPI:
    """The served document types `Binding.binding_id` as an integer; answers hold a string."""
    app = serve()
    truthful = app.openapi

    def lying() -> dict[str, Any]:
        doc = copy.deepcopy(truthful())
        doc["components"]["schemas"]["Binding"]["properties"]["binding_id"] = {"type": "integer"}
        return doc

    app.openapi = lying  # type: ignore[method-assign]
    return app
