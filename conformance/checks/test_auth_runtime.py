"""AUTH and PRO-02 over the runtime API: every endpoint of docs/runs.md's Wire table and of
docs/executors.md, sent with every credential the harness knows, on real ids.

One scene per check: a session whose run waits on two tool calls (one dispatchable, one
claimed by the check's executor), a session whose run has ended, their wallet and channel.
Core (AUTH-01, AUTH-03): no credential, an unknown token and another tenant are refused on
every endpoint naming this tenant's sessions, runs, tool calls, wallets or executors; the
answer holds none of the owner's texts; a refused write changes nothing. Profile (PRO-02):
the exact statuses of docs/profile.md (401 → 403 → 404) for each role, as the permission
column of the docs says, and again nothing changed. What a refused write could have changed
is read back with the full credential after each one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from arck.conformance.checking import check, expect
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotTestable
from arck.conformance.judge import documented_statuses, refused, status_listed
from arck.conformance.runworld import PROMPT, Agent, ChannelSpec, RunWorld, canonical, world
from arck.simulator.provider import Step, ToolCall, script_tag
from arck.simulator.target import Exchange, ExecutorTarget

FUNDS = 10**12
STRANGERS = ("none", "forged")
SERVICE = ("full", "read_only", "config_read", "no_permission", "no_scope", "other_tenant")
NO_EXECUTOR_API = (404, 405, 501)  # registering an executor met no such route

# The permission column (docs/runs.md, docs/executors.md) → the profile's status per role
# (docs/profile.md, Credentials and scopes: read_only holds runtime:read, config_read
# configuration:read, no_permission nothing, no_scope everything for another agent only,
# other_tenant everything in another tenant). A role left out is not sent: it would be let
# in to create something, which is no refusal to judge. none and forged are 401 everywhere.
STATUS: dict[str, dict[str, int]] = {
    # configuration:write, naming nothing of the tenant (a creation)
    "configuration:write": {"read_only": 403, "config_read": 403, "no_permission": 403},
    # configuration:write on a resource of the tenant (another tenant's: 404)
    "configuration:write on it": {"read_only": 403, "config_read": 403, "no_permission": 403,
                                  "other_tenant": 404},
    "configuration:read": {"config_read": 200, "no_scope": 200, "read_only": 403,
                           "no_permission": 403, "other_tenant": 404},
    "configuration:read or runtime:read": {"config_read": 200, "read_only": 200,
                                           "no_scope": 200, "no_permission": 403,
                                           "other_tenant": 404},
    "runtime:read + agent scope": {"read_only": 200, "config_read": 403, "no_permission": 403,
                                   "no_scope": 403, "other_tenant": 404},
    "runtime:write + agent scope": {"read_only": 403, "config_read": 403,
                                    "no_permission": 403, "no_scope": 403,
                                    "other_tenant": 404},
    # the agent named in the path: checked before the body; another tenant's agent of that
    # name is a name of its own (not sent as other_tenant here)
    "configuration:write + agent scope": {"read_only": 403, "config_read": 403,
                                          "no_permission": 403, "no_scope": 403},
    # "A service credential (the arck-dev-* tokens, whatever their permissions) is refused on
    # every executor endpoint (403)", before any lookup
    "executor credential": dict.fromkeys(SERVICE, 403),
}

WATCHED = {
    "wallet": "the wallet",
    "ended": "the ended run's session history",
    "events": "the waiting run's events",
    "run": "the waiting run's snapshot and events",
    "calls": "the waiting run's tool calls",
}


@dataclass(frozen=True)
class Endpoint:
    """One request of the docs' tables, with real ids and a body that would succeed."""

    method: str
    path: str
    permission: str  # the docs' column: a key of STATUS
    body: Any = None
    # what the request names: "ours" (a resource of this tenant), "nothing" (a creation, the
    # executor's own list or heartbeat), "agent" (an agent id: a name, in any tenant)
    names: str = "ours"
    watch: str | None = None  # what a write let in would change: a key of WATCHED

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class Scene:
    """What the checks probe: real ids of this tenant, and the texts none may leak."""

    w: RunWorld
    agent_version: str
    tool: str
    channel: str
    wallet: str
    session: str
    run: str
    open_call: str  # dispatchable
    held_call: str  # claimed by the check's executor (when there is one)
    ended_session: str
    ended_run: str
    secrets: tuple[str, ...]
    executor_id: str | None = None
    executor: str | None = None  # the executor's role
    claim: str | None = None


