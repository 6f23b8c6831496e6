"""OpenAPI documents for the import checks (CAP-02, CAP-03, CAP-15), with what an importer
must make of them known by construction.

Each operation's input schema is drawn first, whole; the document is then written from it with
parts moved into `components` behind `$ref`s (chains of them, under names that need JSON
Pointer escapes and percent-encoding), parameters shared by a path item and overridden by an
operation. So the expected tool is what was drawn, and no resolver of arck's judges another's.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st

from arck.conformance import capability_cases

__all__ = ["import_cases", "pointer_token", "ref_to", "status", "where"]

METHODS = ("get", "put", "post", "delete", "patch", "head")
# component names a JSON Pointer must escape (`/`, `~`) or a URI fragment percent-encode
_NAMES = st.sampled_from(["Order", "line/item", "v~2", "with space", "prix €", "a%b",
                          "x~1y", "Ünïcode", "q?#"])
_PARAM_NAMES = ("id", "limit", "cursor", "X-Trace", "lang", "after")
# Built once: a strategy built anew at each draw is validated anew (most of a draw's cost).
_BOOLEANS = st.booleans()
_HOPS = st.integers(0, 4)
_PATHS = st.integers(1, 3)
_METHODS = st.lists(st.sampled_from(METHODS), min_size=1, max_size=3, unique=True)
_VERSIONS = st.sampled_from(["3.0.3", "3.1.0"])
_KINDS = st.sampled_from(["imported", "imported", "imported", "undeclared", "disabled"])
_OWN = st.lists(st.sampled_from(_PARAM_NAMES[1:]), max_size=2, unique=True)


def pointer_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def ref_to(*segments: str) -> dict[str, str]:
    """A `$ref` to `#/segments…`, escaped as RFC 6901 and RFC 3986 require."""
    pointer = "".join("/" + pointer_token(s) for s in segments)
    return {"$ref": "#" + quote(pointer, safe="/~")}


@dataclass
class Expected:
    """One operation as an importer must read it (a case holds it as a dict: replayable)."""

    method: str
    path: str
    declaration: dict[str, Any] | None  # as written in the document; None: left out
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None


def status(operation: dict[str, Any]) -> str:
    """What an importer must make of an expected operation: CAP-02."""
    declaration = operation["declaration"]
    if declaration is None:
        return "undeclared"
    return "imported" if declaration.get("enabled") is True else "disabled"


def where(operation: dict[str, Any]) -> str:
    """An expected operation's JSON Pointer in its document."""
    return f"/paths/{pointer_token(operation['path'])}/{operation['method']}"


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.just({"type": "string"}), st.just({"type": "integer", "minimum": 0}),
        st.just({"type": "boolean"}), st.just({"type": "string", "enum": ["a", "b"]}),
        st.just({"type": "string", "description": "ünïcödé ✓ 👩‍👩‍👧"}))


@functools.cache
def _declarations(profile: bool, enabled: bool) -> st.SearchStrategy[dict[str, Any]]:
    return capability_cases.declarations(profile, enabled=enabled)


@functools.cache
def schemas() -> st.SearchStrategy[dict[str, Any]]:
    """Small JSON Schemas: leaves, objects of them, arrays of them, a few levels deep."""
    return st.recursive(_leaf(), lambda inner: st.one_of(
        st.builds(lambda items: {"type": "array", "items": items}, inner),
        st.dictionaries(st.sampled_from(["a", "b", "c~", "d/e"]), inner, min_size=1,
                        max_size=3).map(lambda props: {"type": "object",
                                                       "properties": props})), max_leaves=6)


