"""Reading an OpenAPI 3.0 / 3.1 document's operations as agent tools (CAP-02, CAP-03, CAP-15).

Each operation is listed with what becomes of it: `imported` (declared with `enabled: true`:
a binding carrying its declaration and a tool named by its `scope`), `undeclared` (no
`x-agent-capability`) or `disabled` (a declaration that does not say `enabled: true`); the
last two are never agent-facing. A tool's input schema is built from the operation's
parameters and JSON request body with every `$ref` inlined. The HTTP method is recorded and
read for nothing else: `readonly` comes from the declaration only (CAP-03).

`$ref`s are looked up with `referencing` (the JSON-reference library `jsonschema` is built
on): it reads pointers with their escapes and percent-encoding, and it follows nothing outside
the document, since its registry holds the document alone and retrieves nothing. What the
reference profile decides (docs/capabilities.md): every refusal is 422 naming the JSON Pointer
of the member at fault under `/document`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote

from pydantic import ValidationError
from referencing import Registry, Resource, Specification
from referencing.exceptions import Unresolvable

from arck.reference.canonical import pointer_token
from arck.reference.capability import CapabilityDeclaration
from arck.reference.errors import ValidationFailed
from arck.reference.models import validation_failed

__all__ = ["DECLARATION", "METHODS", "ImportedOperation", "Reader", "read_operations"]

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
DECLARATION = "x-agent-capability"
_VERSION = re.compile(r"^3\.[01]\.\d+$")
_JSON_MEDIA = re.compile(r"^application/([A-Za-z0-9.!#$&^_-]+\+)?json$")
_LOCATIONS = ("path", "query", "header", "cookie")
_BASE = "urn:arck:openapi-document"
# An input schema inlines what it refers to: a document that refers to one schema twice at
# each of twenty levels would inline a million. Past this many members it is refused.
MAX_INLINED = 100_000
Status = Literal["imported", "undeclared", "disabled"]


@dataclass(frozen=True)
class ImportedOperation:
    pointer: str  # where the operation is in the document
    method: str
    path: str
    operation_id: str | None
    status: Status
    declaration: CapabilityDeclaration | None
    description: str
    input_schema: dict[str, Any] | None  # None unless imported
    output_schema: dict[str, Any] | None


def _is_json(media_type: str) -> bool:
    """`application/json` or `application/*+json`, parameters and case aside."""
    return _JSON_MEDIA.match(media_type.split(";")[0].strip().lower()) is not None


def _refused(at: str, why: str) -> ValidationFailed:
    path = "/document" + at
    return ValidationFailed(f"{path}: {why}", path)


def read_operations(document: object, reader: type[Reader] | None = None
                    ) -> list[ImportedOperation]:
    """Every operation of `document`, in document order, or a 422 naming what is wrong
    (`reader`: a mutant's seam)."""
    if not isinstance(document, dict):
        raise _refused("", "must be a JSON object: an OpenAPI 3.0 or 3.1 document")
    version = document.get("openapi")
    if not isinstance(version, str) or not _VERSION.match(version):
        raise _refused("/openapi", "must name OpenAPI 3.0 or 3.1 (\"3.0.x\" or \"3.1.x\")")
    paths = document.get("paths", {})
    if not isinstance(paths, dict):
        raise _refused("/paths", "must be a JSON object")
    read = (reader or Reader)(document, siblings_apply=version.startswith("3.1."))
    found = [read.operation(*where) for where in read.walk(paths)]
    scopes: dict[str, str] = {}
    for operation in found:
        if operation.status == "imported" and operation.declaration is not None:
            scope = operation.declaration.scope
            if scope in scopes:
                raise _refused(f"{operation.pointer}/{DECLARATION}/scope",
                               f"scope {scope!r} is also the scope of {scopes[scope]}: a scope "
                               "names one tool")
            scopes[scope] = operation.pointer
    return found


class Reader:
    """Resolves the document's `$ref`s and builds each operation's schemas."""

    def __init__(self, document: dict[str, Any], *, siblings_apply: bool) -> None:
        resource: Resource[Any] = Specification.OPAQUE.create_resource(document)
        self.resolver = Registry().with_resource(_BASE, resource).resolver(_BASE)
        self.siblings_apply = siblings_apply  # 3.1: members beside a $ref apply; 3.0: ignored
        self.inlined = 0

    def walk(self, paths: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any], str]]:
        """(path, method, path item, where the item is) for each operation."""
        for path, item in paths.items():
            item, at = self.follow(item, "/paths/" + pointer_token(path))
            if not isinstance(item, dict):
                raise _refused(at, "a path item must be a JSON object")
            for method in item:  # in the document's order
                if method in METHODS:
                    yield path, method, item, at

    def lookup(self, ref: object, at: str) -> tuple[Any, str]:
        """What a `$ref` names, and where that is in the document."""
        if not isinstance(ref, str):
            raise _refused(at, "$ref must be a string")
        try:
            found = self.resolver.lookup(ref)
        except (Unresolvable, LookupError, ValueError, TypeError):
            raise _refused(at, f"{ref[:200]!r} names nothing in this document (references to "
                               "other documents are not followed)") from None
        return found.contents, unquote(ref.partition("#")[2])

    def follow(self, value: Any, at: str) -> tuple[Any, str]:
        """A Reference Object followed to what it names (however many hops), else `value`."""
        seen: set[str] = set()
        while isinstance(value, dict) and "$ref" in value:
            if at in seen:
                raise _refused(at + "/$ref", "this reference leads back to itself")
            seen.add(at)
            value, at = self.lookup(value["$ref"], at + "/$ref")
        return value, at

    def operation(self, path: str, method: str, item: dict[str, Any],
                  item_at: str) -> ImportedOperation:
        at = f"{item_at}/{method}"
        operation = item[method]
        if not isinstance(operation, dict):
            raise _refused(at, "an operation must be a JSON object")
        operation_id = operation.get("operationId")
        operation_id = operation_id if isinstance(operation_id, str) else None
        described = operation.get("description") or operation.get("summary")
        description = described if isinstance(described, str) else f"{method.upper()} {path}"
        declared = operation.get(DECLARATION)
        if declared is None and DECLARATION not in operation:
            return ImportedOperation(at, method, path, operation_id, "undeclared", None,
                                     description, None, None)
        try:
            declaration = CapabilityDeclaration.model_validate(declared, strict=True)
        except ValidationError as exc:
            raise validation_failed(exc, f"/document{at}/{DECLARATION}") from None
        if declaration.enabled is not True:
            return ImportedOperation(at, method, path, operation_id, "disabled", declaration,
                                     description, None, None)
        return ImportedOperation(
            at, method, path, operation_id, "imported", declaration, description,
            self.input_schema(item, item_at, operation, at), self.output_schema(operation, at))

    def input_schema(self, item: dict[str, Any], item_at: str, operation: dict[str, Any],
                     at: str) -> dict[str, Any]:
        """Parameters by name, the JSON body as `body`: one object a model fills in."""
        properties: dict[str, Any] = {}
        required: list[str] = []
        where: dict[str, str] = {}
        for parameter, p_at in self.parameters(item, item_at, operation, at):
            name, location = parameter["name"], parameter["in"]
            if name in where:
                raise _refused(p_at, f"parameter {name!r} ({location}) has the name of another "
                                     f"input of this operation ({where[name]}): one tool input "
                                     "cannot hold both")
            where[name] = location
            properties[name] = self.parameter_schema(parameter, p_at)
            if location == "path" or parameter.get("required") is True:
                required.append(name)
        if "requestBody" in operation:
            body, b_at = self.follow(operation["requestBody"], at + "/requestBody")
            if not isinstance(body, dict):
                raise _refused(b_at, "a request body must be a JSON object")
            if "body" in where:
                raise _refused(b_at, f"the request body is the input `body`, and so is a "
                                     f"parameter ({where['body']}): one tool input cannot hold "
                                     "both")
            properties["body"] = self.media_schema(body.get("content"), b_at + "/content")
            if body.get("required") is True:
                required.append("body")
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema

    def parameters(self, item: dict[str, Any], item_at: str, operation: dict[str, Any],
                   at: str) -> list[tuple[dict[str, Any], str]]:
        """The path item's parameters, each replaced by the operation's of the same name and
        location."""
        chosen: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}
        for owner, owner_at in ((item, item_at), (operation, at)):
            listed = owner.get("parameters", [])
            if not isinstance(listed, list):
                raise _refused(owner_at + "/parameters", "must be a JSON array")
            for i, entry in enumerate(listed):
                parameter, p_at = self.follow(entry, f"{owner_at}/parameters/{i}")
                if not isinstance(parameter, dict):
                    raise _refused(p_at, "a parameter must be a JSON object")
                if not isinstance(parameter.get("name"), str):
                    raise _refused(p_at + "/name", "a parameter's name must be a string")
                if parameter.get("in") not in _LOCATIONS:
                    raise _refused(p_at + "/in", f"must be one of {', '.join(_LOCATIONS)}")
                chosen[(parameter["name"], parameter["in"])] = (parameter, p_at)
        return list(chosen.values())

    def parameter_schema(self, parameter: dict[str, Any], at: str) -> Any:
        if "schema" in parameter:
            return self.inline(parameter["schema"], at + "/schema", ())
        if "content" in parameter:
            return self.media_schema(parameter["content"], at + "/content")
        return {}  # a parameter that says nothing of its value takes any

    def media_schema(self, content: object, at: str) -> Any:
        """The schema of the JSON media type of a `content` map."""
        if not isinstance(content, dict):
            raise _refused(at, "must be a JSON object of media types")
        for media_type, media in content.items():
            if _is_json(media_type):
                m_at = f"{at}/{pointer_token(media_type)}"
                if not isinstance(media, dict):
                    raise _refused(m_at, "a media type must be a JSON object")
                return self.inline(media.get("schema", {}), m_at + "/schema", ())
        raise _refused(at, "no JSON media type (application/json or application/*+json): a "
                           "tool's input and output are JSON")

    def output_schema(self, operation: dict[str, Any], at: str) -> dict[str, Any]:
        """The lowest 2xx answer's JSON schema; any JSON when none is given."""
        responses = operation.get("responses", {})
        if not isinstance(responses, dict):
            raise _refused(at + "/responses", "must be a JSON object")
        for code in sorted(c for c in responses if re.fullmatch(r"2[0-9X]{2}", str(c))):
            answer, a_at = self.follow(responses[code], f"{at}/responses/{pointer_token(code)}")
            content = answer.get("content") if isinstance(answer, dict) else None
            if isinstance(content, dict) and any(map(_is_json, content)):
                schema = self.media_schema(content, a_at + "/content")
                return schema if isinstance(schema, dict) else {}
        return {}

    def inline(self, value: Any, at: str, stack: tuple[str, ...]) -> Any:
        """`value` with every `$ref` replaced by what it names, recursively; a reference that
        leads back into itself is refused (a tool's schema is finite)."""
        self.inlined += 1
        if self.inlined > MAX_INLINED:
            raise _refused(at, f"the schemas refer to one another so often that inlining them "
                               f"passes {MAX_INLINED:,} members")
        if isinstance(value, list):
            return [self.inline(v, f"{at}/{i}", stack) for i, v in enumerate(value)]
        if not isinstance(value, dict):
            return value
        if "$ref" in value and isinstance(value["$ref"], str):
            target, t_at = self.lookup(value["$ref"], at + "/$ref")
            if t_at in stack:
                raise _refused(at + "/$ref", "a recursive reference: a tool's input schema "
                                             "must be finite once its references are inlined")
            inlined = self.inline(target, t_at, (*stack, t_at))
            siblings = {k: self.inline(v, f"{at}/{pointer_token(k)}", stack)
                        for k, v in value.items() if k != "$ref"} if self.siblings_apply else {}
            if not siblings:
                return inlined
            # members beside a $ref apply with what it names: all of them must hold
            return {"allOf": [inlined], **siblings}
        return {k: self.inline(v, f"{at}/{pointer_token(k)}", stack) for k, v in value.items()}