def _string(data: dict[str, Any], key: str, step: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise NotTestable(f"setup could not {step}: no string {key!r} in {str(data)[:300]}")
    return value


def _agent(ctx: CheckContext, w: RunWorld, steps: Sequence[Step], tool: str) -> Agent:
    """A version whose one tool has a name of this check's own (so a revocation let in by
    mistake reaches no other check's runs), following `steps`."""
    channel = w.channel()
    script = ctx.name("script")
    w.provider.add_script(script, list(steps))
    tools = {"name": ctx.name("tools"), "tools": [{**ctx.tool(1024), "name": tool}]}
    tool_set = _string(w.ok(w.target.publish_tool_set(tools), "publish a tool set"),
                       "tool_set_id", "publish a tool set")
    prompt = f"{PROMPT} {script_tag(script)}"
    body = {"tool_set_id": tool_set, "system_prompt": prompt, "channel_id": channel.channel_id}
    version = _string(w.ok(w.target.publish_agent_version(ctx.agent_id, body),
                           "publish an agent version with a channel"),
                      "agent_version", "publish an agent version with a channel")
    return Agent(version, script, prompt, tool, channel, None)


def _scene(ctx: CheckContext) -> Scene:
    w = world(ctx)
    mark = ctx.name("secret")
    secrets = tuple(f"{what}-{mark}-7d3a" for what in ("input", "argument", "question",
                                                        "answer"))
    tool = re.sub(r"[^A-Za-z0-9_-]", "_", ctx.name("rt_tool"))[:64]
    calls = [ToolCall(name=tool, arguments={"q": secrets[1], "n": n}) for n in (1, 2)]
    waiting = _agent(ctx, w, [Step(tool_calls=calls), Step(text="done")], tool)
    ended = _agent(ctx, w, [Step(text=secrets[3])], tool)
    wallet = w.wallet(FUNDS)
    session = w.session(waiting, wallet)
    run = _string(w.start(session, secrets[0]), "run_id", "create a run")
    snapshot, _ = w.settle(run)
    pending = [str(c.get("call_id")) for c in w.tool_calls(run) if c.get("state") == "dispatchable"]
    if snapshot.get("state") != "waiting_tools" or len(pending) != 2:
        raise NotTestable(f"not testable: the run never waited for its 2 tool calls: "
                          f"{snapshot}; dispatchable {pending}")
    ended_session = w.session(ended, wallet)
    ended_run = _string(w.start(ended_session, secrets[2]), "run_id", "create a run")
    final, _ = w.settle(ended_run)
    if final.get("state") != "ended":
        raise NotTestable(f"not testable: the text-only run never ended: {final}")
    scene = Scene(w, waiting.agent_version, tool, waiting.channel.channel_id, wallet, session,
                  run, pending[0], pending[1], ended_session, ended_run,
                  (*secrets, waiting.system_prompt, ended.system_prompt))
    target = w.target
    if not isinstance(target, ExecutorTarget):
        return scene
    registered = target.register_executor({"name": ctx.name("executor"),
                                           "bindings": [ctx.binding_id()]})
    if registered.status in NO_EXECUTOR_API and b"binding" not in registered.body.lower():
        return scene  # no executor API: its endpoints are left out
    executor_id = _string(w.ok(registered, "register an executor"), "executor_id",
                          "register an executor")
    role = target.executor_role(executor_id)
    w.ok(target.heartbeat(role), "send an executor heartbeat")
    claim = _string(w.ok(target.claim(pending[1], role), f"claim tool call {pending[1]}"),
                    "claim_id", f"claim tool call {pending[1]}")
    return replace(scene, executor_id=executor_id, executor=role, claim=claim)


def _endpoints(ctx: CheckContext, s: Scene) -> list[Endpoint]:
    """Every endpoint of the two tables, each with a body that would succeed, the run's
    cancel last (a cancel let in would end what the others probe). The probes' own texts
    are no secrets: an error may quote what its caller sent."""
    rw, rr = "runtime:write + agent scope", "runtime:read + agent scope"
    found = [
        Endpoint("POST", "/v1/channels", "configuration:write",
                 ChannelSpec().body(ctx.name("channel")), "nothing"),
        Endpoint("GET", f"/v1/channels/{s.channel}", "configuration:read"),
        Endpoint("POST", "/v1/wallets", "configuration:write", {"name": ctx.name("wallet")},
                 "nothing"),
        Endpoint("GET", f"/v1/wallets/{s.wallet}", "configuration:read or runtime:read"),
        Endpoint("POST", f"/v1/wallets/{s.wallet}/deposits", "configuration:write on it",
                 {"amount": 1}, watch="wallet"),
        Endpoint("POST", "/v1/sessions", rw,
                 {"agent_version": s.agent_version, "wallet_id": s.wallet}),
        Endpoint("GET", f"/v1/sessions/{s.session}", rr),
        Endpoint("GET", f"/v1/sessions/{s.session}/history", rr),
        Endpoint("GET", f"/v1/sessions/{s.session}/execution-history", rr),
        Endpoint("GET", f"/v1/sessions/{s.ended_session}/history", rr),
        Endpoint("POST", f"/v1/sessions/{s.ended_session}/runs", rw,
                 {"input": f"refused run {ctx.name('probe')}"}, watch="ended"),
        Endpoint("GET", f"/v1/runs/{s.run}", rr),
        Endpoint("GET", f"/v1/runs/{s.ended_run}", rr),
        Endpoint("GET", f"/v1/runs/{s.run}/events", rr),
        Endpoint("GET", f"/v1/runs/{s.run}/tool-calls", rr),
        Endpoint("POST", f"/v1/runs/{s.run}/input", rw,
                 {"input": f"refused input {ctx.name('probe')}"}, watch="events"),
        Endpoint("POST", f"/v1/agents/{ctx.agent_id}/tool-revocations",
                 "configuration:write + agent scope", {"tool_name": s.tool}, "agent",
                 watch="events"),
    ]
    if s.executor_id is not None:  # the tool-call cancel belongs to the executor API's area
        ex = "executor credential"
        found += [
            Endpoint("POST", f"/v1/tool-calls/{s.open_call}/cancel", rw, {}, watch="calls"),
            Endpoint("POST", "/v1/executors", "configuration:write",
                     {"name": ctx.name("executor"), "bindings": [ctx.binding_id()]}, "nothing"),
            Endpoint("GET", f"/v1/executors/{s.executor_id}", "configuration:read"),
            *_executor_api(s, ex),
        ]
    return [*found, Endpoint("POST", f"/v1/runs/{s.run}/cancel", rw, {}, watch="run")]


def _executor_api(s: Scene, permission: str) -> list[Endpoint]:
    """The executor API's endpoints on the waiting run's calls (the claim a real one)."""
    receipt = {"receipt_id": f"arck-refused-{s.held_call}", "claim_id": s.claim,
               "kind": "accepted"}
    return [
        Endpoint("POST", "/v1/executor/heartbeat", permission, {}, "nothing"),
        Endpoint("GET", "/v1/executor/candidates", permission, None, "nothing"),
        Endpoint("GET", f"/v1/executor/calls/{s.held_call}", permission),
        Endpoint("POST", f"/v1/tool-calls/{s.open_call}/claims", permission, {},
                 watch="calls"),
        Endpoint("POST", f"/v1/tool-calls/{s.held_call}/receipts", permission, receipt,
                 watch="calls"),
        Endpoint("POST", f"/v1/tool-calls/{s.held_call}/detach", permission,
                 {"claim_id": s.claim}, watch="calls"),
    ]


def _watch(s: Scene, what: str) -> str:
    """What a write let in would have changed, read with the full credential."""
    w = s.w
    if what == "wallet":
        return canonical(w.wallet_state(s.wallet))
    if what == "ended":
        return canonical(w.history(s.ended_session, "formal"))
    if what == "events":
        return canonical(w.events(s.run))
    if what == "run":
        return canonical([w.snapshot(s.run), w.events(s.run)])
    return canonical(w.tool_calls(s.run))


class Judge:
    """Sends each probe and judges what every probe must show: nothing changed, no leak."""

    def __init__(self, s: Scene) -> None:
        self.s = s
        self.before = {what: _watch(s, what) for what in WATCHED}

    def send(self, ep: Endpoint, role: str) -> Exchange:
        return self.s.w.target.request(ep.method, ep.path, json_body=ep.body, role=role)

    def unchanged(self, ep: Endpoint, exchange: Exchange, requirement: str) -> None:
        if ep.watch is None:
            return
        before, after = self.before[ep.watch], _watch(self.s, ep.watch)
        done = "refused " if refused(exchange) else ""
        expect(after == before, requirement,
               f"nothing of this tenant changed by the {done}{ep.label} as {exchange.role!r} "
               f"({WATCHED[ep.watch]}, read back with the full credential)",
               lambda: f"{_difference(before, after)}; the request {exchange.describe()}",
               hint=_replay(exchange))

    def no_leak(self, exchange: Exchange, requirement: str, who: str) -> None:
        found = [secret for secret in self.s.secrets if secret.encode() in exchange.body]
        expect(not found, requirement,
               f"an answer to {who} naming nothing of the owner's session (input, tool "
               f"arguments, answers, system prompt)",
               lambda: f"{found[0]!r} in {exchange.describe()}", hint=_replay(exchange))


def _difference(before: str, after: str) -> str:
    """Where two canonical texts part, with a little of each around it."""
    at = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
              min(len(before), len(after)))
    start = max(0, at - 80)
    return f"before …{before[start:at + 240]}; after …{after[start:at + 240]}"


