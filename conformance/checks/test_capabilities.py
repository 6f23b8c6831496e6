"""CAP: capability declarations (SPEC §4): validated with the path named, an unknown version
refused, an operation not enabled kept from every model, and the effective policy
conservative with no hint read from another. Driven through a target's capability steps
(docs/capabilities.md); the cases come from `capability_cases`, never from the reference."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from arck.conformance import capability_cases as cases
from arck.conformance import capability_steps as steps
from arck.conformance.checking import expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotApplicable, NotTestable
from arck.conformance.judge import answer, names, refused
from arck.conformance.runworld import world
from arck.simulator.provider import Step


def _valid_or_broken(ctx: CheckContext) -> st.SearchStrategy[Any]:
    profile = ctx.profile == "reference"
    valid = cases.declarations(profile, enabled=None).map(lambda d: {"declaration": d})
    return st.one_of(valid, cases.broken(profile))


def _classic(member: str, value: Any, within: str = "", rid: str = "CAP-01") -> dict[str, Any]:
    """A classic defect's case: a plain declaration with one member wrong."""
    decl: dict[str, Any] = {"version": 1, "enabled": True, "scope": "order.read",
                            "execution": {"readonly": True, "timeout_ms": 5000}}
    (decl[within] if within else decl)[member] = value
    pointer = f"/{within}/{member}" if within else f"/{member}"
    return cases.broken_case(decl, pointer, f"{pointer[1:]} {value!r}", rid)


@property_check("CAP-01", "CAP-14", cases=_valid_or_broken, examples=(
    _classic("version", 2), _classic("enabled", "true"), _classic("scope", ""),
    _classic("readonly", 1, "execution"), _classic("timeout_ms", 0, "execution"),
    # profile: unknown members refused (the check skips it outside the profile)
    _classic("retries", 3, "execution", "CAP-14")))
def test_declarations_are_validated(ctx: CheckContext, case: Any) -> None:
    """A valid declaration is accepted (under the profile: read back as sent); one wrong at
    a member (a version other than 1, a missing scope, a boolean that is not one, a timeout or
    rate count that is not a positive integer) is refused, naming the member (under the
    profile: 422 whose `error.path` is the member's JSON Pointer under `/capability`)."""
    decl, pointer = case["declaration"], case.get("pointer")
    if pointer is None:
        made = steps.kept(ctx, steps.declare(ctx, decl))
        if ctx.profile == "reference":
            expect(made.get("capability") == decl, "CAP-14", "profile: the declaration "
                   "answered as sent", lambda: json.dumps(made.get("capability"))[:400])
            binding_id = made.get("binding_id")
            read = steps.target(ctx).get_binding(str(binding_id))
            expect(answer(read, "CAP-14").get("capability") == decl, "CAP-14",
                   "profile: the declaration read back as sent", read.describe)
        return
    rid = case.get("requirement", "CAP-01")
    if rid == "CAP-14" and ctx.profile != "reference":
        return  # only the profile makes this declaration wrong
    steps.supported(ctx)
    exchange = steps.declare(ctx, decl)
    what, name = case["what"], cases.member(pointer)
    level = "profile: " if rid == "CAP-14" else ""
    expect(refused(exchange), rid, f"{level}a declaration with {what} refused (4xx)",
           exchange.describe)
    expect(names(exchange, name), rid,
           f"{level}the refusal of a declaration with {what} naming {name!r}",
           exchange.describe)
    if ctx.profile == "reference":
        expect(exchange.status == 422 and steps.error_path(exchange) == "/capability" + pointer,
               "CAP-14", f"profile: 422 with error.path /capability{pointer}",
               exchange.describe)


@property_check("CAP-01", cases=st.one_of(st.integers(min_value=2, max_value=2**31),
                                          st.integers(max_value=0)),
                examples=(2, 0))
