"""The reference engine over HTTP: wire profile, status order, strict bodies, dry-run, OpenAPI."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from httpx import Client as HttpClient
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from arck.reference.app import create_app
from arck.reference.engine import Engine
from arck.reference.errors import ValidationFailed
from arck.simulator.asgi import SyncASGITransport

FULL = {"Authorization": "Bearer arck-dev-full"}
OTHER = {"Authorization": "Bearer arck-dev-other"}
NOPERM = {"Authorization": "Bearer arck-dev-noperm"}
NOSCOPE = {"Authorization": "Bearer arck-dev-noscope"}
READONLY = {"Authorization": "Bearer arck-dev-readonly"}
CONFIGREAD = {"Authorization": "Bearer arck-dev-configread"}
CORPUS = Path(__file__).resolve().parents[2] / "conformance/data/JSONTestSuite/test_parsing"
POSTS = ["/v1/bindings", "/v1/tool-sets", "/v1/agents/agent-1/versions", "/v1/tools/dry-run"]
INPUT_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "page": {"type": "integer"}},
    "required": ["order_id"],
}


@pytest.fixture
def client() -> Iterator[HttpClient]:
    transport = SyncASGITransport(create_app())
    with HttpClient(transport=transport, base_url="http://reference.test") as test_client:
        yield test_client


def tool(binding_id: str, **changes: Any) -> dict[str, Any]:
    base = {
        "name": "get_order",
        "description": "Read one order.",
        "binding_id": binding_id,
        "input_schema": INPUT_SCHEMA,
        "output_schema": {"type": "object"},
    }
    return base | changes


def binding(client: HttpClient, headers: dict[str, str] = FULL) -> str:
    response = client.post("/v1/bindings", json={"name": "orders-api"}, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["binding_id"])


def publish(client: HttpClient, budget: int | None = None, agent: str = "agent-1") -> str:
    """Binding, tool set and agent version; returns the version id."""
    extra = {} if budget is None else {"max_result_context_bytes": budget}
    tools = [tool(binding(client), **extra)]
    tool_set = client.post("/v1/tool-sets", json={"name": "orders", "tools": tools}, headers=FULL)
    assert tool_set.status_code == 201, tool_set.text
    version = client.post(
        f"/v1/agents/{agent}/versions",
        json={"tool_set_id": tool_set.json()["tool_set_id"], "system_prompt": "Be brief."},
        headers=FULL,
    )
    assert version.status_code == 201, version.text
    return str(version.json()["agent_version"])


def dry_run_body(version: str, *results: tuple[str, Any], **changes: Any) -> dict[str, Any]:
    receipts = [
        {"receipt_id": f"r{i}", "kind": kind, "result": result}
        for i, (kind, result) in enumerate(results)
    ]
    base = {
        "agent_version": version,
        "tool_name": "get_order",
        "arguments": {"order_id": "o-1"},
        "mock_receipts": receipts,
    }
    return base | changes


def error(response: httpx.Response, status: int, code: str, path: str | None = None) -> str:
    """Assert a PRO-03 error answer; returns its message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "path"}
    assert body["error"]["code"] == code, body
    if path is not None:
        assert body["error"]["path"] == path, body
    return str(body["error"]["message"])


# -- publishing ------------------------------------------------------------------------------


def test_publish_round_trip(client: HttpClient) -> None:
    binding_id = binding(client)
    assert binding_id == "bnd-000001"
    assert client.get(f"/v1/bindings/{binding_id}", headers=FULL).json() == {
        "binding_id": binding_id,
        "name": "orders-api",
        "description": "",
    }
    posted = client.post(
        "/v1/tool-sets", json={"name": "orders", "tools": [tool(binding_id)]}, headers=FULL
    )
    assert posted.status_code == 201
    assert posted.json()["tool_set_id"] == "ts-000001"
    assert posted.json()["tools"][0]["max_result_context_bytes"] == 16384
    assert client.get("/v1/tool-sets/ts-000001", headers=FULL).json() == posted.json()
    version = client.post(
        "/v1/agents/agent-1/versions",
        json={"tool_set_id": "ts-000001", "system_prompt": "Be brief."},
        headers=FULL,
    )
    assert version.status_code == 201
    expected = {
        "agent_version": "av-000001",
        "agent_id": "agent-1",
        "tool_set_id": "ts-000001",
        "system_prompt": "Be brief.",
    }
    assert version.json() == expected
    assert client.get("/v1/agent-versions/av-000001", headers=FULL).json() == expected


