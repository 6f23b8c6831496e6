"""PRO: the reference wire profile (SPEC §10): strict bodies, status codes, error shape."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from arck.conformance.checking import check, expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.judge import error_shape_problem
from arck.simulator.target import Exchange

# Results JSON cannot hold, or that only a lenient parser takes; each must get 400.
BAD_RESULT_TEXTS = {
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "overflowing number": "1e400",
    "escaped lone surrogate": '"\\ud800"',
    "escaped lone low surrogate": '"a\\udc00b"',
    "duplicate key": '{"a":1,"a":2}',
    "raw surrogate bytes": '"\udcff"',  # encoded with surrogatepass: ED B3 BF, not UTF-8
}
BAD_BYTES = {
    "invalid UTF-8": b'{"agent_version": "\xff\xfe"}',
    "truncated UTF-8": b'{"agent_version": "\xe4\xb8"}',
    "UTF-8 BOM": b"\xef\xbb\xbf{}",
}


@property_check("PRO-01", cases=st.sampled_from(sorted(BAD_RESULT_TEXTS) + sorted(BAD_BYTES)))
def test_strict_bodies(ctx: CheckContext, case: Any) -> None:
    raw = BAD_RESULT_TEXTS.get(case, "").encode("utf-8", "surrogatepass")
    body = BAD_BYTES.get(case) or ctx.raw_dry_run_body(ctx.version(1024), raw)
    exchange = ctx.target.dry_run(body)
    expect(exchange.status == 400, "PRO-01", f"400 for a body with {case}", exchange.describe)


@property_check("PRO-01", cases=st.sampled_from((16384.0, "16384", True, 1.6384e4, "0x4000")))
def test_integers_are_json_integers(ctx: CheckContext, case: Any) -> None:
    tool = {**ctx.tool(None), "max_result_context_bytes": case}
    exchange = ctx.target.publish_tool_set({"name": ctx.name("tools"), "tools": [tool]})
    expect(exchange.status == 422, "PRO-01", f"422 for max_result_context_bytes = {case!r}",
           exchange.describe)


@check("PRO-02")
def test_status_code_order(ctx: CheckContext) -> None:
    """401 → 403 → 404 → 422: each answer is the first problem in that order."""
    version = ctx.version(1024)
    unknown = {"agent_version": "arck-no-such-version", "tool_name": "x", "arguments": {},
               "mock_receipts": [{"receipt_id": "r", "kind": "completed", "result": 1}]}
    invalid = {**unknown, "agent_version": version.agent_version, "tool_name": version.tool_name,
               "arguments": "not an object"}
    cases = (
        (401, ctx.target.dry_run(unknown, role="none"), "no credentials, unknown version"),
        (401, ctx.target.dry_run(unknown, role="forged"), "a bad token, unknown version"),
        (403, ctx.target.dry_run(unknown, role="no_permission"), "no permission, unknown version"),
        (403, ctx.target.dry_run(invalid, role="no_permission"), "no permission, invalid body"),
        (404, ctx.target.dry_run({**unknown, "arguments": []}), "unknown version, bad arguments"),
        (422, ctx.target.dry_run(invalid), "arguments not an object"),
        (404, ctx.target.get_tool_set("arck-no-such-tool-set"), "an unknown tool set"),
        (405, ctx.target.request("PATCH", f"/v1/tool-sets/{version.tool_set_id}",
                                 json_body={"name": "x"}), "PATCH on a published tool set"),
        (413, ctx.target.dry_run(b'{"pad":"' + b"x" * (8 * 1024 * 1024 + 1) + b'"}'),
         "a body over 8 MiB"),
    )
    for status, exchange, what in cases:
        expect(exchange.status == status, "PRO-02", f"{status} for {what}", exchange.describe)


def _error_answers(ctx: CheckContext) -> list[Exchange]:
    version = ctx.version(1024)
    return [
        ctx.target.dry_run({"agent_version": version.agent_version}, role="none"),
        ctx.target.dry_run({"agent_version": version.agent_version}, role="no_permission"),
        ctx.target.get_agent_version("arck-no-such-version"),
        ctx.target.dry_run({"agent_version": version.agent_version}),
        ctx.target.dry_run(b"{"),
        ctx.target.request("GET", "/v1/arck-no-such-route"),
    ]


@check("PRO-03")
def test_error_shape(ctx: CheckContext) -> None:
    for exchange in _error_answers(ctx):
        problem = error_shape_problem(exchange)
        expect(exchange.status >= 400 and problem is None, "PRO-03",
               'an error body {"error": {"code", "message", "path"}}',
               lambda: f"{problem}: {exchange.describe()}")  # noqa: B023


def _allowed_methods(exchange: Exchange) -> set[str]:
    """The methods an `Allow` header lists (RFC 9110: comma-separated, names case-sensitive)."""
    value = next((v for k, v in exchange.headers.items() if k.lower() == "allow"), "")
    return {m.strip() for m in value.split(",") if m.strip()}


@check("PRO-02", "PRO-03")
def test_published_resources_answer_405_with_allow(ctx: CheckContext) -> None:
    """PUT, PATCH and DELETE on a published tool set or version: 405 with `Allow: GET`, an
    error body, 401 first without credentials, and nothing changed (profile, DEF-04)."""
    version = ctx.version(1024)
    for path in (f"/v1/tool-sets/{version.tool_set_id}",
                 f"/v1/agent-versions/{version.agent_version}"):
        before = ctx.target.request("GET", path).body
        for method in ("PUT", "PATCH", "DELETE"):
            body = None if method == "DELETE" else {"name": "arck-changed"}
            anonymous = ctx.target.request(method, path, json_body=body, role="none")
            expect(anonymous.status == 401, "PRO-02",
                   f"401 for {method} {path} without credentials (401 comes before 405)",
                   anonymous.describe)
            exchange = ctx.target.request(method, path, json_body=body)
            expect(exchange.status == 405, "PRO-02", f"405 for {method} on {path}",
                   exchange.describe)
            allowed = _allowed_methods(exchange)
            expect("GET" in allowed, "PRO-02",
                   f"an Allow header listing GET on the 405 for {method} {path}",
                   lambda: f"Allow: {', '.join(sorted(allowed)) or '(missing)'}; "  # noqa: B023
                   f"headers {sorted(exchange.headers)}")  # noqa: B023
            problem = error_shape_problem(exchange)
            expect(problem is None, "PRO-03", 'the 405 body {"error": {"code", "message", '
                   '"path"}}', lambda: f"{problem}: {exchange.describe()}")  # noqa: B023
        after = ctx.target.request("GET", path).body
        expect(after == before, "PRO-02", f"{path} unchanged after the refused methods",
               after[:200].decode("utf-8", "replace"))
