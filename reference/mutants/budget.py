"""Mutants that measure wrongly or decide wrongly whether to project (BUD-01/02/04/06/07).

Each is a real-world way to get sizes wrong: characters for bytes, `\\uXXXX` escapes, a fast
serializer, pretty separators, the receipt envelope, tokens for bytes, an off-by-one. The size
seam is `Projector.sized_text` (which `measure` follows); the preview text stays canonical.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.canonical import canonical_text, measure
from arck.reference.engine import Engine
from arck.reference.models import DryRunRequest, DryRunResponse
from arck.reference.mutants.base import serve
from arck.reference.projection import Preview, Projector

TOKEN_BYTES = 4  # the usual "one token is about four bytes" estimate


class CharsProjector(Projector):
    def sized_text(self, value: Any) -> tuple[str, int]:
        text = canonical_text(value)
        return text, len(text)


class AsciiEscapedProjector(Projector):
    def sized_text(self, value: Any) -> tuple[str, int]:
        text = json.dumps(
            value, ensure_ascii=True, sort_keys=True, separators=(",", ":"), allow_nan=False
        )
        return canonical_text(value), len(text)


class OrjsonProjector(Projector):
    def sized_text(self, value: Any) -> tuple[str, int]:
        try:
            size = len(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
        except orjson.JSONEncodeError:  # integers beyond 64 bits: the careful fallback
            size = measure(value)
        return canonical_text(value), size


class SpacedProjector(Projector):
    def sized_text(self, value: Any) -> tuple[str, int]:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
        return canonical_text(value), len(text.encode("utf-8"))


class TokenProjector(Projector):
    def project(self, result: Any, budget: int) -> Preview:
        return super().project(result, budget * TOKEN_BYTES)


class OffByOneProjector(Projector):
    def project(self, result: Any, budget: int) -> Preview:
        return super().project(result, budget - 1)


class NeverProjector(Projector):
    def project(self, result: Any, budget: int) -> Preview:
        size = self.measure(result)
        return Preview(result, size, size, False)


class EnvelopeEngine(Engine):
    """Reports the size of the whole mock receipt (receipt_id, kind, result) as original_bytes."""

    def dry_run(self, principal: Principal, request: DryRunRequest) -> DryRunResponse:
        response = super().dry_run(principal, request)
        preview = response.context_preview
        if preview is None:
            return response
        receipt = next(r for r in request.mock_receipts if r.kind == "completed")
        envelope = measure(receipt.model_dump(mode="python"))
        return DryRunResponse(
            context_preview=preview.model_copy(update={"original_bytes": envelope})
        )


def chars_not_bytes() -> FastAPI:
    return serve(projector=CharsProjector())


def ensure_ascii_sizes() -> FastAPI:
    return serve(projector=AsciiEscapedProjector())


def orjson_sizes() -> FastAPI:
    return serve(projector=OrjsonProjector())


def spaced_json_sizes() -> FastAPI:
    return serve(projector=SpacedProjector())


def token_budget() -> FastAPI:
    return serve(projector=TokenProjector())


def truncate_at_budget() -> FastAPI:
    return serve(projector=OffByOneProjector())


def never_project() -> FastAPI:
    return serve(projector=NeverProjector())


def envelope_measured() -> FastAPI:
    return serve(EnvelopeEngine())