def _replay(exchange: Exchange) -> str:
    return f"Reproduce (as {exchange.role!r}): {exchange.as_curl()}"


def _foreign_executor(ctx: CheckContext, s: Scene) -> str | None:
    """An executor of the other tenant, online, for a binding of that tenant: its role; None
    when the other tenant's credential cannot register one (the probes are left out)."""
    target = s.w.target
    if s.executor_id is None or not isinstance(target, ExecutorTarget):
        return None
    binding = target.create_binding(ctx.name("binding"), role="other_tenant")
    data = binding.json_or_none()
    if binding.status != 201 or not isinstance(data, dict) or \
            not isinstance(data.get("binding_id"), str):
        return None
    body = {"name": ctx.name("executor"), "bindings": [data["binding_id"]]}
    registered = target.register_executor(body, role="other_tenant")
    found = registered.json_or_none()
    if registered.status != 201 or not isinstance(found, dict) or \
            not isinstance(found.get("executor_id"), str):
        return None
    role = target.executor_role(found["executor_id"])
    return role if 200 <= target.heartbeat(role).status < 300 else None


def _candidate_ids(exchange: Exchange) -> list[Any]:
    data = exchange.json_or_none()
    listed = data.get("candidates") if isinstance(data, dict) else None
    return [c.get("call_id") for c in listed if isinstance(c, dict)] \
        if isinstance(listed, list) else []


