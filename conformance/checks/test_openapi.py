"""PRO-03: the served OpenAPI document is public, holds every endpoint of the wire table, and is
accurate — schemathesis drives every operation.

Requests go through the same target seam as every other check (so rate caps and credentials
apply); schemathesis generates them and judges each answer against the document.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import requests
import schemathesis
from hypothesis import HealthCheck, given, seed, settings
from schemathesis import checks as st_checks
from schemathesis.core.result import Ok
from schemathesis.core.transport import Response
from schemathesis.errors import FailureGroup
from schemathesis.specs.openapi import checks as openapi_checks

from arck.conformance import wirestatus
from arck.conformance.checking import check, expect
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure, NotApplicable
from arck.simulator.target import Exchange

JUDGES = (
    st_checks.not_a_server_error,
    openapi_checks.response_schema_conformance,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
)
BASE = "http://arck.invalid"


def _document(ctx: CheckContext) -> dict[str, Any]:
    exchange = ctx.target.openapi()
    doc = exchange.json_or_none()
    expect(exchange.status == 200 and isinstance(doc, dict) and "paths" in doc, "PRO-03",
           "an OpenAPI document at /openapi.json", exchange.describe)
    assert isinstance(doc, dict)
    return doc


def _send(ctx: CheckContext, case: Any) -> tuple[Exchange, Response]:
    kwargs = case.as_transport_kwargs(base_url=BASE)
    url = httpx.URL(kwargs["url"])
    target = url.raw_path.decode("ascii")
    if "json" in kwargs:
        exchange = ctx.target.request(kwargs["method"], target, json_body=kwargs["json"])
    else:
        data = kwargs.get("data")
        content = data.encode() if isinstance(data, str) else data
        exchange = ctx.target.request(kwargs["method"], target, content=content)
    prepared = requests.Request(kwargs["method"], exchange.url, data=exchange.request_body,
                                headers={"Content-Type": "application/json"}).prepare()
    response = Response(
        status_code=exchange.status,
        headers={k: [v] for k, v in exchange.headers.items()},
        content=exchange.body,
        request=prepared,
        elapsed=0.0,
        verify=True,
    )
    return exchange, response


@check("PRO-03")
def test_openapi_document_is_accurate(ctx: CheckContext) -> None:
    ctx.require_destructive()
    try:
        schema = schemathesis.openapi.from_dict(_document(ctx))
    except Exception as exc:  # schemathesis raises several types for an unusable document
        raise CheckFailure("PRO-03", "a loadable OpenAPI document", f"{exc}") from None
    examples = max(5, ctx.settings.max_examples // 4)
    for result in schema.get_all_operations():
        if not isinstance(result, Ok):
            raise CheckFailure("PRO-03", "every operation well described", f"{result.err()}")
        operation = result.ok()
        _explore(ctx, operation, examples)


def _explore(ctx: CheckContext, operation: Any, examples: int) -> None:
    @settings(ctx.settings, max_examples=examples, suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy())
    def explore(case: Any) -> None:
        exchange, response = _send(ctx, case)
        try:
            case.validate_response(response, checks=list(JUDGES))
        except (AssertionError, FailureGroup) as exc:  # schemathesis 4 raises a FailureGroup
            raise CheckFailure(
                "PRO-03",
                f"{operation.label}: answers that match the OpenAPI document, never 5xx",
                f"{str(exc)[:800]} — {exchange.describe()}",
                example={"operation": operation.label, "request": exchange.as_curl()},
            ) from None

    if ctx.seed is not None:
        explore = seed(ctx.seed)(explore)
    explore()


# The profile's wire table: every endpoint the document must describe.
WIRE_TABLE = (
    ("post", "/v1/bindings"),
    ("get", "/v1/bindings/{binding_id}"),
    ("post", "/v1/tool-sets"),
    ("get", "/v1/tool-sets/{tool_set_id}"),
    ("post", "/v1/agents/{agent_id}/versions"),
    ("get", "/v1/agent-versions/{agent_version}"),
    ("post", "/v1/tools/dry-run"),
    ("get", "/v1/health"),
)
_TEMPLATE = re.compile(r"\{[^}]*\}")


@check("PRO-03")
def test_openapi_document_is_public(ctx: CheckContext) -> None:
    """`GET /openapi.json` answers without a credential (the profile's decision: the schema
    holds no tenant data, and a harness needs it before choosing one) with an OpenAPI 3.1
    document that holds every endpoint of the wire table (parameter names may differ)."""
    doc = _document(ctx)
    version = doc.get("openapi")
    expect(isinstance(version, str) and version.startswith("3.1."), "PRO-03",
           "an OpenAPI 3.1 document (openapi: 3.1.x)", f"openapi: {version!r}")
    paths = doc.get("paths")
    documented = {
        (method.lower(), _TEMPLATE.sub("{}", path))
        for path, item in (paths.items() if isinstance(paths, dict) else ())
        if isinstance(item, dict)
        for method in item
    }
    missing = [f"{m.upper()} {p}" for m, p in WIRE_TABLE
               if (m, _TEMPLATE.sub("{}", p)) not in documented]
    expect(not missing, "PRO-03", "every endpoint of the profile's wire table documented",
           f"missing: {', '.join(missing)}")


# The media types a success answers in (docs/runs.md, Event stream): the events as JSON, or
# as SSE for an Accept naming text/event-stream.
MEDIA = {("GET", "/v1/runs/{run_id}/events"): ("application/json", "text/event-stream")}


@check("PRO-03")
def test_openapi_lists_the_profiles_success_statuses(ctx: CheckContext) -> None:
    """Profile: each operation of the wire tables that the served document describes lists
    exactly one success, the table's status (201 for a creation or a claim, 200 otherwise),
    with the media types it answers in (the run events as JSON and as `text/event-stream`):
    a client generated from the document must expect what the service answers. An operation
    the document lacks is judged by `test_openapi_document_is_public` (definitions) or not at
    all (an area the target does not serve)."""
    if ctx.profile != "reference":
        raise NotApplicable("the success statuses are the reference profile's")
    doc = _document(ctx)
    paths = doc["paths"] if isinstance(doc["paths"], dict) else {}
    by_shape = {_TEMPLATE.sub("{}", path): item for path, item in paths.items()
                if isinstance(item, dict)}
    wrong = []
    for (method, template), status in wirestatus.SUCCESS.items():
        operation = by_shape.get(_TEMPLATE.sub("{}", template), {}).get(method.lower())
        if not isinstance(operation, dict):
            continue
        responses = operation.get("responses", {})
        listed = sorted(str(code) for code in responses if str(code).startswith("2"))
        if listed != [str(status)]:
            wrong.append(f"{method} {template}: {listed or 'none'} (table: {status})")
        answer = responses.get(str(status), {})
        media = answer.get("content", {}) if isinstance(answer, dict) else {}
        for kind in MEDIA.get((method, template), ()):
            if kind not in media:
                wrong.append(f"{method} {template}: no {kind} under {status} "
                             f"(listed: {sorted(media)})")
    expect(not wrong, "PRO-03", "every documented operation's 2xx responses exactly the "
           "wire table's status", "; ".join(wrong),
           "Reproduce: GET /openapi.json and read each operation's `responses`.")