@pytest.mark.parametrize("budget", [1024, 32768])
def test_budget_bounds_accepted(client: HttpClient, budget: int) -> None:
    tools = [tool(binding(client), max_result_context_bytes=budget)]
    response = client.post("/v1/tool-sets", json={"name": "s", "tools": tools}, headers=FULL)
    assert response.status_code == 201
    assert response.json()["tools"][0]["max_result_context_bytes"] == budget


@pytest.mark.parametrize("budget", [1023, 32769, "16384", 16384.0, True])
def test_budget_refused_naming_the_field(client: HttpClient, budget: object) -> None:
    tools = [tool(binding(client), max_result_context_bytes=budget)]
    response = client.post("/v1/tool-sets", json={"name": "s", "tools": tools}, headers=FULL)
    error(response, 422, "validation_failed", "/tools/0/max_result_context_bytes")


@pytest.mark.parametrize("field", ["max_result_tokens", "max_result_bytes"])
def test_removed_fields(client: HttpClient, field: str) -> None:
    tools = [tool(binding(client), **{field: 4096})]
    response = client.post("/v1/tool-sets", json={"name": "s", "tools": tools}, headers=FULL)
    message = error(response, 422, "removed_field", f"/tools/0/{field}")
    assert "no alias" in message
    assert client.get("/v1/tool-sets/ts-000001", headers=FULL).status_code == 404


def test_unknown_and_foreign_bindings(client: HttpClient) -> None:
    theirs = binding(client, OTHER)
    for binding_id in ["bnd-999999", theirs]:
        body = {"name": "s", "tools": [tool(binding(client)), tool(binding_id, name="b")]}
        response = client.post("/v1/tool-sets", json=body, headers=FULL)
        error(response, 422, "unknown_binding", "/tools/1/binding_id")


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
def test_published_rows_are_immutable(client: HttpClient, method: str) -> None:
    version = publish(client)
    before = client.get("/v1/tool-sets/ts-000001", headers=FULL).json()
    for path in ["/v1/tool-sets/ts-000001", f"/v1/agent-versions/{version}"]:
        response = client.request(method, path, json={"name": "changed"}, headers=FULL)
        error(response, 405, "method_not_allowed")
        assert response.headers["allow"] == "GET"
        error(client.request(method, path), 401, "unauthorized")
    assert client.get("/v1/tool-sets/ts-000001", headers=FULL).json() == before