@check("AUTH-01", "AUTH-03")
def test_strangers_never_reach_runs(ctx: CheckContext) -> None:
    """No credential, an unknown token, another tenant (and its executor): refused on every
    runtime and executor endpoint that names this tenant's session, run, call, wallet or
    executor, answering none of the owner's texts, changing nothing. Another tenant may
    revoke a tool of its own agent of the same name, so that request is judged only by what
    it must not do here."""
    s = _scene(ctx)
    judge = Judge(s)
    for ep in _endpoints(ctx, s):
        for role in (*STRANGERS, "other_tenant"):
            if role == "other_tenant" and ep.names == "nothing":
                continue
            requirement = "AUTH-03" if role == "other_tenant" else "AUTH-01"
            exchange = judge.send(ep, role)
            if ep.names != "agent" or role != "other_tenant":
                why = "without credentials" if role == "none" else \
                    "with an unknown token" if role == "forged" else "for another tenant"
                expect(refused(exchange), requirement, f"{ep.label} refused {why} (a 4xx)",
                       exchange.describe, hint=_replay(exchange))
            judge.no_leak(exchange, requirement, repr(role))
            judge.unchanged(ep, exchange, requirement)
    foreign = _foreign_executor(ctx, s)
    if foreign is None:
        return
    target = s.w.target
    listed = target.request("GET", "/v1/executor/candidates", role=foreign)
    mine = {s.open_call, s.held_call}
    expect(not mine & set(_candidate_ids(listed)), "AUTH-03",
           f"none of this tenant's calls ({sorted(mine)}) among another tenant's executor's "
           "candidates", listed.describe, hint=_replay(listed))
    judge.no_leak(listed, "AUTH-03", "another tenant's executor")
    for ep in _executor_api(s, "executor credential"):
        if ep.names == "nothing":
            continue
        exchange = judge.send(ep, foreign)
        expect(refused(exchange), "AUTH-03",
               f"{ep.label} refused for another tenant's executor (a 4xx)",
               exchange.describe, hint=_replay(exchange))
        judge.no_leak(exchange, "AUTH-03", "another tenant's executor")
        judge.unchanged(ep, exchange, "AUTH-03")


