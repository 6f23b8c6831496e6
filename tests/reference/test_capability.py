"""The reference's capability declarations (CAP-01, 02, 04, 14): validated on a binding with
the path named, kept as sent, read back as an effective policy, and a disabled operation kept
out of every tool set."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from httpx import Client as HttpClient

from arck.reference.app import create_app
from arck.reference.capability import window_ms
from arck.simulator.asgi import SyncASGITransport

FULL = {"Authorization": "Bearer arck-dev-full"}
OTHER = {"Authorization": "Bearer arck-dev-other"}
ORDER_READ: dict[str, Any] = {
    "version": 1, "enabled": True, "scope": "order.read", "risk": {"level": "low"},
    "subject": {"required": True}, "audit": {"sensitive": True},
    "execution": {"readonly": True, "idempotent": True, "timeout_ms": 5000,
                  "rate_limit": {"count": 60, "window": "1m"}}}


@pytest.fixture
def client() -> Iterator[HttpClient]:
    transport = SyncASGITransport(create_app())
    with HttpClient(transport=transport, base_url="http://reference.test") as test_client:
        yield test_client


def _bind(client: HttpClient, capability: Any) -> Any:
    return client.post("/v1/bindings", json={"name": "ops", "capability": capability},
                       headers=FULL)


def _error(response: Any) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert isinstance(error, dict)
    return error


def test_a_declaration_is_kept_as_sent_and_read_as_a_policy(client: HttpClient) -> None:
    made = _bind(client, ORDER_READ)
    assert made.status_code == 201, made.text
    binding_id = made.json()["binding_id"]
    assert made.json()["capability"] == ORDER_READ
    assert client.get(f"/v1/bindings/{binding_id}", headers=FULL).json()["capability"] == \
        ORDER_READ
    policy = client.get(f"/v1/bindings/{binding_id}/policy", headers=FULL).json()
    assert policy == {
        "binding_id": binding_id, "declared": True, "agent_facing": True, "readonly": True,
        "idempotent": True, "timeout_ms": 5000, "timeout_source": "declared",
        "rate_limit": {"count": 60, "window": "1m"}, "retries_allowed": True,
        "subject_required": True, "audit_sensitive": True, "risk_level": "low", "local": None}
    assert client.get(f"/v1/bindings/{binding_id}/policy", headers=OTHER).status_code == 404


def test_missing_hints_take_their_conservative_values_and_none_is_derived(
    client: HttpClient,
) -> None:
    """CAP-04: `readonly: true` alone says nothing of idempotency, and the reverse."""
    for execution, readonly, idempotent in (({"readonly": True}, True, False),
                                            ({"idempotent": True}, False, True), ({}, False,
                                                                                  False)):
        made = _bind(client, {"version": 1, "scope": "x", "enabled": True,
                              "execution": execution})
        policy = client.get(f"/v1/bindings/{made.json()['binding_id']}/policy",
                            headers=FULL).json()
        assert (policy["readonly"], policy["idempotent"]) == (readonly, idempotent)
        assert (policy["timeout_ms"], policy["timeout_source"]) == (60_000, "default")
        assert policy["rate_limit"] is None


def test_a_binding_without_a_declaration_answers_as_before(client: HttpClient) -> None:
    made = client.post("/v1/bindings", json={"name": "plain"}, headers=FULL)
    assert made.json() == {"binding_id": made.json()["binding_id"], "name": "plain",
                           "description": ""}
    policy = client.get(f"/v1/bindings/{made.json()['binding_id']}/policy",
                        headers=FULL).json()
    assert (policy["declared"], policy["agent_facing"]) == (False, True)


@pytest.mark.parametrize(("change", "path"), [
    ({"version": 2}, "/capability/version"),
    ({"version": True}, "/capability/version"),
    ({"version": 1.0}, "/capability/version"),
    ({"version": "1"}, "/capability/version"),
    ({"scope": ""}, "/capability/scope"),
    ({"scope": "has space"}, "/capability/scope"),
    ({"enabled": "yes"}, "/capability/enabled"),
    ({"risk": {"level": "severe"}}, "/capability/risk/level"),
    ({"subject": {"required": 1}}, "/capability/subject/required"),
    ({"audit": {"sensitive": None}}, "/capability/audit/sensitive"),
    ({"execution": {"timeout_ms": 0}}, "/capability/execution/timeout_ms"),
    ({"execution": {"timeout_ms": 1.5}}, "/capability/execution/timeout_ms"),
    ({"execution": {"readonly": "true"}}, "/capability/execution/readonly"),
    ({"execution": {"rate_limit": {"count": 0, "window": "1m"}}},
     "/capability/execution/rate_limit/count"),
    ({"execution": {"rate_limit": {"count": 1, "window": "0s"}}},
     "/capability/execution/rate_limit/window"),
    ({"execution": {"rate_limit": {"count": 1, "window": "1 minute"}}},
     "/capability/execution/rate_limit/window"),
    ({"execution": {"retries": 3}}, "/capability/execution/retries"),
])
def test_a_broken_declaration_is_refused_naming_its_path(
    client: HttpClient, change: dict[str, Any], path: str
) -> None:
    error = _error(_bind(client, {"version": 1, "scope": "order.read", "enabled": True,
                                  **change}))
    assert (error["code"], error["path"]) == ("validation_failed", path)


def test_an_unknown_version_is_refused_by_name(client: HttpClient) -> None:
    error = _error(_bind(client, {"version": 2, "scope": "order.read"}))
    assert "version 2 is not known" in error["message"]
    missing = _error(_bind(client, {"scope": "order.read"}))
    assert missing["path"] == "/capability/version"


def test_a_tool_set_may_not_name_an_operation_not_enabled(client: HttpClient) -> None:
    """CAP-02: `enabled: false`, and a declaration that does not say `enabled: true`."""
    for enabled in ({"enabled": False}, {}):
        made = _bind(client, {"version": 1, "scope": "refund.create", **enabled})
        tool = {"name": "refund", "description": "Refund.", "binding_id":
                made.json()["binding_id"], "input_schema": {"type": "object"},
                "output_schema": {"type": "object"}}
        plain = client.post("/v1/bindings", json={"name": "plain"}, headers=FULL).json()
        answer = client.post("/v1/tool-sets", headers=FULL, json={"name": "ops", "tools": [
            {**tool, "name": "other", "binding_id": plain["binding_id"]}, tool]})
        error = _error(answer)
        assert (error["code"], error["path"]) == ("capability_disabled", "/tools/1/binding_id")


@pytest.mark.parametrize(("window", "ms"), [("250ms", 250), ("1s", 1000), ("1m", 60_000),
                                            ("2h", 7_200_000), ("1d", 86_400_000)])
def test_windows_in_milliseconds(window: str, ms: int) -> None:
    assert window_ms(window) == ms


def _local(client: HttpClient, binding_id: str, body: Any) -> Any:
    return client.put(f"/v1/bindings/{binding_id}/local-policy", json=body, headers=FULL)


def test_a_local_policy_that_tightens_is_applied_and_cleared_by_an_empty_one(
    client: HttpClient,
) -> None:
    binding_id = _bind(client, ORDER_READ).json()["binding_id"]
    tight = {"timeout_ms": 2000, "rate_limit": {"count": 10, "window": "10s"}, "retries": False}
    answer = _local(client, binding_id, tight)
    assert answer.status_code == 200, answer.text
    policy = client.get(f"/v1/bindings/{binding_id}/policy", headers=FULL).json()
    assert policy == answer.json()
    assert (policy["timeout_ms"], policy["timeout_source"]) == (2000, "local")
    assert policy["rate_limit"] == {"count": 10, "window": "10s"}  # 6 x 10 s: 60 a minute
    assert (policy["retries_allowed"], policy["idempotent"], policy["local"]) == (
        False, True, tight)
    cleared = _local(client, binding_id, {}).json()
    assert (cleared["timeout_ms"], cleared["retries_allowed"]) == (5000, True)


@pytest.mark.parametrize(("execution", "local", "path"), [
    ({"timeout_ms": 5000}, {"timeout_ms": 5001}, "/timeout_ms"),
    ({}, {"timeout_ms": 60_001}, "/timeout_ms"),  # the default wait bounds it too
    ({"rate_limit": {"count": 60, "window": "1m"}}, {"rate_limit": {"count": 61, "window": "1h"}},
     "/rate_limit/count"),
    ({"rate_limit": {"count": 60, "window": "1m"}}, {"rate_limit": {"count": 50, "window": "50s"}},
     "/rate_limit/window"),  # two 50 s windows fit a minute: 100 > 60
    ({"rate_limit": {"count": 60, "window": "1m"}}, {"rate_limit": {"count": 11, "window": "10s"}},
     "/rate_limit/window"),
    ({"idempotent": False}, {"retries": True}, "/retries"),
    ({}, {"retries": True}, "/retries"),
])
def test_a_local_policy_that_loosens_is_refused_naming_the_field(
    client: HttpClient, execution: dict[str, Any], local: dict[str, Any], path: str
) -> None:
    binding_id = _bind(client, {"version": 1, "scope": "x", "enabled": True,
                                "execution": execution}).json()["binding_id"]
    before = client.get(f"/v1/bindings/{binding_id}/policy", headers=FULL).json()
    error = _error(_local(client, binding_id, local))
    assert (error["code"], error["path"]) == ("policy_loosens", path)
    assert client.get(f"/v1/bindings/{binding_id}/policy", headers=FULL).json() == before


def test_a_local_policy_for_a_binding_without_a_declaration_tightens_the_defaults(
    client: HttpClient,
) -> None:
    binding_id = client.post("/v1/bindings", json={"name": "plain"},
                             headers=FULL).json()["binding_id"]
    assert _local(client, binding_id, {"timeout_ms": 1000}).json()["timeout_ms"] == 1000
    assert _error(_local(client, binding_id, {"retries": True}))["path"] == "/retries"
    assert _error(_local(client, binding_id, {"timeout_ms": None}))["path"] == "/timeout_ms"
    assert _local(client, "bnd-999999", {}).status_code == 404
