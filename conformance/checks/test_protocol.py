"""PRO: the reference wire profile (SPEC §10): strict bodies, status codes, error shape, and
the fixed choices of docs/profile.md (limits, order of checks, permissions, answers, codes)."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import strategies as st

from arck.conformance import oracle
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


_BAD_BODIES = tuple(sorted(BAD_RESULT_TEXTS) + sorted(BAD_BYTES))


# Every kind is also an explicit example: a short search must not skip one (the BOM, say).
@property_check("PRO-01", cases=st.sampled_from(_BAD_BODIES), examples=_BAD_BODIES)
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


# -- the profile's fixed choices (docs/profile.md, "Which check holds each decision") -----------

EIGHT_MIB = 8 * 1024 * 1024  # PRO-02: the documented body limit, in bytes
BODY_DEPTH = 520  # 512 levels a value may nest (BUD-23) + 8 levels of body around it
ROLES = ("full", "read_only", "config_read", "no_permission", "no_scope", "other_tenant")
CURSOR_SCHEMA = {
    "type": "object",
    "properties": {"cursor": {"type": "string"}},
    "required": ["cursor"],
}


def _error_of(exchange: Exchange) -> tuple[Any, Any]:
    """`(code, path)` of a PRO-03 error body; `(None, None)` when there is none."""
    data = exchange.json_or_none()
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None, None
    return error.get("code"), error.get("path")


def _padded(size: int, *, json_text: bool = True) -> bytes:
    """A body of exactly `size` bytes: `{"pad":"xx…"}`, or `{xx…` when not `json_text`."""
    if json_text:
        return b'{"pad":"' + b"x" * (size - 10) + b'"}'
    return b"{" + b"x" * (size - 1)


def _json_endpoints(ctx: CheckContext) -> list[str]:
    return ["/v1/bindings", "/v1/tool-sets", f"/v1/agents/{ctx.agent_id}/versions",
            "/v1/tools/dry-run"]


@check("PRO-01")
def test_empty_body_is_invalid_json(ctx: CheckContext) -> None:
    """An empty body is 400 on every JSON endpoint: never read as `{}` (which would be 422)."""
    for path in _json_endpoints(ctx):
        exchange = ctx.target.request("POST", path, content=b"")
        expect(exchange.status == 400, "PRO-01", f"400 for POST {path} with an empty body",
               exchange.describe)


def _nested_body(ctx: CheckContext, depth: int) -> bytes:
    """A dry-run body nested `depth` levels in all: the body, then `depth - 1` levels of
    `arguments` (objects, so the sample tool's input schema `{"type": "object"}` holds)."""
    version = ctx.version(1024)
    head = json.dumps({"agent_version": version.agent_version, "tool_name": version.tool_name,
                       "mock_receipts": []})[:-1].encode()
    inner = b'{"a":' * (depth - 1) + b"1" + b"}" * (depth - 1)
    return head + b',"arguments":' + inner + b"}"


@check("PRO-01")
def test_body_nesting_limit(ctx: CheckContext) -> None:
    """520 levels (the 512 a result may nest, BUD-23, plus 8 of body around it): a body at the
    limit is read, one level deeper is 400."""
    at_limit = ctx.target.dry_run(_nested_body(ctx, BODY_DEPTH))
    expect(200 <= at_limit.status < 300, "PRO-01",
           f"a body nested {BODY_DEPTH} levels (in its arguments) read and answered 2xx",
           at_limit.describe)
    over = ctx.target.dry_run(_nested_body(ctx, BODY_DEPTH + 1))
    expect(over.status == 400, "PRO-01", f"400 for a body nested {BODY_DEPTH + 1} levels",
           over.describe)


@check("PRO-02")
def test_body_size_limit(ctx: CheckContext) -> None:
    """8 MiB is 8,388,608 bytes: a body of exactly that is read (here 422: it has none of the
    dry-run's members), one byte more is 413 (on two endpoints: each body is 8 MiB on the wire)."""
    at_limit = ctx.target.dry_run(_padded(EIGHT_MIB))
    expect(at_limit.status == 422, "PRO-02",
           f"422 for a well-formed dry-run body of exactly {EIGHT_MIB} bytes (read, not 413)",
           at_limit.describe)
    for path in ("/v1/tools/dry-run", "/v1/tool-sets"):
        over = ctx.target.request("POST", path, content=_padded(EIGHT_MIB + 1))
        expect(over.status == 413, "PRO-02", f"413 for POST {path} with {EIGHT_MIB + 1} bytes",
               over.describe)


@check("PRO-02")
def test_caller_checked_before_body(ctx: CheckContext) -> None:
    """The credential (401), then the permission and an agent scope named in the path (403)
    are checked before the body is read; then 413 comes before 400."""
    not_json = b'{"agent_version": '
    huge = _padded(EIGHT_MIB + 1, json_text=False)
    dry, versions = "/v1/tools/dry-run", f"/v1/agents/{ctx.agent_id}/versions"
    cases = (
        (401, dry, not_json, "none", "no credentials, a body that is not JSON"),
        (401, dry, not_json, "forged", "an unknown token, a body that is not JSON"),
        (401, dry, huge, "none", "no credentials, a body over 8 MiB"),
        (403, dry, not_json, "no_permission", "no permission, a body that is not JSON"),
        (403, "/v1/tool-sets", not_json, "config_read",
         "configuration:read publishing a tool set, a body that is not JSON"),
        (403, versions, not_json, "no_scope",
         "an agent outside the caller's scope in the path, a body that is not JSON"),
        (403, dry, huge, "no_permission", "no permission, a body over 8 MiB"),
        (413, dry, huge, "full", "a body over 8 MiB that is not JSON either"),
        (400, dry, not_json, "full", "a body that is not JSON"),
    )
    for status, path, body, role, what in cases:
        exchange = ctx.target.request("POST", path, content=body, role=role)
        expect(exchange.status == status, "PRO-02", f"{status} for POST {path}: {what}",
               exchange.describe)


@check("PRO-02")
def test_unrouted_requests_need_credentials_first(ctx: CheckContext) -> None:
    """A method a path does not have (405) or a path that does not exist (404) is still 401
    first without a valid credential, like every endpoint."""
    binding = ctx.target.create_binding(ctx.name("binding"))
    binding_id = (binding.json_or_none() or {}).get("binding_id", "arck-none")
    cases = (
        ("PUT", f"/v1/bindings/{binding_id}", 405),
        ("GET", "/v1/tools/dry-run", 405),
        ("POST", "/v1/health", 405),
        ("GET", "/v1/arck-no-such-route", 404),
    )
    for method, path, status in cases:
        for role, want in (("none", 401), ("forged", 401), ("full", status)):
            exchange = ctx.target.request(method, path, role=role)
            expect(exchange.status == want, "PRO-02",
                   f"{want} for {method} {path} as {role!r} (401 before {status})",
                   exchange.describe)


def _invalid_dry_run(agent_version: str, tool_name: str) -> dict[str, Any]:
    return {"agent_version": agent_version, "tool_name": tool_name,
            "arguments": "not an object", "mock_receipts": "not a list"}


@check("PRO-02")
def test_resources_looked_up_before_scope_and_validation(ctx: CheckContext) -> None:
    """A resource named in the path or the body is looked up (404) before the caller's scope
    over it is checked (403: existence within a tenant is no secret) and before the rest of
    the body is validated (422). An unknown tool set in a new version is 404; an unknown
    binding in a tool set is 422 (DEF-06)."""
    version = ctx.version(1024)
    unknown = "arck-no-such-version"
    tool = {**ctx.tool(None), "binding_id": "arck-no-such-binding-0"}
    cases = (
        (404, ctx.target.get_agent_version(unknown, role="no_scope"),
         "an unknown version read by a caller outside the agent's scope"),
        (404, ctx.target.dry_run(_invalid_dry_run(unknown, version.tool_name), role="no_scope"),
         "a dry-run of an unknown version by a caller outside the agent's scope, invalid body"),
        (403, ctx.target.get_agent_version(version.agent_version, role="no_scope"),
         "a version outside the caller's scope"),
        (403, ctx.target.dry_run(_invalid_dry_run(version.agent_version, version.tool_name),
                                 role="no_scope"),
         "a dry-run of a version outside the caller's scope, invalid body"),
        (404, ctx.target.dry_run(_invalid_dry_run(version.agent_version, "arck.none")),
         "a dry-run of a tool not in the version, invalid body (the tool is looked up first)"),
        (404, ctx.target.publish_agent_version(
            ctx.agent_id, {"tool_set_id": "arck-no-such-tool-set", "system_prompt": "arck"}),
         "a new version naming an unknown tool_set_id"),
        (404, ctx.target.publish_agent_version(
            ctx.agent_id, {"tool_set_id": "arck-no-such-tool-set", "system_prompt": 7}),
         "a new version naming an unknown tool_set_id, invalid system_prompt (looked up first)"),
        (404, ctx.target.publish_agent_version(
            ctx.agent_id, {"tool_set_id": version.tool_set_id, "system_prompt": "arck"},
            role="other_tenant"),
         "a new version naming another tenant's tool set"),
        (422, ctx.target.publish_tool_set({"name": ctx.name("tools"), "tools": [tool]}),
         "a tool set naming an unknown binding_id"),
    )
    for status, exchange, what in cases:
        expect(exchange.status == status, "PRO-02", f"{status} for {what}", exchange.describe)


@check("PRO-02", "PRO-03")
def test_health_answers_any_valid_credential(ctx: CheckContext) -> None:
    """`GET /v1/health` answers 200 `{"status": "ok"}` to any valid credential, whatever its
    permissions, scope or tenant, and 401 without one."""
    for role in ROLES:
        exchange = ctx.target.request("GET", "/v1/health", role=role)
        expect(exchange.status == 200, "PRO-02", f"200 for GET /v1/health as {role!r}",
               exchange.describe)
        expect(exchange.json_or_none() == {"status": "ok"}, "PRO-03",
               'the health body {"status": "ok"}', exchange.describe)
    anonymous = ctx.target.request("GET", "/v1/health", role="none")
    expect(anonymous.status == 401, "PRO-02", "401 for GET /v1/health without credentials",
           anonymous.describe)


@check("PRO-02")
def test_permissions_per_endpoint(ctx: CheckContext) -> None:
    """The profile's table: publishing needs configuration:write, reading configuration:read
    (runtime:read alone reads no configuration), and versions need the agent scope too."""
    version = ctx.version(1024)
    reads = (f"/v1/bindings/{ctx.binding_id()}", f"/v1/tool-sets/{version.tool_set_id}",
             f"/v1/agent-versions/{version.agent_version}")
    writes = (
        ("/v1/bindings", {"name": ctx.name("binding")}),
        ("/v1/tool-sets", {"name": ctx.name("tools"), "tools": [ctx.tool(None)]}),
        (f"/v1/agents/{version.agent_id}/versions",
         {"tool_set_id": version.tool_set_id, "system_prompt": "arck permissions"}),
    )
    cases: list[tuple[int, str, str, Any, str]] = []
    for path in reads:
        cases += [(200, "GET", path, None, "config_read"), (403, "GET", path, None, "read_only"),
                  (403, "GET", path, None, "no_permission")]
    for path, body in writes:
        cases += [(403, "POST", path, body, "config_read"), (403, "POST", path, body, "read_only")]
    cases += [
        (200, "GET", reads[0], None, "no_scope"),  # bindings and tool sets name no agent
        (200, "GET", reads[1], None, "no_scope"),
        (403, "GET", reads[2], None, "no_scope"),
        (403, "POST", writes[2][0], writes[2][1], "no_scope"),
    ]
    for status, method, path, body, role in cases:
        exchange = ctx.target.request(method, path, json_body=body, role=role)
        expect(exchange.status == status, "PRO-02", f"{status} for {method} {path} as {role!r}",
               exchange.describe)


# id member → (its profile prefix, where the created object is read back)
_IDS = {"binding_id": ("bnd", "/v1/bindings/"), "tool_set_id": ("ts", "/v1/tool-sets/"),
        "agent_version": ("av", "/v1/agent-versions/")}


@check("PRO-03")
def test_created_answers_and_sequential_ids(ctx: CheckContext) -> None:
    """Creations answer 201 with the profile's members (defaults filled in; later profile
    sections may add members, so more are allowed) and ids the server makes in sequence
    (`bnd-000001`, `ts-…`, `av-…`); reads answer the same object with 200; a dry-run 200."""
    ids: dict[str, list[int]] = {key: [] for key in _IDS}

    def created(path: str, body: Any, key: str, members: set[str]) -> Any:
        exchange = ctx.target.request("POST", path, json_body=body)
        data = exchange.json_or_none()
        expect(exchange.status == 201 and isinstance(data, dict) and set(data) >= members,
               "PRO-03", f"201 with members {sorted(members)} for POST {path}",
               exchange.describe)
        prefix, read_path = _IDS[key]
        match = re.fullmatch(rf"{prefix}-(\d{{6,}})", str(data[key]))
        expect(match is not None, "PRO-03",
               f"{key} of the form {prefix}-NNNNNN (sequential, made by the server)",
               f"{data[key]!r}")
        assert match is not None
        ids[key].append(int(match.group(1)))
        read = ctx.target.request("GET", f"{read_path}{data[key]}")
        expect(read.status == 200 and oracle.canonically_equal(read.json_or_none(), data),
               "PRO-03", f"200 with the created object for GET of {data[key]}", read.describe)
        return data

    binding_members = {"binding_id", "name", "description"}
    first = created("/v1/bindings", {"name": ctx.name("binding")}, "binding_id", binding_members)
    expect(first["description"] == "", "PRO-03", 'description "" when none is given',
           f"{first['description']!r}")
    created("/v1/bindings", {"name": ctx.name("binding"), "description": "arck"}, "binding_id",
            binding_members)
    tool = ctx.tool(None)
    tool_sets = [
        created("/v1/tool-sets", {"name": ctx.name("tools"), "tools": [tool]}, "tool_set_id",
                {"tool_set_id", "name", "tools"})
        for _ in range(2)
    ]
    filled = {**tool, "max_result_context_bytes": 16384}
    expect(oracle.canonically_equal(tool_sets[0]["tools"], [filled]), "PRO-03",
           "the tool set answered with its tool, max_result_context_bytes 16384 filled in",
           f"{str(tool_sets[0]['tools'])[:300]}")
    for tool_set in tool_sets:
        created(f"/v1/agents/{ctx.agent_id}/versions",
                {"tool_set_id": tool_set["tool_set_id"], "system_prompt": "arck ids"},
                "agent_version", {"agent_version", "agent_id", "tool_set_id", "system_prompt"})
    for key, numbers in ids.items():
        expect(numbers == sorted(numbers) and len(set(numbers)) == len(numbers), "PRO-03",
               f"{key}s increasing in the order they were created", f"{numbers}")
    version = ctx.version(1024)
    exchange = ctx.dry_run(version, {"ok": True})
    data = exchange.json_or_none()
    expect(exchange.status == 200 and isinstance(data, dict)
           and set(data) >= {"context_preview", "execution_verified"}, "PRO-03",
           "200 with members context_preview and execution_verified for a dry-run",
           exchange.describe)


@check("PRO-03")
def test_error_codes_and_paths(ctx: CheckContext) -> None:
    """Each error's code is the profile's for its status and cause, and its path a JSON
    Pointer into the body, the header or path parameter at fault, or "" for the whole body."""
    version = ctx.version(1024, CURSOR_SCHEMA)
    av = version.agent_version
    valid = {"agent_version": av, "tool_name": version.tool_name,
             "arguments": {"cursor": "a"}, "mock_receipts": []}
    head = json.dumps({"agent_version": av, "tool_name": version.tool_name,
                       "mock_receipts": []})[:-1].encode()
    tool = ctx.tool(None)
    content_length = ("", "Content-Length")  # the body as a whole, or the header declaring it
    cases: tuple[tuple[Exchange, str, str | tuple[str, ...], str], ...] = (
        (ctx.target.dry_run(valid, role="none"), "unauthorized", "Authorization",
         "no credentials"),
        (ctx.target.dry_run(valid, role="no_permission"), "forbidden", "Authorization",
         "no permission"),
        (ctx.target.get_agent_version(av, role="no_scope"), "forbidden", "agent_version",
         "a version outside the caller's scope"),
        (ctx.target.publish_agent_version(
            ctx.agent_id, {"tool_set_id": version.tool_set_id, "system_prompt": "x"},
            role="no_scope"), "forbidden", "agent_id", "an agent outside the caller's scope"),
        (ctx.target.dry_run(valid, role="no_scope"), "forbidden", "/agent_version",
         "a dry-run of a version outside the caller's scope"),
        (ctx.target.get_agent_version("arck-no-such-version"), "not_found", "agent_version",
         "an unknown version"),
        (ctx.target.get_tool_set("arck-no-such-tool-set"), "not_found", "tool_set_id",
         "an unknown tool set"),
        (ctx.target.dry_run({**valid, "agent_version": "arck-no-such-version"}), "not_found",
         "/agent_version", "a dry-run of an unknown version"),
        (ctx.target.dry_run({**valid, "tool_name": "arck.none"}), "not_found", "/tool_name",
         "a dry-run of a tool not in the version"),
        (ctx.target.publish_agent_version(
            ctx.agent_id, {"tool_set_id": "arck-no-such-tool-set", "system_prompt": "x"}),
         "not_found", "/tool_set_id", "a new version naming an unknown tool set"),
        (ctx.target.request("PATCH", f"/v1/tool-sets/{version.tool_set_id}",
                            json_body={"name": "x"}), "method_not_allowed", "",
         "PATCH on a published tool set"),
        (ctx.target.dry_run(b"{"), "invalid_json", "", "a body that is not JSON"),
        (ctx.target.dry_run(b""), "invalid_json", "", "an empty body"),
        (ctx.target.dry_run(ctx.raw_dry_run_body(version, b"NaN")), "invalid_json",
         "/mock_receipts/0/result", "NaN as a result"),
        (ctx.target.dry_run(head + b',"arguments":{"cursor":"a","cursor":"b"}}'),
         "invalid_json", "/arguments/cursor", "a duplicate key in arguments"),
        (ctx.target.dry_run(_padded(EIGHT_MIB + 1)), "body_too_large", content_length,
         "a body over 8 MiB"),
        (ctx.target.publish_tool_set({"name": ctx.name("tools"),
                                      "tools": [{**tool, "max_result_context_bytes": 5}]}),
         "validation_failed", "/tools/0/max_result_context_bytes", "a budget of 5 bytes"),
        (ctx.target.publish_tool_set({"name": ctx.name("tools"),
                                      "tools": [{**tool, "max_result_tokens": 4096}]}),
         "removed_field", "/tools/0/max_result_tokens", "max_result_tokens in a tool"),
        (ctx.target.publish_tool_set({"name": ctx.name("tools"), "tools": [tool],
                                      "max_result_bytes": 4096}),
         "removed_field", "/max_result_bytes", "max_result_bytes in a tool set"),
        (ctx.target.publish_tool_set({"name": ctx.name("tools"),
                                      "tools": [{**tool, "binding_id": "arck-no-such-0"}]}),
         "unknown_binding", "/tools/0/binding_id", "an unknown binding_id"),
        (ctx.target.dry_run({**valid, "arguments": {"cursor": 7}}), "validation_failed",
         "/arguments/cursor", "arguments not matching the input schema"),
        (ctx.target.dry_run({k: v for k, v in valid.items() if k != "mock_receipts"}),
         "validation_failed", "/mock_receipts", "a dry-run without mock_receipts"),
    )
    for exchange, code, path, what in cases:
        seen_code, seen_path = _error_of(exchange)
        paths = (path,) if isinstance(path, str) else path
        header = isinstance(seen_path, str) and not seen_path.startswith("/")
        fits = seen_path in paths or (header and str(seen_path).lower() in
                                      {p.lower() for p in paths})  # header names: any case
        expect(seen_code == code and fits, "PRO-03",
               f"code {code!r} and path {' or '.join(map(repr, paths))} for {what}",
               exchange.describe)