# -- credentials and status order ------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization", [None, "", "Basic YTpi", "Bearer", "Bearer a b", "Bearer nope"]
)
def test_unauthorized(client: HttpClient, authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    for response in [
        client.get("/v1/health", headers=headers),
        client.get("/v1/bindings/bnd-000001", headers=headers),
        client.post("/v1/tools/dry-run", content=b"{", headers=headers),
    ]:
        error(response, 401, "unauthorized", "Authorization")
        assert response.headers["www-authenticate"] == "Bearer"


def test_health(client: HttpClient) -> None:
    assert client.get("/v1/health", headers=NOPERM).json() == {"status": "ok"}


def test_status_order_401_403_404_422(client: HttpClient) -> None:
    bad = {"tool_set_id": "ts-404", "system_prompt": 5}
    path = "/v1/agents/agent-1/versions"
    error(client.post(path, json=bad), 401, "unauthorized")
    error(client.post(path, content=b"{nan", headers=NOPERM), 403, "forbidden")
    error(client.post(path, json=bad, headers=READONLY), 403, "forbidden")
    error(client.post("/v1/agents/x/versions", json=bad, headers=NOSCOPE), 403, "forbidden")
    error(client.post(path, content=b"{nan", headers=FULL), 400, "invalid_json")
    unknown = {"tool_set_id": "ts-404", "system_prompt": "p"}
    error(client.post(path, json=unknown, headers=FULL), 404, "not_found", "/tool_set_id")
    # the tool set is looked up before the rest of the body is validated
    error(client.post(path, json=bad, headers=FULL), 404, "not_found", "/tool_set_id")
    tool_set_id = client.get(f"/v1/agent-versions/{publish(client)}", headers=FULL).json()[
        "tool_set_id"]
    invalid = {**bad, "tool_set_id": tool_set_id}
    error(client.post(path, json=invalid, headers=FULL), 422, "validation_failed",
          "/system_prompt")


def test_no_route_or_method_is_401_first(client: HttpClient) -> None:
    for method, path, status in (("PUT", "/v1/bindings/bnd-000001", 405),
                                 ("POST", "/v1/health", 405), ("GET", "/v1/nowhere", 404)):
        error(client.request(method, path), 401, "unauthorized")
        code = "method_not_allowed" if status == 405 else "not_found"
        error(client.request(method, path, headers=FULL), status, code)


def test_dry_run_status_order(client: HttpClient) -> None:
    version = publish(client)
    invalid = dry_run_body(version, mock_receipts="none")
    error(client.post("/v1/tools/dry-run", json=invalid), 401, "unauthorized")
    error(client.post("/v1/tools/dry-run", json=invalid, headers=NOPERM), 403, "forbidden")
    unknown = dry_run_body("av-404", mock_receipts="none")
    response = client.post("/v1/tools/dry-run", json=unknown, headers=FULL)
    error(response, 404, "not_found", "/agent_version")
    unknown_tool = dry_run_body(version, tool_name="nope", mock_receipts="none")
    response = client.post("/v1/tools/dry-run", json=unknown_tool, headers=FULL)
    error(response, 404, "not_found", "/tool_name")
    response = client.post("/v1/tools/dry-run", json=invalid, headers=FULL)
    error(response, 422, "validation_failed", "/mock_receipts")


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("/v1/bindings/bnd-000001", OTHER, 404),
        ("/v1/bindings/bnd-000002", FULL, 404),
        ("/v1/bindings/bnd-000001", READONLY, 403),
        ("/v1/tool-sets/ts-000001", OTHER, 404),
        ("/v1/tool-sets/ts-000001", NOPERM, 403),
        ("/v1/agent-versions/av-000001", OTHER, 404),
        ("/v1/agent-versions/av-000001", NOSCOPE, 403),
        ("/v1/agent-versions/av-000001", CONFIGREAD, 200),
    ],
)
def test_reads_are_tenant_and_scope_bound(
    client: HttpClient, path: str, headers: dict[str, str], status: int
) -> None:
    publish(client)
    assert client.get(path, headers=headers).status_code == status


# -- dry-run ---------------------------------------------------------------------------------


def test_dry_run_preview(client: HttpClient) -> None:
    version = publish(client, budget=1024)
    result = {"status": "shipped", "items": [{"id": i, "note": "x" * 50} for i in range(100)]}
    body = dry_run_body(version, ("accepted", None), ("completed", result))
    response = client.post("/v1/tools/dry-run", json=body, headers=FULL)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["execution_verified"] is False
    preview = answer["context_preview"]
    assert preview["max_result_context_bytes"] == 1024
    assert preview["truncated"] is True
    assert preview["original_bytes"] > 1024 >= preview["retained_bytes"]
    assert set(preview["result"]) >= {"preview", "truncation"}


def test_dry_run_null_preview_without_completed(client: HttpClient) -> None:
    version = publish(client)
    body = dry_run_body(version, ("accepted", None), ("failed", {"code": "E"}))
    response = client.post("/v1/tools/dry-run", json=body, headers=FULL)
    assert response.json() == {"context_preview": None, "execution_verified": False}