class _Writer:
    """Writes schemas into the document, each part moved behind a `$ref` where drawn."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.components: dict[str, dict[str, Any]] = {}

    def name(self, kind: str, base: str) -> str:
        taken = self.components.setdefault(kind, {})
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}{n}"
        return name

    def put(self, kind: str, value: Any) -> dict[str, str]:
        """`value` stored in `components/kind`, and a `$ref` to it (sometimes via a second
        component that only refers to the first: a chain)."""
        name = self.name(kind, self.draw(_NAMES))
        self.components[kind][name] = value
        ref = ref_to("components", kind, name)
        if kind == "schemas" and self.draw(_HOPS) == 0:
            hop = self.name(kind, self.draw(_NAMES))
            self.components[kind][hop] = ref
            ref = ref_to("components", kind, hop)
        return ref

    def schema(self, schema: Any) -> Any:
        """`schema` as written: its parts, then maybe itself, behind references."""
        if not isinstance(schema, dict):
            return schema
        written = dict(schema)
        if isinstance(schema.get("items"), dict):
            written["items"] = self.schema(schema["items"])
        if isinstance(schema.get("properties"), dict):
            written["properties"] = {k: self.schema(v) for k, v in schema["properties"].items()}
        if self.draw(_BOOLEANS):
            return self.put("schemas", written)
        return written


def _parameter(writer: _Writer, name: str, where: str, schema: dict[str, Any],
               required: bool) -> dict[str, Any]:
    parameter: dict[str, Any] = {"name": name, "in": where, "schema": writer.schema(schema)}
    if required or where == "path":
        parameter["required"] = True
    elif writer.draw(_BOOLEANS):
        parameter["required"] = False
    if writer.draw(_BOOLEANS):
        return writer.put("parameters", parameter)
    return parameter


@st.composite
def import_cases(draw: st.DrawFn, profile: bool) -> dict[str, Any]:
    """`{"document", "operations"}`: a document of 1-3 paths with 1-3 operations each
    (undeclared, declared not enabled, or enabled with random hints: GETs without
    `readonly`, POSTs with it), and each operation as an importer must read it."""
    writer = _Writer(draw)
    paths: dict[str, Any] = {}
    operations: list[Expected] = []
    for p in range(draw(_PATHS)):
        path = f"/r{p}/{{id}}" if draw(_BOOLEANS) else f"/r{p}"
        item: dict[str, Any] = {}
        shared: dict[str, tuple[dict[str, Any], bool]] = {}
        if "{id}" in path:
            shared["id"] = ({"type": "string"}, True)
        if draw(_BOOLEANS):
            shared["limit"] = ({"type": "integer"}, False)
        if shared:
            item["parameters"] = [
                _parameter(writer, n, "path" if n == "id" else "query", s, r)
                for n, (s, r) in shared.items()]
        for method in draw(_METHODS):
            operation, expected = _operation(draw, writer, path, method, shared, profile)
            if expected.declaration is not None:  # scopes unique in the document
                expected.declaration["scope"] = f"arck.import.{len(operations)}"
            operations.append(expected)
            item[method] = operation
        paths[path] = item
    version = draw(_VERSIONS)
    document = {"openapi": version, "info": {"title": "arck import", "version": "1"},
                "paths": paths}
    if writer.components:
        document["components"] = writer.components
    return {"document": document, "operations": [asdict(op) for op in operations]}


def _operation(draw: st.DrawFn, writer: _Writer, path: str, method: str,
               shared: dict[str, tuple[dict[str, Any], bool]],
               profile: bool) -> tuple[dict[str, Any], Expected]:
    kind = draw(_KINDS)
    operation: dict[str, Any] = {"responses": {"default": {"description": "any"}}}
    declaration: dict[str, Any] | None = None
    if kind != "undeclared":
        declaration = draw(_declarations(profile, kind == "imported"))
        operation["x-agent-capability"] = declaration
    expected = Expected(method, path, declaration)
    properties = {name: schema for name, (schema, _) in shared.items()}
    required = {name for name, (_, req) in shared.items() if req}
    own: list[dict[str, Any]] = []
    for name in draw(_OWN):
        schema, req = draw(schemas()), draw(_BOOLEANS)
        where = "header" if name.startswith("X-") else "query"
        if name == "limit" and "limit" in shared:
            where = "query"  # the operation's own `limit` replaces the path item's
        own.append(_parameter(writer, name, where, schema, req))
        properties[name] = schema
        required.discard(name)
        if req:
            required.add(name)
    if own:
        operation["parameters"] = own
    if draw(_BOOLEANS):
        schema, req = draw(schemas()), draw(_BOOLEANS)
        body: dict[str, Any] = {"content": {"application/json": {"schema": writer.schema(schema)}}}
        if req or draw(_BOOLEANS):
            body["required"] = req
        operation["requestBody"] = writer.put("requestBodies", body) \
            if draw(_BOOLEANS) else body
        properties["body"] = schema
        if req:
            required.add("body")
    if draw(_BOOLEANS):
        schema = draw(schemas())
        operation["responses"]["200"] = {
            "description": "ok", "content": {"application/json": {
                "schema": writer.schema(schema)}}}
        expected.output_schema = schema
    else:
        expected.output_schema = {}
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = sorted(required)
    input_schema["additionalProperties"] = False
    expected.input_schema = input_schema
    return operation, expected
