"""DEF: tool definitions, tool sets and agent versions (SPEC §2); the profile's tool rules."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from arck.conformance import oracle
from arck.conformance.checking import check, expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure
from arck.conformance.judge import answer, names, refused

REQUIRED = ("name", "description", "binding_id", "input_schema", "output_schema")
DEFAULT_BUDGET = 16384


def _publish(ctx: CheckContext, tool: dict[str, Any], **extra: Any) -> Any:
    return ctx.target.publish_tool_set({"name": ctx.name("tools"), "tools": [tool], **extra})


@check("DEF-01")
def test_definition_fields(ctx: CheckContext) -> None:
    """All five fields are taken and read back; each one missing is refused by name."""
    tool = ctx.tool(2048)
    published = answer(_publish(ctx, tool), "DEF-01")
    read = answer(ctx.target.get_tool_set(published["tool_set_id"]), "DEF-01")
    tools = read.get("tools") if isinstance(read, dict) else None
    if not isinstance(tools, list) or len(tools) != 1 or not isinstance(tools[0], dict):
        raise CheckFailure("DEF-01", "the tool set read back with its one tool", str(read)[:200])
    for field in (*REQUIRED, "max_result_context_bytes"):
        expect(oracle.canonically_equal(tools[0].get(field), tool[field]), "DEF-01",
               f"{field} read back as published", f"{str(tools[0].get(field))[:100]}")
    for field in REQUIRED:
        partial = {k: v for k, v in tool.items() if k != field}
        exchange = _publish(ctx, partial)
        expect(refused(exchange) and names(exchange, field), "DEF-01",
               f"a tool without {field!r} refused, naming it", exchange.describe)


_bad_budgets = st.one_of(
    st.integers(max_value=1023),
    st.integers(min_value=32769),
    st.sampled_from((1023, 32769, 0, -1, 2**63)),
)
_wrong_types = st.sampled_from(
    (True, False, 16384.0, 1024.0, "16384", "1024", None, [16384], {"bytes": 16384}, 1e4)
)


@property_check("DEF-02", cases=st.one_of(st.integers(1024, 32768), _bad_budgets, _wrong_types))
def test_budget_range_and_type(ctx: CheckContext, case: Any) -> None:
    """Integers 1,024–32,768 are published; anything else fails validation naming the field."""
    tool = {**ctx.tool(None), "max_result_context_bytes": case}
    exchange = _publish(ctx, tool)
    valid = type(case) is int and 1024 <= case <= 32768
    if valid:
        expect(200 <= exchange.status < 300, "DEF-02", f"budget {case!r} accepted",
               exchange.describe)
    else:
        expect(refused(exchange) and names(exchange, "max_result_context_bytes"), "DEF-02",
               f"budget {case!r} refused, naming max_result_context_bytes", exchange.describe)


@check("DEF-02")
def test_budget_default(ctx: CheckContext) -> None:
    version = ctx.version(None)
    exchange = ctx.dry_run(version, {"ok": True})
    preview = answer(exchange, "DEF-02").get("context_preview") or {}
    expect(preview.get("max_result_context_bytes") == DEFAULT_BUDGET, "DEF-02",
           f"a tool without a budget previewed with max_result_context_bytes == {DEFAULT_BUDGET}",
           exchange.describe)


@property_check(
    "DEF-03",
    cases=st.tuples(
        st.sampled_from(("max_result_tokens", "max_result_bytes")),
        st.sampled_from(("tool", "tool_set")),
        st.sampled_from((8192, 16384, 0, "16k", None)),
    ),
)
def test_removed_settings_refused(ctx: CheckContext, case: Any) -> None:
    field, where, value = case
    tool = ctx.tool(None)
    exchange = _publish(ctx, {**tool, field: value}) if where == "tool" else _publish(
        ctx, tool, **{field: value})
    expect(refused(exchange) and names(exchange, field), "DEF-03",
           f"{field} in a {where.replace('_', ' ')} refused, naming it (no alias)",
           exchange.describe)
    data = {field: value, "items": []}
    inside = ctx.dry_run(ctx.version(1024), data, arguments={field: value})
    expect(200 <= inside.status < 300, "DEF-03",
           f"{field} inside a result or arguments treated as ordinary data", inside.describe)


@check("DEF-04")
def test_published_versions_are_immutable(ctx: CheckContext) -> None:
    version = ctx.version(4096)
    for kind, rid, read in (
        ("tool_set", version.tool_set_id, ctx.target.get_tool_set),
        ("agent_version", version.agent_version, ctx.target.get_agent_version),
    ):
        before = answer(read(rid), "DEF-04")
        changed = {"name": "arck-changed", "tools": [ctx.tool(32768)],
                   "system_prompt": "changed", "tool_set_id": version.tool_set_id}
        for attempt in ctx.target.try_modify(kind, rid, changed):
            expect(not 200 <= attempt.status < 300, "DEF-04",
                   f"a change to a published {kind.replace('_', ' ')} refused",
                   attempt.describe)
        after = answer(read(rid), "DEF-04")
        expect(oracle.canonically_equal(before, after), "DEF-04",
               f"the published {kind.replace('_', ' ')} unchanged", f"{str(after)[:200]}")
    preview = answer(ctx.dry_run(version, "x" * 5000), "DEF-04").get("context_preview") or {}
    expect(preview.get("max_result_context_bytes") == 4096, "DEF-04",
           "the version still previews with its published budget 4096",
           f"{preview.get('max_result_context_bytes')!r}")


@check("DEF-06")
def test_unknown_binding_refused(ctx: CheckContext) -> None:
    tool = {**ctx.tool(None), "binding_id": "arck-no-such-binding-0"}
    exchange = _publish(ctx, tool)
    expect(refused(exchange) and names(exchange, "binding_id"), "DEF-06",
           "an unknown binding_id refused at publish time, naming binding_id", exchange.describe)
    other = ctx.target.create_binding(ctx.name("foreign"), role="other_tenant")
    foreign = (other.json_or_none() or {}).get("binding_id") if other.status < 300 else None
    if isinstance(foreign, str):
        exchange = _publish(ctx, {**ctx.tool(None), "binding_id": foreign})
        expect(refused(exchange), "DEF-06", "another tenant's binding refused as unknown",
               exchange.describe)


NAMES_TAKEN = ("a", "A" * 64, "Zz0_.-9")
NAMES_REFUSED = ("", "a" * 65, "a b", "é", "a/b", "tool:x", "a\n")


@check("PRO-02")
def test_tool_definition_profile_rules(ctx: CheckContext) -> None:
    """The profile's ToolDefinition: `name` matches ^[A-Za-z0-9_.-]{1,64}$ and is unique in its
    tool set, both schemas are valid JSON Schema (2020-12) objects, unknown members are
    refused; each refusal is 422 naming the path."""
    tool = ctx.tool(None)
    for name in NAMES_TAKEN:
        exchange = _publish(ctx, {**tool, "name": name})
        expect(200 <= exchange.status < 300, "PRO-02", f"a tool named {name!r} published",
               exchange.describe)
    refusals: list[tuple[Any, str, str]] = [
        (_publish(ctx, {**tool, "name": name}), "/tools/0/name", f"a tool named {name!r}")
        for name in NAMES_REFUSED
    ]
    refusals += [
        (ctx.target.publish_tool_set({"name": ctx.name("tools"), "tools": [tool, tool]}),
         "/tools/1/name", "two tools of one name"),
        (_publish(ctx, {**tool, "arck_unknown": 1}), "/tools/0/arck_unknown",
         "an unknown member"),
        (_publish(ctx, {**tool, "input_schema": {"type": 5}}), "/tools/0/input_schema",
         "an input_schema that is not a valid JSON Schema"),
        (_publish(ctx, {**tool, "output_schema": {"minimum": "zero"}}), "/tools/0/output_schema",
         "an output_schema that is not a valid JSON Schema"),
        (_publish(ctx, {**tool, "output_schema": True}), "/tools/0/output_schema",
         "an output_schema that is not an object (true is a schema, but not an object)"),
    ]
    for exchange, path, what in refusals:
        expect(exchange.status == 422 and names(exchange, path), "PRO-02",
               f"422 naming {path} for {what}", exchange.describe)