@check("PRO-02", "PRO-03")
def test_runtime_permissions_per_endpoint(ctx: CheckContext) -> None:
    """The permission column of docs/runs.md and docs/executors.md, role by role, in the
    profile's order: 401 without a valid credential; 403 without the permission, outside the
    agent scope (sessions, histories, runs, events, tool calls, cancels, input, revocations),
    for a service credential on the executor API and for an executor credential elsewhere;
    404 for another tenant's resource (its executor's too); 200 where the column lets the
    role read. After every refusal of a write, nothing changed."""
    s = _scene(ctx)
    judge = Judge(s)
    doc = ctx.target.openapi().json_or_none()
    for ep in _endpoints(ctx, s):
        expected = {**dict.fromkeys(STRANGERS, 401), **STATUS[ep.permission]}
        if s.executor is not None and ep.permission != "executor credential":
            expected[s.executor] = 403  # "executor credentials serve only the executor API"
        listed = documented_statuses(doc, ep.method, ep.path)
        for role, status in expected.items():
            exchange = judge.send(ep, role)
            expect(exchange.status == status, "PRO-02",
                   f"{status} for {ep.label} as {_who(role, s)} (docs: {ep.permission})",
                   exchange.describe, hint=_replay(exchange))
            expect(listed is None or status_listed(exchange.status, listed), "PRO-03",
                   f"the {exchange.status} of {ep.label} among the responses /openapi.json "
                   "lists for it (the served document is the normative shape)",
                   f"listed: {sorted(listed or ())}",
                   hint=_replay(exchange))
            if status >= 400:
                judge.unchanged(ep, exchange, "PRO-02")
    foreign = _foreign_executor(ctx, s)
    if foreign is None:
        return
    for ep in _executor_api(s, "executor credential"):
        if ep.names == "nothing":
            continue
        exchange = judge.send(ep, foreign)
        expect(exchange.status == 404, "PRO-02",
               f"404 for {ep.label} as another tenant's executor (another tenant's call is "
               "not found)", exchange.describe, hint=_replay(exchange))
        judge.unchanged(ep, exchange, "PRO-02")


def _who(role: str, s: Scene) -> str:
    return "the check's executor" if role == s.executor else repr(role)

