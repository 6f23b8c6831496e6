"""CAP-02, CAP-03, CAP-04, CAP-15: importing an OpenAPI document. Only operations declared
`enabled: true` become tools; `readonly` and `idempotent` come from the declaration alone,
whatever the HTTP method says; under the reference profile each tool is named by its scope
and takes its parameters and JSON body with every `$ref` inlined. A broken declaration or a
`$ref` that names nothing is refused, naming where. The documents and what must come of them
are drawn together (`conformance/openapi_cases.py`): the oracle resolves nothing itself."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from arck.conformance import capability_cases
from arck.conformance import openapi_cases as cases
from arck.conformance.checking import expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotApplicable
from arck.conformance.judge import answer, names, refused
from arck.simulator.target import Exchange, ImportTarget

_HOW = "docs/capabilities.md#openapi-import-cap-15"


def _importer(ctx: CheckContext) -> ImportTarget:
    if not isinstance(ctx.target, ImportTarget):
        raise NotApplicable(f"the target imports no OpenAPI documents ({_HOW}): it has no "
                            "import_openapi step")
    return ctx.target


def _import(ctx: CheckContext, document: Any) -> Exchange:
    exchange = _importer(ctx).import_openapi(ctx.name("imported"), document)
    if exchange.status in (404, 405, 501):
        raise NotApplicable(f"the target imports no OpenAPI documents ({_HOW}): importing "
                            f"one answered {exchange.describe()[:300]}")
    return exchange


def _without_order(schema: Any) -> Any:
    """A tool input schema with its `required` as a set: its order means nothing."""
    if isinstance(schema, dict) and isinstance(schema.get("required"), list):
        return {**schema, "required": sorted(schema["required"], key=str)}
    return schema


def _classic(method: str, execution: dict[str, Any]) -> dict[str, Any]:
    """A one-operation document: the classic traps of reading hints from the method."""
    declaration = {"version": 1, "enabled": True, "scope": "arck.import.0",
                   "execution": execution}
    document = {"openapi": "3.1.0", "info": {"title": "classic", "version": "1"},
                "paths": {"/orders/{id}": {method: {
                    "x-agent-capability": declaration,
                    "parameters": [cases.ref_to("components", "parameters", "order/id")],
                    "responses": {"default": {"description": "any"}}}}},
                "components": {"parameters": {"order/id": {
                    "name": "id", "in": "path", "required": True,
                    "schema": {"type": "string"}}}}}
    expected_input = {"type": "object", "properties": {"id": {"type": "string"}},
                      "required": ["id"], "additionalProperties": False}
    return {"document": document, "operations": [
        {"method": method, "path": "/orders/{id}", "declaration": declaration,
         "input_schema": expected_input, "output_schema": {}}]}


def _cases(ctx: CheckContext) -> st.SearchStrategy[dict[str, Any]]:
    return cases.import_cases(ctx.profile == "reference")


@property_check("CAP-02", "CAP-03", "CAP-04", "CAP-15", cases=_cases, examples=(
    _classic("get", {}),  # a GET declared without readonly: possibly writing
    _classic("post", {"readonly": True}),  # a POST declared read-only: read-only
    _classic("put", {"readonly": False}),  # PUT is idempotent in HTTP, not by declaration
    _classic("delete", {"idempotent": True, "readonly": False})))
def test_an_import_reads_hints_from_declarations_only(ctx: CheckContext,
                                                     case: dict[str, Any]) -> None:
    """Every operation declared `enabled: true` becomes a tool on a binding whose policy reads
    `readonly` and `idempotent` from the declaration only (a GET is not read-only unless
    declared, a PUT not idempotent); an undeclared or disabled operation becomes none. Under
    the reference profile each tool is named by its scope and takes the operation's
    parameters and JSON body, `$ref`s inlined, as drawn."""
    exchange = _import(ctx, case["document"])
    data = answer(exchange, "CAP-15", example=case)
    tool_set = data.get("tool_set") if isinstance(data, dict) else None
    listed = data.get("operations") if isinstance(data, dict) else None
    expect(isinstance(tool_set, dict) and isinstance(tool_set.get("tools"), list)
           and isinstance(listed, list), "CAP-15",
           "an import answered as {tool_set: {tools: [...]}, operations: [...]}",
           exchange.describe)
    assert isinstance(tool_set, dict)
    assert isinstance(listed, list)
    tools = {t.get("binding_id"): t for t in tool_set["tools"] if isinstance(t, dict)}
    entries = {e.get("pointer"): e for e in listed if isinstance(e, dict)}
    expected = case["operations"]
    enabled = [op for op in expected if cases.status(op) == "imported"]
    expect(len(tool_set["tools"]) == len(enabled), "CAP-02",
           f"{len(enabled)} tool(s): one per operation declared enabled: true, none for the "
           f"{len(expected) - len(enabled)} undeclared or disabled",
           lambda: f"{len(tool_set['tools'])} tools: "
                   + json.dumps([t.get("name") for t in tool_set["tools"]])[:400])
    for op in expected:
        entry = entries.get(cases.where(op))
        expect(isinstance(entry, dict), "CAP-15", f"the operation {_label(op)} listed at "
               f"pointer {cases.where(op)}", lambda: json.dumps(listed)[:600])
        assert isinstance(entry, dict)
        if cases.status(op) == "imported":
            _judge_imported(ctx, op, entry, tools)
        else:
            _judge_left_out(ctx, op, entry)


def _label(op: dict[str, Any]) -> str:
    return f"{op['method'].upper()} {op['path']} ({cases.status(op)})"


def _judge_left_out(ctx: CheckContext, op: dict[str, Any], entry: dict[str, Any]) -> None:
    expect(entry.get("status") != "imported" and entry.get("binding_id") is None
           and entry.get("tool") is None, "CAP-02",
           f"{_label(op)}: not agent-facing, so neither a binding nor a tool",
           lambda: json.dumps(entry))
    if ctx.profile == "reference":
        expect(entry.get("status") == cases.status(op), "CAP-15",
               f"profile: {_label(op)} listed as {cases.status(op)}", lambda: json.dumps(entry))


def _judge_imported(ctx: CheckContext, op: dict[str, Any], entry: dict[str, Any],
                    tools: dict[Any, dict[str, Any]]) -> None:
    label = _label(op)
    binding_id = entry.get("binding_id")
    tool = tools.get(binding_id)
    expect(entry.get("status") == "imported" and isinstance(tool, dict), "CAP-02",
           f"{label}: a tool on the binding the import names", lambda: json.dumps(entry))
    assert isinstance(tool, dict)
    execution = op["declaration"].get("execution", {})
    policy_exchange = _importer(ctx).binding_policy(str(binding_id))
    policy = answer(policy_exchange, "CAP-03")
    readonly = execution.get("readonly") is True
    expect(policy.get("readonly") is readonly, "CAP-03",
           f"{label} declared {_hint(execution, 'readonly')}: readonly {readonly} whatever "
           "the method", policy_exchange.describe)
    idempotent = execution.get("idempotent") is True
    expect(policy.get("idempotent") is idempotent, "CAP-04",
           f"{label} declared {_hint(execution, 'idempotent')}: idempotent {idempotent} "
           "whatever the method", policy_exchange.describe)
    if ctx.profile != "reference":
        return
    scope = op["declaration"]["scope"]
    expect(tool.get("name") == scope and entry.get("tool") == scope, "CAP-15",
           f"profile: {label}'s tool named by its scope {scope!r}", lambda: json.dumps(entry))
    for member in ("input_schema", "output_schema"):
        want, seen = _without_order(op[member]), _without_order(tool.get(member))
        expect(seen == want, "CAP-15", f"profile: {label}'s {member}, every $ref inlined: "
               f"{json.dumps(want, ensure_ascii=False)[:600]}",
               json.dumps(seen, ensure_ascii=False)[:600] if seen != want else "")
    read = _importer(ctx).get_binding(str(binding_id))
    expect(answer(read, "CAP-15").get("capability") == op["declaration"], "CAP-15",
           f"profile: {label}'s binding carrying its declaration as written", read.describe)


def _hint(execution: dict[str, Any], hint: str) -> str:
    return f"{hint}: {json.dumps(execution[hint])}" if hint in execution else f"no {hint}"


@st.composite
def _broken(draw: st.DrawFn, profile: bool) -> dict[str, Any]:
    """A document with one defect, and where a refusal must point: a declaration broken at
    one member (CAP-01), or a `$ref` that names nothing, names another document or leads
    back to itself (CAP-15)."""
    case = draw(cases.import_cases(profile).filter(
        lambda c: any(cases.status(op) == "imported" for op in c["operations"])))
    document = case["document"]
    op = next(op for op in case["operations"] if cases.status(op) == "imported")
    operation = document["paths"][op["path"]][op["method"]]
    at = "/document" + cases.where(op)
    kind = draw(st.sampled_from(["declaration", "nowhere", "elsewhere", "loop"]))
    if kind == "declaration":
        broken = draw(capability_cases.broken(profile))
        operation["x-agent-capability"] = broken["declaration"]
        return {"document": document, "requirement": broken.get("requirement", "CAP-01"),
                "what": broken["what"], "member": capability_cases.member(broken["pointer"]),
                "paths": [f"{at}/x-agent-capability{broken['pointer']}"]}
    parameters = operation.setdefault("parameters", [])
    p_at = f"{at}/parameters/{len(parameters)}/schema"
    components = document.setdefault("components", {}).setdefault("schemas", {})
    if kind == "nowhere":
        ref, paths = cases.ref_to("components", "schemas", "Absent ~/"), [p_at + "/$ref"]
    elif kind == "elsewhere":
        ref, paths = {"$ref": "other.json#/components/schemas/Order"}, [p_at + "/$ref"]
    else:
        components["Loop"] = {"type": "object",
                              "properties": {"next": cases.ref_to("components", "schemas",
                                                                  "Loop")}}
        ref = cases.ref_to("components", "schemas", "Loop")
        paths = [p_at + "/$ref", "/document/components/schemas/Loop/properties/next/$ref"]
    parameters.append({"name": "broken", "in": "query", "schema": ref})
    return {"document": document, "requirement": "CAP-15", "what": f"a $ref ({kind})",
            "member": "$ref", "paths": paths}


@property_check("CAP-01", "CAP-14", "CAP-15",
                cases=lambda ctx: _broken(ctx.profile == "reference"))
def test_a_broken_document_is_refused_naming_where(ctx: CheckContext,
                                                   case: dict[str, Any]) -> None:
    """A document with one broken declaration is refused, naming the member (CAP-01); under
    the reference profile also a `$ref` that names nothing in the document, names another
    document, or leads back to itself, each 422 with `error.path` at the `$ref` (CAP-15)."""
    rid = case["requirement"]
    if rid != "CAP-01" and ctx.profile != "reference":
        return  # only the profile makes this document wrong, or says how to import it
    exchange = _import(ctx, case["document"])
    level = "" if rid == "CAP-01" else "profile: "
    expect(refused(exchange) and names(exchange, case["member"]), rid,
           f"{level}a document with {case['what']} refused (4xx), naming {case['member']!r}",
           exchange.describe)
    if ctx.profile == "reference":
        data = exchange.json_or_none()
        error = data.get("error") if isinstance(data, dict) else None
        path = error.get("path") if isinstance(error, dict) else None
        expect(exchange.status == 422 and path in case["paths"], "CAP-14" if rid == "CAP-14"
               else "CAP-15", f"profile: 422 with error.path {' or '.join(case['paths'])}",
               exchange.describe)