def test_an_unknown_version_is_refused_not_guessed(ctx: CheckContext, case: Any) -> None:
    """A declaration of a version the runtime does not know is refused, however well it
    would read as version 1: the same declaration as version 1 is accepted."""
    valid = {"version": 1, "enabled": True, "scope": steps.scope(ctx, "versioned"),
             "execution": {"readonly": True, "idempotent": True, "timeout_ms": 5000}}
    steps.kept(ctx, steps.declare(ctx, valid))
    exchange = steps.declare(ctx, {**valid, "version": case})
    expect(refused(exchange) and names(exchange, "version"), "CAP-01",
           f"version {case} refused, naming version", exchange.describe)


@property_check("CAP-02", cases=st.tuples(st.sampled_from(["false", "left out"]),
                                          st.booleans()), cap=4)
def test_an_operation_not_enabled_never_reaches_a_model(ctx: CheckContext, case: Any) -> None:
    """A tool bound to an operation declared `enabled: false` never reaches a model: the
    tool set naming it is refused, or the model's `tools` never hold it while they hold an
    enabled one. (Under the profile the same holds for a declaration without `enabled`, and
    the refusal is 422 `capability_disabled` at the tool's `binding_id`.)"""
    how, disabled_first = case
    if how == "left out" and ctx.profile != "reference":
        return  # an omitted `enabled` is the profile's decision
    enabled = steps.kept(ctx, steps.declare(ctx, {"version": 1, "enabled": True,
                                        "scope": steps.scope(ctx, "on")}), judged=False)
    decl: dict[str, Any] = {"version": 1, "scope": steps.scope(ctx, "off")}
    if how == "false":
        decl["enabled"] = False
    off = steps.kept(ctx, steps.declare(ctx, decl), judged=False)
    tools = [{**ctx.tool(None), "name": "enabled_op", "binding_id": enabled["binding_id"]},
             {**ctx.tool(None), "name": "disabled_op", "binding_id": off["binding_id"]}]
    if disabled_first:
        tools.reverse()
    at = tools.index(next(t for t in tools if t["name"] == "disabled_op"))
    published = steps.target(ctx).publish_tool_set({"name": ctx.name("tools"), "tools": tools})
    if refused(published):
        if ctx.profile == "reference":
            data = published.json_or_none() or {}
            error = data.get("error") if isinstance(data, dict) else None
            expect(published.status == 422 and isinstance(error, dict)
                   and error.get("code") == "capability_disabled"
                   and error.get("path") == f"/tools/{at}/binding_id", "CAP-02",
                   f"profile: 422 capability_disabled at /tools/{at}/binding_id",
                   published.describe)
        return
    expect(ctx.profile != "reference", "CAP-02", "profile: a tool set naming an operation "
           f"not enabled ({how}) refused", published.describe)
    _judge_model_tools(ctx, answer(published, "CAP-02").get("tool_set_id"), how)


def _judge_model_tools(ctx: CheckContext, tool_set_id: Any, how: str) -> None:
    """The tool set was taken: what the model was offered decides."""
    try:
        w = world(ctx)
    except NotApplicable as exc:
        raise NotTestable(f"not testable: the tool set naming an operation not enabled was "
                          f"published, and without runs what reaches a model is not seen: "
                          f"{exc}") from None
    agent = w.agent_on(str(tool_set_id), [Step(text="done")])
    run_id = str(w.start(w.session(agent, w.wallet(10**9)), "Hello").get("run_id"))
    w.settle(run_id)
    offered: list[list[str]] = []
    for request in w.requests(agent):
        body = json.loads(request.body)
        offered.append(sorted(t.get("function", {}).get("name", "")
                              for t in body.get("tools") or [] if isinstance(t, dict)))
    if not offered:
        raise NotTestable(f"not testable: run {run_id} never called the model")
    expect(all("disabled_op" not in names_ for names_ in offered), "CAP-02",
           f"a tool on an operation not enabled ({how}) never in a model's tools",
           f"the model was offered {offered}")
    expect(all("enabled_op" in names_ for names_ in offered), "CAP-02",
           "the enabled operation's tool offered (the tool set is in use)",
           f"the model was offered {offered}")