def test_dry_run_first_completed_wins(client: HttpClient) -> None:
    version = publish(client)
    body = dry_run_body(version, ("completed", {"n": 1}), ("completed", {"n": 2}))
    preview = client.post("/v1/tools/dry-run", json=body, headers=FULL).json()["context_preview"]
    assert preview == {
        "max_result_context_bytes": 16384,
        "original_bytes": 7,
        "retained_bytes": 7,
        "truncated": False,
        "result": {"n": 1},
    }


@pytest.mark.parametrize("headers", [READONLY, CONFIGREAD, FULL])
def test_dry_run_permissions_any_of(client: HttpClient, headers: dict[str, str]) -> None:
    version = publish(client)
    assert client.post("/v1/tools/dry-run", json=dry_run_body(version), headers=headers).is_success


def test_dry_run_access(client: HttpClient) -> None:
    version = publish(client)
    body = dry_run_body(version, ("completed", {"n": 1}))
    error(client.post("/v1/tools/dry-run", json=body, headers=NOPERM), 403, "forbidden")
    response = client.post("/v1/tools/dry-run", json=body, headers=NOSCOPE)
    error(response, 403, "forbidden")
    for secret in [version, "agent-1", "ts-000001", "Be brief", "get_order"]:
        assert secret not in response.text
    error(client.post("/v1/tools/dry-run", json=body, headers=OTHER), 404, "not_found")


@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ({"order_id": 1}, "/arguments/order_id"),
        ({}, "/arguments"),
        ({"order_id": "o", "page": "2"}, "/arguments/page"),
    ],
)
def test_dry_run_arguments_checked(client: HttpClient, arguments: Any, path: str) -> None:
    version = publish(client)
    body = dry_run_body(version, arguments=arguments)
    error(client.post("/v1/tools/dry-run", json=body, headers=FULL), 422, "validation_failed", path)


def test_dry_run_result_limits(client: HttpClient) -> None:
    version = publish(client)

    def nested(depth: int) -> bytes:
        body = json.dumps(dry_run_body(version, ("completed", "DEEP")))
        return body.replace('"DEEP"', "[" * depth + "]" * depth).encode()

    response = client.post("/v1/tools/dry-run", content=nested(512), headers=FULL)
    assert response.json()["context_preview"]["original_bytes"] == 1024
    response = client.post("/v1/tools/dry-run", content=nested(513), headers=FULL)
    error(response, 422, "validation_failed", "/mock_receipts/0/result" + "/0" * 512)
    response = client.post("/v1/tools/dry-run", content=nested(600), headers=FULL)
    error(response, 400, "invalid_json")
    assert response.json()["error"]["path"].startswith("/mock_receipts/0/result/0/0")
    response = client.post("/v1/tools/dry-run", content=nested(10_000), headers=FULL)
    error(response, 400, "invalid_json")
    with pytest.raises(ValidationFailed) as info:
        Engine().check_result({"a": [10**4400]}, "/mock_receipts/2/result")
    assert info.value.path == "/mock_receipts/2/result/a/0"


NASTY_SCHEMAS = [
    {"type": "object", "properties": {"a": {"pattern": "a{4294967296}"}}},
    {"patternProperties": {"a{99999999999999999999}": {}}},
    {"$ref": "http://[::1"},
    {"$ref": "https://example.invalid/schema.json"},
    {"$ref": "#/$defs/missing"},
    {"multipleOf": 1e-308},
    json.loads('{"not":' * 400 + "{}" + "}" * 400),
]


@pytest.mark.parametrize("schema", NASTY_SCHEMAS, ids=range(len(NASTY_SCHEMAS)))
def test_hostile_input_schemas_never_500(client: HttpClient, schema: dict[str, Any]) -> None:
    tools = [tool(binding(client), input_schema=schema)]
    response = client.post("/v1/tool-sets", json={"name": "s", "tools": tools}, headers=FULL)
    assert response.status_code in {201, 422}, response.text
    if response.status_code == 422:
        assert response.json()["error"]["path"].startswith("/tools/0/input_schema")
        return
    version = client.post(
        "/v1/agents/a/versions",
        json={"tool_set_id": response.json()["tool_set_id"], "system_prompt": ""},
        headers=FULL,
    ).json()["agent_version"]
    for arguments in [{"a": "a"}, {"a": 10**300}, {}]:
        body = dry_run_body(version, arguments=arguments)
        answer = client.post("/v1/tools/dry-run", json=body, headers=FULL)
        assert answer.status_code in {200, 422}, answer.text


