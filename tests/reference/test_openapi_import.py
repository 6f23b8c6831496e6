"""The reference's OpenAPI import (CAP-02, 03, 15): drawn documents read as drawn, each refusal
naming where, and an import applied whole or not at all."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from httpx import Client as HttpClient
from hypothesis import HealthCheck, given, settings

from arck.conformance import openapi_cases as cases
from arck.reference.app import create_app
from arck.reference.errors import ValidationFailed
from arck.reference.openapi import MAX_INLINED, read_operations
from arck.simulator.asgi import SyncASGITransport

FULL = {"Authorization": "Bearer arck-dev-full"}
READER = {"Authorization": "Bearer arck-dev-configread"}
ENABLED = {"version": 1, "enabled": True, "scope": "order.read"}


@pytest.fixture
def client() -> Iterator[HttpClient]:
    transport = SyncASGITransport(create_app())
    with HttpClient(transport=transport, base_url="http://reference.test") as test_client:
        yield test_client


def _document(operation: dict[str, Any], **components: Any) -> dict[str, Any]:
    document: dict[str, Any] = {"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
                                "paths": {"/orders/{id}": {"post": operation}}}
    if components:
        document["components"] = components
    return document


def _refused_at(document: Any) -> str:
    with pytest.raises(ValidationFailed) as refused:
        read_operations(document)
    assert refused.value.message.startswith(refused.value.path), refused.value.message
    return refused.value.path


@given(case=cases.import_cases(profile=True))
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_drawn_document_is_read_as_drawn(case: dict[str, Any]) -> None:
    """The checks' oracle (built by construction) and the importer (resolving with
    `referencing`) agree on every operation: status, tool input and output."""
    found = read_operations(copy.deepcopy(case["document"]))
    assert [(op.pointer, op.status) for op in found] == [
        (cases.where(op), cases.status(op)) for op in case["operations"]]
    for op, drawn in zip(found, case["operations"], strict=True):
        if op.status != "imported":
            assert op.input_schema is None
            continue
        assert op.input_schema is not None
        got, want = dict(op.input_schema), dict(drawn["input_schema"])
        assert sorted(got.pop("required", [])) == sorted(want.pop("required", []))
        assert got == want
        assert op.output_schema == drawn["output_schema"]


def test_escaped_and_percent_encoded_references_are_followed() -> None:
    name = "line/item ~€"
    document = _document({"x-agent-capability": ENABLED, "parameters": [
        {"name": "q", "in": "query", "schema": cases.ref_to("components", "schemas", name)}]},
        schemas={name: {"type": "integer"}})
    (op,) = read_operations(document)
    assert op.input_schema == {"type": "object", "properties": {"q": {"type": "integer"}},
                               "additionalProperties": False}


def test_members_beside_a_ref_apply_in_3_1_and_are_ignored_in_3_0() -> None:
    operation = {"x-agent-capability": ENABLED, "requestBody": {"content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/A", "maxLength": 3}}}}}
    document = _document(operation, schemas={"A": {"type": "string"}})
    (op,) = read_operations(document)
    assert op.input_schema is not None
    assert op.input_schema["properties"]["body"] == {"allOf": [{"type": "string"}],
                                                     "maxLength": 3}
    (op,) = read_operations({**document, "openapi": "3.0.3"})
    assert op.input_schema is not None
    assert op.input_schema["properties"]["body"] == {"type": "string"}


@pytest.mark.parametrize(("operation", "components", "path"), [
    ({"x-agent-capability": {**ENABLED, "version": 2}}, {},
     "/document/paths/~1orders~1{id}/post/x-agent-capability/version"),
    ({"x-agent-capability": ENABLED, "parameters": {"id": 1}}, {},
     "/document/paths/~1orders~1{id}/post/parameters"),
    ({"x-agent-capability": ENABLED, "parameters": [{"name": "id"}]}, {},
     "/document/paths/~1orders~1{id}/post/parameters/0/in"),
    ({"x-agent-capability": ENABLED, "parameters": [
        {"name": "id", "in": "path"}, {"name": "id", "in": "query"}]}, {},
     "/document/paths/~1orders~1{id}/post/parameters/1"),
    ({"x-agent-capability": ENABLED, "parameters": [{"name": "body", "in": "query"}],
      "requestBody": {"content": {"application/json": {}}}}, {},
     "/document/paths/~1orders~1{id}/post/requestBody"),
    ({"x-agent-capability": ENABLED, "requestBody": {"content": {"text/plain": {}}}}, {},
     "/document/paths/~1orders~1{id}/post/requestBody/content"),
    ({"x-agent-capability": ENABLED, "parameters": [{"$ref": "#/components/parameters/No"}]},
     {}, "/document/paths/~1orders~1{id}/post/parameters/0/$ref"),
    ({"x-agent-capability": ENABLED, "parameters": [
        {"name": "q", "in": "query", "schema": {"$ref": "https://example.com/s.json"}}]}, {},
     "/document/paths/~1orders~1{id}/post/parameters/0/schema/$ref"),
    ({"x-agent-capability": ENABLED, "parameters": [
        {"name": "q", "in": "query", "schema": {"$ref": "#/components/schemas/Node"}}]},
     {"schemas": {"Node": {"items": {"$ref": "#/components/schemas/Node"}}}},
     "/document/components/schemas/Node/items/$ref"),
    ({"x-agent-capability": ENABLED, "parameters": [{"$ref": "#/components/parameters/A"}]},
     {"parameters": {"A": {"$ref": "#/components/parameters/A"}}},
     "/document/components/parameters/A/$ref"),
])
def test_a_broken_operation_is_refused_naming_where(
    operation: dict[str, Any], components: dict[str, Any], path: str
) -> None:
    assert _refused_at(_document(operation, **components)) == path


def test_a_document_that_is_not_openapi_3_is_refused() -> None:
    assert _refused_at([]) == "/document"
    assert _refused_at({"swagger": "2.0", "paths": {}}) == "/document/openapi"
    assert _refused_at({"openapi": "3.2", "paths": {}}) == "/document/openapi"
    assert _refused_at({"openapi": "3.0.0", "paths": []}) == "/document/paths"


def test_two_operations_of_one_scope_are_refused_at_the_second() -> None:
    document = _document({"x-agent-capability": ENABLED})
    document["paths"]["/orders/{id}"]["get"] = {"x-agent-capability": ENABLED}
    assert _refused_at(document) == "/document/paths/~1orders~1{id}/get/x-agent-capability/scope"


def test_references_that_multiply_are_refused_past_the_bound() -> None:
    """Each level refers to the next twice: 2^20 members once inlined."""
    schemas = {f"L{i}": {"type": "array", "items": [
        {"$ref": f"#/components/schemas/L{i + 1}"}, {"$ref": f"#/components/schemas/L{i + 1}"}]}
        for i in range(20)}
    schemas["L20"] = {"type": "string"}
    document = _document({"x-agent-capability": ENABLED, "requestBody": {"content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/L0"}}}}},
        schemas=schemas)
    with pytest.raises(ValidationFailed, match=f"{MAX_INLINED:,}"):
        read_operations(document)


def test_an_import_makes_bindings_and_a_tool_set_read_back(client: HttpClient) -> None:
    document = _document({"operationId": "update", "summary": "Update an order",
                          "x-agent-capability": {**ENABLED, "execution": {"readonly": True}},
                          "parameters": [{"name": "id", "in": "path",
                                          "schema": {"type": "string"}}]})
    document["paths"]["/orders/{id}"]["get"] = {"responses": {}}
    answer = client.post("/v1/openapi-imports", json={"name": "orders", "document": document},
                         headers=FULL)
    assert answer.status_code == 201, answer.text
    made = answer.json()
    (tool,) = made["tool_set"]["tools"]
    assert tool["name"] == "order.read"
    assert tool["description"] == "Update an order"
    assert made["operations"] == [
        {"pointer": "/paths/~1orders~1{id}/post", "method": "post", "path": "/orders/{id}",
         "operation_id": "update", "status": "imported", "binding_id": tool["binding_id"],
         "tool": "order.read"},
        {"pointer": "/paths/~1orders~1{id}/get", "method": "get", "path": "/orders/{id}",
         "operation_id": None, "status": "undeclared", "binding_id": None, "tool": None}]
    policy = client.get(f"/v1/bindings/{tool['binding_id']}/policy", headers=FULL).json()
    assert policy["readonly"] is True  # a POST, read-only because declared so (CAP-03)
    read = client.get(f"/v1/tool-sets/{made['tool_set']['tool_set_id']}", headers=FULL)
    assert read.json() == made["tool_set"]


def test_a_refused_import_applies_nothing(client: HttpClient) -> None:
    good = {"x-agent-capability": ENABLED}
    document = _document(good)
    document["paths"]["/later"] = {"get": {"x-agent-capability": {**ENABLED, "scope": "x",
                                                                  "version": "1"}}}
    refused = client.post("/v1/openapi-imports", json={"name": "n", "document": document},
                          headers=FULL)
    assert refused.status_code == 422, refused.text
    made = client.post("/v1/bindings", json={"name": "after"}, headers=FULL).json()
    assert made["binding_id"] == "bnd-000001"  # no binding of the refused import was kept


def test_importing_needs_configuration_write(client: HttpClient) -> None:
    body = {"name": "n", "document": _document({"x-agent-capability": ENABLED})}
    assert client.post("/v1/openapi-imports", json=body).status_code == 401
    denied = client.post("/v1/openapi-imports", json=body, headers=READER)
    assert denied.status_code == 403, denied.text