@property_check("CAP-04", "CAP-14", cases=cases.declarations(True, enabled=None))
def test_the_effective_policy_is_conservative(ctx: CheckContext, case: Any) -> None:
    """Profile (the policy step): each hint as declared, a missing one at its conservative
    value (not read-only, not idempotent, the 60,000 ms default wait, no rate limit), none
    derived from another (`readonly: true` says nothing of idempotency, nor the reverse)."""
    if ctx.profile != "reference":
        raise NotApplicable("the policy step is the reference profile's (CAP-14)")
    made = steps.kept(ctx, steps.declare(ctx, case), judged=False)
    policy = steps.target(ctx).binding_policy(str(made.get("binding_id")))
    if policy.status in (404, 405) and steps.error_path(policy) in (None, ""):
        raise NotApplicable(f"the target has no policy step: {policy.describe()[:200]}")
    data = answer(policy, "CAP-04")
    expected = cases.expected_policy(case)
    wait = expected.pop("timeout_ms") if expected["timeout_source"] == "default" else None
    wrong = {k: data.get(k) for k, v in expected.items() if data.get(k) != v}
    expect(not wrong, "CAP-04", f"the policy of {json.dumps(case)[:300]}: {expected}",
           f"these members differ: {wrong}")
    if wait is not None:
        expect(data.get("timeout_ms") == wait, "CAP-14", f"profile: with no declared timeout, "
               f"the default wait of {wait} ms", f"timeout_ms {data.get('timeout_ms')!r}")


_RATED = {"version": 1, "enabled": True, "scope": "notification.batch.send",
          "execution": {"timeout_ms": 10_000, "rate_limit": {"count": 60, "window": "1m"}}}


@property_check("CAP-09", "CAP-14", cases=cases.local_policies(), examples=(
    # two 50 s windows fit in a minute: 100 dispatches where the declaration allows 60
    {"declaration": _RATED, "local": {"rate_limit": {"count": 50, "window": "50s"}},
     "loosens": ["/rate_limit/window"]},
    {"declaration": _RATED, "local": {"timeout_ms": 10_001}, "loosens": ["/timeout_ms"]},
    {"declaration": _RATED, "local": {"retries": True}, "loosens": ["/retries"]},
    {"declaration": _RATED, "local": {"rate_limit": {"count": 10, "window": "10s"},
                                      "timeout_ms": 5000, "retries": False}, "loosens": []}))
def test_local_policy_only_tightens(ctx: CheckContext, case: Any) -> None:
    """Profile (the local-policy step): a local policy that loosens a declared bound (a
    longer timeout, a rate limit admitting more in a declared window, retries without
    declared idempotency) is refused, naming a setting that loosens, and changes nothing; one
    that tightens is applied, and the policy reads back tightened."""
    if ctx.profile != "reference":
        raise NotApplicable("the local-policy step is the reference profile's (CAP-14)")
    decl, local, loosens = case["declaration"], case["local"], case["loosens"]
    made = steps.kept(ctx, steps.declare(ctx, decl), judged=False)
    binding_id = str(made.get("binding_id"))
    target = steps.target(ctx)
    before = answer(target.binding_policy(binding_id), "CAP-09")
    exchange = target.set_local_policy(binding_id, local)
    shown = f"the local policy {json.dumps(local)} for {json.dumps(decl)[:300]}"
    if loosens:
        expect(exchange.status == 422 and steps.error_path(exchange) in loosens, "CAP-09",
               f"{shown} refused with 422 naming one of {loosens}", exchange.describe)
        after = answer(target.binding_policy(binding_id), "CAP-09")
        expect(after == before, "CAP-09", f"{shown}, refused, changed nothing",
               lambda: f"before {before}; after {after}")
        return
    expected = cases.tightened(decl, local)
    for what, read in (("answered", exchange), ("read back", target.binding_policy(binding_id))):
        data = answer(read, "CAP-09")
        wrong = {k: data.get(k) for k, v in expected.items() if data.get(k) != v}
        expect(not wrong, "CAP-09", f"{shown}, which loosens nothing, {what} applied: "
               f"{expected}", f"these members differ: {wrong}")