# -- strict bodies ---------------------------------------------------------------------------


STRICT_CASES = {
    "nan": b'{"name": NaN}',
    "overflow": b'{"name": 1e400}',
    "escaped-surrogate": b'{"name": "\\ud800"}',
    "raw-surrogate": b'{"name": "\xed\xa0\x80"}',
    "duplicate-keys": b'{"name": "a", "name": "b"}',
    "depth-600": b'{"name": ' + b"[" * 600 + b"]" * 600 + b"}",
    "5000-digits": b'{"name": ' + b"7" * 5000 + b"}",
    "empty": b"",
}


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("case", sorted(STRICT_CASES))
def test_strict_bodies(client: HttpClient, path: str, case: str) -> None:
    response = client.post(path, content=STRICT_CASES[case], headers=FULL)
    error(response, 400, "invalid_json")


def test_error_paths_stay_encodable(client: HttpClient) -> None:
    response = client.post("/v1/bindings", content=b'{"\\udc00": 1}', headers=FULL)
    assert error(response, 400, "invalid_json", "/\\udc00")


def test_body_limit(client: HttpClient) -> None:
    big = b'{"name": "' + b"x" * (8 * 1024 * 1024) + b'"}'
    error(client.post("/v1/bindings", content=big, headers=FULL), 413, "body_too_large")

    def chunks() -> Iterator[bytes]:
        yield big[:1000]
        yield big[1000:]

    response = client.post("/v1/bindings", content=chunks(), headers=FULL)
    error(response, 413, "body_too_large")


def test_content_type_is_not_consulted(client: HttpClient) -> None:
    headers = FULL | {"Content-Type": "text/plain"}
    assert client.post("/v1/bindings", content=b'{"name": "b"}', headers=headers).is_success


def test_json_test_suite_never_500(client: HttpClient) -> None:
    publish(client)
    statuses: set[int] = set()
    for case in sorted(CORPUS.glob("*.json")):
        for path in POSTS:
            response = client.post(path, content=case.read_bytes(), headers=FULL)
            assert response.status_code < 500, (case.name, path, response.text)
            assert set(response.json()) == {"error"} or response.is_success
            statuses.add(response.status_code)
    assert statuses >= {400, 422}


def test_unknown_route_and_method(client: HttpClient) -> None:
    error(client.get("/v1/nothing", headers=FULL), 404, "not_found", "")
    error(client.get("/v1/bindings", headers=FULL), 405, "method_not_allowed", "")


def test_unexpected_errors_keep_the_error_shape() -> None:
    class Broken(Engine):
        def get_binding(self, principal: Any, binding_id: str) -> Any:
            raise RuntimeError("boom")

    transport = SyncASGITransport(create_app(Broken()))
    with HttpClient(transport=transport, base_url="http://reference.test") as broken:
        response = broken.get("/v1/bindings/x", headers=FULL)
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "internal_error"
    assert response.headers["connection"] == "close"  # the server drops it after a bug


def test_an_sqlite_error_that_is_no_storage_fault_is_a_bug() -> None:
    class Broken(Engine):
        def get_binding(self, principal: Any, binding_id: str) -> Any:
            raise sqlite3.OperationalError("no such table: bindings")  # a bug of ours

    transport = SyncASGITransport(create_app(Broken()))
    with HttpClient(transport=transport, base_url="http://reference.test") as broken:
        response = broken.get("/v1/bindings/x", headers=FULL)
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "internal_error"


