"""Reading a target's answers the way every check must: strictly, and failing with context."""

from __future__ import annotations

import json
import re
from typing import Any

from arck.conformance import oracle
from arck.conformance.errors import CheckFailure
from arck.simulator.target import Exchange

PREVIEW_KEYS = {
    "max_result_context_bytes", "original_bytes", "retained_bytes", "truncated", "result"
}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate object key among {sorted(keys)[:5]!r}")
    return dict(pairs)


def strict_json(body: bytes) -> Any:
    """Parse an answer as strict JSON: UTF-8, no NaN/Infinity, no duplicate keys or surrogates."""
    text = body.decode("utf-8")  # raises on invalid UTF-8 (a cut inside a sequence)
    value = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicates)
    problems = oracle.unicode_problems(value)
    if problems:
        raise ValueError("; ".join(problems[:3]))
    return value


def answer(exchange: Exchange, requirement: str | tuple[str, ...], example: Any = None) -> Any:
    """The strictly parsed JSON body of a successful answer, or a failure saying why not."""
    if not 200 <= exchange.status < 300:
        raise CheckFailure(
            requirement,
            "a successful (2xx) answer",
            exchange.describe(),
            example=example,
            hint=f"Reproduce: {exchange.as_curl()}",
        )
    try:
        return strict_json(exchange.body)
    except ValueError as exc:
        raise CheckFailure(
            requirement,
            "an answer that is valid UTF-8 and strict JSON",
            f"{exc} in {exchange.describe()}",
            example=example,
        ) from None


def context_preview(exchange: Exchange, requirement: str | tuple[str, ...]) -> dict[str, Any]:
    """The non-null `context_preview` of a dry-run answer, checked for its DRY-01 shape."""
    data = answer(exchange, requirement)
    preview = data.get("context_preview") if isinstance(data, dict) else None
    if not isinstance(preview, dict) or not preview.keys() >= PREVIEW_KEYS:
        raise CheckFailure(
            requirement,
            f"a context_preview object holding {sorted(PREVIEW_KEYS)}",
            f"{exchange.describe()}",
        )
    return preview


def refused(exchange: Exchange) -> bool:
    """'Refused' in SPEC.md's sense, over HTTP: a 4xx answer."""
    return 400 <= exchange.status < 500


def names(exchange: Exchange, field: str) -> bool:
    """Whether an error answer names a field or path (anywhere in its body)."""
    text = exchange.body.decode("utf-8", "replace")
    return field in text


def error_shape_problem(exchange: Exchange) -> str | None:
    """What is wrong with an error body against PRO-03, or None."""
    try:
        data = strict_json(exchange.body)
    except ValueError as exc:
        return f"error body is not strict JSON: {exc}"
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return "no 'error' object"
    for key in ("code", "message", "path"):
        if not isinstance(error.get(key), str):
            return f"error.{key} is not a string"
    return None


def template_pattern(template: str) -> re.Pattern[str]:
    """The concrete paths of an OpenAPI path template: each `{name}` one segment."""
    return re.compile("^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$")


def documented_statuses(doc: Any, method: str, path: str) -> set[str] | None:
    """The response statuses /openapi.json lists for the operation serving `path` (its
    template matched segment by segment); None when the document has no such operation (a
    target without that area: its statuses are judged by PRO-02 alone)."""
    paths = doc.get("paths", {}) if isinstance(doc, dict) else {}
    for template, item in paths.items():
        operation = item.get(method.lower()) if isinstance(item, dict) else None
        if template_pattern(template).match(path) and isinstance(operation, dict):
            return set(map(str, operation.get("responses", {})))
    return None


def status_listed(status: int, listed: set[str]) -> bool:
    """A status the operation lists: itself, its class (`4XX`), or `default`."""
    return str(status) in listed or f"{status // 100}XX" in listed or "default" in listed