# -- OpenAPI ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/docs", "/redoc", "/docs/oauth2-redirect"])
def test_no_interactive_pages_are_served(client: HttpClient, path: str) -> None:
    """/openapi.json is the only public route (docs/profile.md): these pages are unknown
    paths, 401 without a credential and 404 with one."""
    assert client.get(path, headers={"Authorization": ""}).status_code == 401
    assert client.get(path, headers={"Authorization": "Bearer arck-dev-full"}).status_code == 404


def test_openapi_is_public_and_complete(client: HttpClient) -> None:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    doc = response.json()
    assert doc["openapi"].startswith("3.1")
    operations = {
        (method.upper(), path): op
        for path, item in doc["paths"].items()
        for method, op in item.items()
    }
    assert set(operations) == {
        ("GET", "/v1/health"),
        ("POST", "/v1/bindings"),
        ("GET", "/v1/bindings/{binding_id}"),
        ("GET", "/v1/bindings/{binding_id}/policy"),  # docs/capabilities.md
        ("PUT", "/v1/bindings/{binding_id}/local-policy"),
        ("POST", "/v1/openapi-imports"),
        ("POST", "/v1/tool-sets"),
        ("GET", "/v1/tool-sets/{tool_set_id}"),
        ("POST", "/v1/agents/{agent_id}/versions"),
        ("GET", "/v1/agent-versions/{agent_version}"),
        ("POST", "/v1/tools/dry-run"),
        # Runs (docs/runs.md).
        ("POST", "/v1/channels"),
        ("GET", "/v1/channels/{channel_id}"),
        ("POST", "/v1/wallets"),
        ("GET", "/v1/wallets/{wallet_id}"),
        ("POST", "/v1/wallets/{wallet_id}/deposits"),
        ("POST", "/v1/sessions"),
        ("GET", "/v1/sessions/{session_id}"),
        ("GET", "/v1/sessions/{session_id}/history"),
        ("GET", "/v1/sessions/{session_id}/execution-history"),
        ("POST", "/v1/sessions/{session_id}/runs"),
        ("GET", "/v1/runs/{run_id}"),
        ("POST", "/v1/runs/{run_id}/cancel"),
        ("GET", "/v1/runs/{run_id}/events"),
        ("GET", "/v1/runs/{run_id}/tool-calls"),
        ("POST", "/v1/runs/{run_id}/input"),
        ("POST", "/v1/agents/{agent_id}/tool-revocations"),
        # Executors (docs/executors.md).
        ("POST", "/v1/executors"),
        ("GET", "/v1/executors/{executor_id}"),
        ("POST", "/v1/executor/heartbeat"),
        ("GET", "/v1/executor/candidates"),
        ("GET", "/v1/executor/calls/{call_id}"),
        ("POST", "/v1/tool-calls/{call_id}/claims"),
        ("POST", "/v1/tool-calls/{call_id}/receipts"),
        ("POST", "/v1/tool-calls/{call_id}/detach"),
        ("POST", "/v1/tool-calls/{call_id}/cancel"),
    }
    schemas = doc["components"]["schemas"]
    for (method, _), op in operations.items():
        assert op["security"] == [{"HTTPBearer": []}]
        assert "401" in op["responses"]
        for status, answer in op["responses"].items():
            ref = answer["content"]["application/json"]["schema"]["$ref"]
            assert ref.rsplit("/", 1)[1] in schemas
            if status.startswith("4"):
                assert ref.endswith("/ErrorBody")
        if method in ("POST", "PUT"):
            ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            assert ref.rsplit("/", 1)[1] in schemas
    budget = schemas["ToolDefinition"]["properties"]["max_result_context_bytes"]
    assert (budget["type"], budget["minimum"], budget["maximum"]) == ("integer", 1024, 32768)
    assert "HTTPValidationError" not in schemas


APP = create_app()
SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", APP)


@SCHEMA.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_schemathesis_no_server_errors(case: Any) -> None:
    """Every check but positive-data acceptance: valid-looking bodies name bindings and
    versions that do not exist, so 422 and 404 are right answers."""
    case.call_and_validate(headers=FULL, excluded_checks=[positive_data_acceptance])
