"""Request bounds of runs and executors (reference profile: docs/runs.md "Wire" and "Decisions",
docs/executors.md "Wire", "Registration" and "Receipts").

Every documented member of a runtime request body, made bad one at a time (just outside its
bound, another JSON type, null, left out, or joined by a member the body's schema does not
list), is refused 422 naming it (PRO-02, PRO-03), and nothing is created or moved by the
refusal; the bound itself is taken. The protocol states none of these bounds (BIL-05 says only
that amounts are integers in micro-units), so the checks are the profile's: a target of
another profile has its own.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from hypothesis import strategies as st

from arck.conformance.checking import check, expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotTestable
from arck.conformance.judge import documented_statuses, error_shape_problem, status_listed
from arck.conformance.runworld import ChannelSpec, RunWorld, canonical, world
from arck.simulator.provider import Step
from arck.simulator.target import Exchange, Target

TOKENS = 10**9  # channel capacities 1..10^9 (docs/runs.md, Decisions)
PRICE = 10**12  # micro-units per million tokens, 0..10^12 (BIL-05)
DEPOSIT = 10**15  # one deposit 1..10^15
TIMEOUT_MS = 86_400_000
CONTEXT = (4_096, 100_000_000)  # a version's max_context_tokens
TEXT = 200  # subject, receipt_id, an executor's name: 1..200 characters
SEQUENCE = 2**53  # a progress receipt's sequence 1..2^53 (docs/executors.md)
BINDINGS = 100  # an executor's bindings: 1..100 distinct ids
MESSAGE = 10_000  # a failed receipt's error message: 0..10,000 characters
REASON = 500  # a cancel's reason: 0..500 characters
UNKNOWN = "arck_unknown_member"
IN_PROCESS = ("reference", "mutant", "app")  # a store no one else writes to
_LEFT_OUT = object()  # the member is taken out of the body
_NOT_JSON = object()  # the whole body replaced by bytes that are not JSON
NOT_JSON = b'{"input": '  # cut short: no JSON parser reads it (PRO-01: 400)
NAMES_NOTHING = "at its upper bound, naming nothing"
SHORT_NAMES_NOTHING = "at its lower bound, naming nothing"


@dataclass(frozen=True)
class Member:
    """A documented member of a request body: its kind and inclusive bounds (a length for
    text and lists); `also` names a member it shares a bound with, which a refusal may name
    instead of it."""

    pointer: str
    kind: str  # int | text | enum | object | any | bindings | permissions
    low: int | None = None
    high: int | None = None
    required: bool = True
    money: bool = False  # BIL-05: an amount or price in integer micro-units
    also: tuple[str, ...] = ()
    names: bool = False  # an id of something that exists: only its bad bounds are tried


# Each request: its members, and the OpenAPI path whose body schema says which objects are
# closed (PRO-03: the served document is the normative shape).
REQUESTS: dict[str, tuple[str, tuple[Member, ...]]] = {
    "channel": ("/v1/channels", (
        Member("/name", "text", 1), Member("/model", "text", 1),
        Member("/input_capacity", "int", 1, TOKENS),
        # output_capacity (at least 1) must be below it
        Member("/total_capacity", "int", 2, TOKENS, also=("/output_capacity",)),
        Member("/output_capacity", "int", 1, TOKENS - 1, also=("/total_capacity",)),
        Member("/timeout_ms", "int", 1, TIMEOUT_MS),
        Member("/prices", "object"),
        Member("/prices/input", "int", 0, PRICE, money=True),
        Member("/prices/cached_input", "int", 0, PRICE, money=True),
        Member("/prices/output", "int", 0, PRICE, money=True),
    )),
    "wallet": ("/v1/wallets", (Member("/name", "text", 1),)),
    "deposit": ("/v1/wallets/{wallet_id}/deposits", (
        Member("/amount", "int", 1, DEPOSIT, money=True),)),
    "session": ("/v1/sessions", (
        Member("/agent_version", "text"), Member("/wallet_id", "text"),
        Member("/subject", "text", 1, TEXT, required=False),
    )),
    "version": ("/v1/agents/{agent_id}/versions", (
        Member("/channel_id", "text", required=False),
        Member("/max_context_tokens", "int", *CONTEXT, required=False),
    )),
    "run": ("/v1/sessions/{session_id}/runs", (Member("/input", "text", 1),)),
    "input": ("/v1/runs/{run_id}/input", (Member("/input", "text", 1),)),
    "cancel": ("/v1/runs/{run_id}/cancel", (
        Member("/reason", "text", 0, REASON, required=False),)),
    "receipt": ("/v1/tool-calls/{call_id}/receipts", (
        Member("/receipt_id", "text", 1, TEXT), Member("/claim_id", "text", 1, TEXT, names=True),
        Member("/kind", "enum"),
    )),
    "progress": ("/v1/tool-calls/{call_id}/receipts", (
        Member("/sequence", "int", 1, SEQUENCE),)),
    "failure": ("/v1/tool-calls/{call_id}/receipts", (
        Member("/error", "object"), Member("/error/code", "text", 1, TEXT),
        Member("/error/message", "text", 0, MESSAGE),
    )),
    "completion": ("/v1/tool-calls/{call_id}/receipts", (Member("/result", "any"),)),
    "detach": ("/v1/tool-calls/{call_id}/detach", (
        Member("/claim_id", "text", 1, TEXT, names=True),)),
    "executor": ("/v1/executors", (
        Member("/name", "text", 1, TEXT),
        Member("/bindings", "bindings", 1, BINDINGS),
        Member("/permissions", "permissions", required=False),
    )),
}


@dataclass(frozen=True)
class Variant:
    """One way of sending a member: the value (or a function of the scene making it, or
    `_LEFT_OUT`), whether the docs allow it, the pointers a refusal may name, and what is
    changed beside it (`siblings`: other members set, or left out)."""

    value: Any
    allowed: bool
    paths: tuple[str, ...]
    siblings: tuple[tuple[str, Any], ...] = ()
    status: int = 422  # a refusal's status: 409 for a well-formed id that names nothing


def _variants(member: Member) -> dict[str, Variant]:
    """The documented bad and boundary values of a member."""
    paths = (member.pointer, *member.also)
    found: dict[str, Variant] = {}

    def bad(label: str, value: Any, where: tuple[str, ...] = paths) -> None:
        found[label] = Variant(value, False, where)

    def good(label: str, value: Any) -> None:
        found[label] = Variant(value, True, paths)

    lo, hi = member.low, member.high
    if member.kind == "int":
        assert lo is not None
        assert hi is not None
        bad("just below its bound", lo - 1)
        bad("just above its bound", hi + 1)
        good("at its lower bound", lo)
        good("at its upper bound", hi)
        bad("as a numeric string", str(max(lo, 1)))
        bad("as a float", float(max(lo, 1)))
        bad("as true", True)
    elif member.kind == "text":
        if lo is not None and hi is not None:
            if lo > 0:
                bad("just below its bound", "x" * (lo - 1))
            bad("just above its bound", "x" * (hi + 1))
            if not member.names:
                good("at its lower bound", "x" * lo)
                good("at its upper bound", "x" * hi)
            else:  # well-formed, so not a 422: the call has no such claim (EXE-17), 409
                found[NAMES_NOTHING] = Variant("x" * hi, False, paths, status=409)
                found[SHORT_NAMES_NOTHING] = Variant("x" * lo, False, paths, status=409)
        elif lo is not None:  # a lower bound alone (names, a model, an input: 1 or more)
            if lo > 0:
                bad("just below its bound", "x" * (lo - 1))
            good("at its lower bound", "x" * lo)
        bad("as a number", 7)
    elif member.kind == "enum":
        bad("an unknown value", "arck-unknown-kind")
        bad("as a number", 7)
    elif member.kind == "object":
        bad("as a string", "arck")
    if member.kind == "any":  # any JSON value is one, null too: only leaving it out is bad
        bad("left out", _LEFT_OUT)
        return found
    elif member.kind == "bindings":
        bad("empty", [])
        bad("just above its bound", lambda s: s.bindings(BINDINGS + 1))
        bad("with a binding twice", lambda s: s.bindings(1) * 2,
            (member.pointer, f"{member.pointer}/1"))
        bad("as a string", lambda s: s.bindings(1)[0])
        bad("with a number for a binding", [7], (f"{member.pointer}/0", member.pointer))
        good("at its lower bound", lambda s: s.bindings(1))
        good("at its upper bound", lambda s: s.bindings(BINDINGS))
    elif member.kind == "permissions":
        bad("empty", [])
        bad("without executor:connect", ["tools:execute"])
        bad("with an unknown permission", ["executor:connect", "arck:unknown"],
            (f"{member.pointer}/1", member.pointer))
        bad("as a string", "executor:connect")
        good("at its lower bound", ["executor:connect"])
        good("at its upper bound", ["executor:connect", "tools:execute"])
    if member.required:
        bad("null", None)
        bad("left out", _LEFT_OUT)
    return found


def _table() -> dict[tuple[str, str, str], Variant]:
    table = {(request, member.pointer, label): variant
             for request, (_, members) in REQUESTS.items() for member in members
             for label, variant in _variants(member).items()}
    for request in REQUESTS:  # PRO-01: a body that is not JSON is 400, whatever the request
        table[(request, "", "a body that is not JSON")] = Variant(_NOT_JSON, False, ("",),
                                                                  status=400)
    for request, (_, members) in REQUESTS.items():
        objects = {""} | {m.pointer for m in members if m.kind == "object"}
        for pointer in sorted(objects):
            where = f"{pointer}/{UNKNOWN}"
            table[(request, where, "an unknown member")] = Variant("arck", False, (where,))
    # docs/runs.md: "the other two members without channel_id are 422"
    for other, value in (("/max_context_tokens", CONTEXT[0]),
                         ("/summary_channel_id", lambda s: s.w.channel().channel_id)):
        table[("version", "/channel_id", f"left out beside {other[1:]}")] = Variant(
            _LEFT_OUT, False, ("/channel_id", other), ((other, value),))
    return table


VARIANTS = _table()
MONEY = {(r, m.pointer) for r, (_, members) in REQUESTS.items() for m in members if m.money}
# Tried on every run whatever the seed: bounds sampled mutants of the runtime slipped, and
# the null members that were a 500 in the reference's receipts.
CLASSICS = (
    ("channel", "/prices/input", "just above its bound"),
    ("channel", "/prices/output", "at its upper bound"),
    ("channel", "/output_capacity", "just above its bound"),
    ("session", "/subject", "just above its bound"),
    ("version", "/max_context_tokens", "just below its bound"),
    ("deposit", "/amount", "just above its bound"),
    ("progress", "/sequence", "just above its bound"),
    ("progress", "/sequence", "null"),
    ("failure", "/error", "null"),
)


@dataclass
class Scene:
    """A request set up to be sent: a valid body, how it is sent, and how to read back what a
    refusal must leave as it was (`state`) and what an accepted body stored (`stored`)."""

    w: RunWorld
    body: dict[str, Any]
    send: Callable[[Any], Exchange]
    state: Callable[[], str]
    stored: Callable[[Exchange], Any] = lambda answer: None

    def bindings(self, count: int) -> list[str]:
        """`count` distinct bindings of the tenant (the check's own first)."""
        return _bindings(self.w, count)


# Kept per target (a target's store outlives one example): its extra bindings, its document.
_MANY: weakref.WeakKeyDictionary[Any, dict[str, list[str]]] = weakref.WeakKeyDictionary()
_SCHEMAS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _bindings(w: RunWorld, count: int) -> list[str]:
    first = w.ctx.binding_id()
    known = _MANY.setdefault(w.target, {}).setdefault(first, [first])
    while len(known) < count:
        known.append(w.ok(w.target.create_binding(w.ctx.name("binding")),
                          "register a binding")["binding_id"])
    return known[:count]


def next_id_probe(w: RunWorld, create: Callable[[], Exchange], key: str,
                  what: str) -> Callable[[], str]:
    """What a refused creation must leave as it was: ids are sequential per store (docs/runs.md
    "Ids", docs/executors.md), so on a store only this run writes to, each valid creation
    made here takes the next number. The probe answers that number less the probes made so
    far: unchanged unless something in between took an id. Elsewhere (a shared live service)
    it judges nothing."""
    if w.target.info.kind not in IN_PROCESS:
        return lambda: ""
    made = [0]

    def probe() -> str:
        made[0] += 1
        created = str(w.ok(create(), f"create a valid {what} to probe the ids").get(key))
        number = re.search(r"(\d+)$", created)
        if number is None:
            raise NotTestable(f"not testable: {key} {created!r} does not end in a number "
                              "(docs/runs.md: ids sequential per store)")
        return f"next {key} {int(number.group(1)) - made[0]}"

    return probe


def _read(target: Target, path: str, key: str) -> Callable[[Exchange], Any]:
    """The object an accepted creation made, read back at `path` + its id (`key`)."""

    def stored(answer: Exchange) -> Any:
        data = answer.json_or_none()
        created = data.get(key) if isinstance(data, dict) else None
        if not isinstance(created, str):
            return None
        return target.request("GET", f"{path}{created}").json_or_none()

    return stored


def _channel_scene(w: RunWorld) -> Scene:
    t = w.target

    def valid() -> Exchange:
        return t.create_channel(ChannelSpec().body(w.ctx.name("channel")))

    return Scene(w, ChannelSpec().body(w.ctx.name("channel")), t.create_channel,
                 next_id_probe(w, valid, "channel_id", "channel"),
                 _read(t, "/v1/channels/", "channel_id"))


def _wallet_scene(w: RunWorld) -> Scene:
    t = w.target

    def valid() -> Exchange:
        return t.create_wallet({"name": w.ctx.name("wallet")})

    return Scene(w, {"name": w.ctx.name("wallet")}, t.create_wallet,
                 next_id_probe(w, valid, "wallet_id", "wallet"))


def _deposit_scene(w: RunWorld) -> Scene:
    wallet = w.wallet(0)
    path = f"/v1/wallets/{wallet}/deposits"
    return Scene(w, {"amount": 1}, lambda b: _post(w.target, path, b),
                 lambda: canonical(w.wallet_state(wallet)),
                 lambda answer: {"amount": w.wallet_state(wallet).get("balance")})


def _session_scene(w: RunWorld) -> Scene:
    t = w.target
    agent = w.agent([Step(text="never asked")])
    wallet = w.wallet(0)
    body = {"agent_version": agent.agent_version, "wallet_id": wallet}
    return Scene(w, dict(body), t.create_session,
                 next_id_probe(w, lambda: t.create_session(body), "session_id", "session"),
                 _read(t, "/v1/sessions/", "session_id"))


def _version_scene(w: RunWorld) -> Scene:
    t = w.target
    body = {"tool_set_id": w.ctx.version(1024).tool_set_id, "system_prompt": "arck bounds",
            "channel_id": w.channel().channel_id}

    def publish(b: Any) -> Exchange:
        return t.publish_agent_version(w.ctx.agent_id, b)

    return Scene(w, dict(body), publish,
                 next_id_probe(w, lambda: publish(body), "agent_version", "version"),
                 _read(t, "/v1/agent-versions/", "agent_version"))


def _run_scene(w: RunWorld) -> Scene:
    session = w.session(w.agent([Step(text="never asked")]), w.wallet(10**12))
    return Scene(w, {"input": "hello"}, lambda b: w.target.create_run(session, b),
                 lambda: canonical([w.history(session, "formal"),
                                    w.history(session, "execution")]))


def _active_run_scene(w: RunWorld, request: str) -> Scene:
    """A run waiting for its tool call, and the input or cancel body for it: a refused one
    leaves the run, its histories and its calls as they were."""
    run_id, session, _ = w.waiting_call({"q": f"bounds of {request}"})
    body = {"input": "also this"} if request == "input" else {"reason": "bounds"}
    path = f"/v1/runs/{run_id}/{request}"

    def state() -> str:
        return "\n".join([w.state(run_id, session) or "", canonical(w.tool_calls(run_id))])

    return Scene(w, body, lambda b: _post(w.target, path, b), state)


def _call_scene(w: RunWorld, request: str) -> Scene:
    """A call claimed by the world's executor (accepted too, but for `receipt` and `detach`),
    and the receipt or detach body of `request` for it."""
    t = w.executors()
    run_id, session, call_id = w.waiting_call({"q": "bounds"})
    role = w.executor()
    if request in ("receipt", "detach"):
        claim = str(w.ok(t.claim(call_id, role), f"claim tool call {call_id}").get("claim_id"))
    else:
        claim = w.accept(call_id)
    head: dict[str, Any] = {"receipt_id": f"arck-bounds-{request}", "claim_id": claim}
    bodies: dict[str, dict[str, Any]] = {
        "receipt": {**head, "kind": "accepted"},
        "progress": {**head, "kind": "progress", "sequence": 1},
        "failure": {**head, "kind": "failed", "error": {"code": "arck", "message": "bounds"}},
        "completion": {**head, "kind": "completed", "result": {"ok": True}},
        "detach": {"claim_id": claim},
    }
    body = bodies[request]
    path = f"/v1/tool-calls/{call_id}/{'detach' if request == 'detach' else 'receipts'}"

    def state() -> str:
        view = t.executor_call(call_id, w.executor())
        return "\n".join([w.state(run_id, session) or "", canonical(w.tool_calls(run_id)),
                          f"{view.status} {view.body.decode('utf-8', 'replace')}"])

    return Scene(w, body, lambda b: _post(t, path, b, role), state)


def _post(target: Target, path: str, body: Any, role: str = "full") -> Exchange:
    """POST `body`: JSON, or bytes sent as they are (a body that is not JSON)."""
    if isinstance(body, bytes):
        return target.request("POST", path, content=body, role=role)
    return target.request("POST", path, json_body=body, role=role)


def _executor_scene(w: RunWorld) -> Scene:
    t = w.executors()
    body = {"name": w.ctx.name("executor"), "bindings": [w.ctx.binding_id()]}
    return Scene(w, dict(body), t.register_executor,
                 next_id_probe(w, lambda: t.register_executor(body), "executor_id", "executor"),
                 _read(t, "/v1/executors/", "executor_id"))


def _on_a_call(request: str) -> Callable[[RunWorld], Scene]:
    return lambda w: _call_scene(w, request)


SCENES: dict[str, Callable[[RunWorld], Scene]] = {
    "channel": _channel_scene, "wallet": _wallet_scene, "deposit": _deposit_scene,
    "session": _session_scene, "version": _version_scene, "run": _run_scene,
    "executor": _executor_scene, "input": lambda w: _active_run_scene(w, "input"),
    "cancel": lambda w: _active_run_scene(w, "cancel"),
    **{r: _on_a_call(r) for r in ("receipt", "progress", "failure", "completion", "detach")},
}


def _put(body: dict[str, Any], pointer: str, value: Any) -> dict[str, Any]:
    """A copy of `body` with the member at `pointer` set to `value` (or taken out)."""
    copy: dict[str, Any] = json.loads(json.dumps(body))
    *parents, leaf = pointer.split("/")[1:]
    node = copy
    for part in parents:
        node = node[part]
    if value is _LEFT_OUT:
        node.pop(leaf, None)
    else:
        node[leaf] = value
    return copy


def _adjusted(request: str, pointer: str, value: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Only the member under test at stake: output_capacity is below total_capacity unless one
    of them is what is being tried (docs/runs.md: output_capacity below total_capacity)."""
    if request == "channel" and pointer == "/output_capacity":
        return _put(body, "/total_capacity", TOKENS)
    if request == "channel" and pointer == "/total_capacity" and isinstance(value, int):
        return _put(body, "/output_capacity", 1)
    return body


def _closed(ctx: CheckContext, api: str, pointer: str) -> bool:
    """Whether the object at `pointer` of the body of `POST api` is closed
    (`additionalProperties: false`) in the target's own OpenAPI document, the profile's
    normative shape (PRO-03): only then is a member it does not list invalid."""
    doc = _document(ctx)
    try:
        schema = doc["paths"][api]["post"]["requestBody"]["content"]["application/json"][
            "schema"]
        for part in [p for p in pointer.split("/")[1:] if p]:
            schema = _resolved(doc, schema)["properties"][part]
        return _resolved(doc, schema).get("additionalProperties") is False
    except (KeyError, TypeError, ValueError, AttributeError, StopIteration):
        return False  # no such body described: no member beside it is known to be invalid


def _document(ctx: CheckContext) -> dict[str, Any]:
    """The target's own /openapi.json, read once per target ({} without one)."""
    doc = _SCHEMAS.get(ctx.target)
    if doc is None:
        doc = _SCHEMAS[ctx.target] = ctx.target.openapi().json_or_none() or {}
    return doc


def _resolved(doc: dict[str, Any], schema: Any) -> dict[str, Any]:
    """A schema with its `$ref` followed and an `anyOf` narrowed to its object alternative."""
    for _ in range(16):
        if "$ref" in schema:
            schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in schema:
            schema = next(s for s in schema["anyOf"] if "$ref" in s or "properties" in s)
        else:
            break
    return dict(schema)


def _at(data: Any, pointer: str) -> Any:
    for part in pointer.split("/")[1:]:
        data = data.get(part) if isinstance(data, dict) else None
    return data


def _error_path(exchange: Exchange) -> Any:
    data = exchange.json_or_none()
    error = data.get("error") if isinstance(data, dict) else None
    return error.get("path") if isinstance(error, dict) else None


def _short(value: Any) -> str:
    text = "(left out)" if value is _LEFT_OUT else json.dumps(value)
    return text if len(text) <= 40 else f"{text[:30]}… ({len(text)} characters of JSON)"


# Every documented bound, crossed and met, and every rule of a body (an unknown member, an
# unknown value, a binding twice, a permission missing or unknown, a member needed beside
# another) is tried on every run (about 100 cases, each a request and a read or two): the
# edges and rules a plausible engine gets wrong are too few among 200 variants for a search
# of 10 inputs to meet; the search adds types, nulls and omissions.
RULES = ("an unknown member", "an unknown value", "with a binding twice",
         "with a number for a binding", "without executor:connect",
         "with an unknown permission")
EDGES = tuple(key for key in sorted(VARIANTS) if key[2] in (
    "just above its bound", "just below its bound", "at its lower bound", "at its upper bound",
    "empty", NAMES_NOTHING, SHORT_NAMES_NOTHING, "a body that is not JSON", *RULES)
    or key[2].startswith("left out beside"))


@property_check("PRO-02", "PRO-03", "BIL-05", "PRO-01", cases=st.sampled_from(sorted(VARIANTS)),
                examples=CLASSICS + tuple(k for k in EDGES if k not in CLASSICS))
def test_request_bounds(ctx: CheckContext, case: Any) -> None:
    """One member of one runtime request made bad (or set to its bound): a bad one refused
    422 with the error shape and `path` naming it, and nothing created or moved (read back);
    a value at its bound taken, and read back as sent where the object can be read."""
    request, pointer, label = case
    variant = VARIANTS[(request, pointer, label)]
    api = REQUESTS[request][0]
    if label == "an unknown member" and not _closed(ctx, api, pointer.rsplit("/", 1)[0]):
        return  # the target's document allows other members there
    scene = SCENES[request](world(ctx))
    value = variant.value(scene) if callable(variant.value) else variant.value
    body: Any
    if value is _NOT_JSON:
        body, value = NOT_JSON, NOT_JSON.decode()
    else:
        body = _adjusted(request, pointer, value, _put(scene.body, pointer, value))
        for other, extra in variant.siblings:
            body = _put(body, other, extra(scene) if callable(extra) else extra)
    ids: tuple[str, ...] = ("PRO-02", "BIL-05") if (request, pointer) in MONEY else ("PRO-02",)
    if variant.status == 400:
        ids = ("PRO-01",)
    what = f"POST {api} with {pointer} {label}: {_short(value)}" if pointer else \
        f"POST {api} with {label}: {_short(value)}"
    if variant.allowed:
        answer = scene.send(body)
        expect(200 <= answer.status < 300, ids, f"2xx for {what} (inside the documented bound)",
               answer.describe, hint=f"Replay: {answer.as_curl()}")
        stored = scene.stored(answer)
        expect(stored is None or _at(stored, pointer) == value, "PRO-03",
               f"{pointer} read back as sent after {what}",
               lambda: canonical(stored)[:300], hint=f"Replay: {answer.as_curl()}")
        return
    before = scene.state()
    answer = scene.send(body)
    expect(answer.status == variant.status, ids, f"{variant.status} for {what}",
           answer.describe, hint=f"Replay: {answer.as_curl()}")
    listed = documented_statuses(_document(ctx), "POST", httpx.URL(answer.url).path)
    expect(listed is None or status_listed(answer.status, listed), "PRO-03",
           f"the {answer.status} of {what} among the responses /openapi.json lists for it (the "
           "served document is the normative shape)", f"listed: {sorted(listed or ())}",
           hint=f"Replay: {answer.as_curl()}, then GET /openapi.json")
    problem = error_shape_problem(answer)
    expect(problem is None, "PRO-03", f'an error body {{"error": {{"code", "message", '
           f'"path"}}}} for {what}', lambda: f"{problem}: {answer.describe()}",
           hint=f"Replay: {answer.as_curl()}")
    path = _error_path(answer)
    expect(variant.status != 422 or path in variant.paths, "PRO-03",
           f"error path {' or '.join(map(repr, variant.paths))} for {what}", answer.describe,
           hint=f"Replay: {answer.as_curl()}")
    after = scene.state()
    expect(after == before, "PRO-02", f"nothing created or changed by the refused {what}",
           lambda: f"before: {before[:300]}; after: {after[:300]}",
           hint=f"Replay: {answer.as_curl()}")


@check("RUN-01", "PRO-02", "PRO-03")
def test_session_needs_a_version_with_a_channel(ctx: CheckContext) -> None:
    """A session on a version published without `channel_id`, which docs/runs.md says a
    session needs: never a server error (core: the version is admitted or refused, RUN-01);
    profile: 422 naming `/agent_version`, and no session created (read back)."""
    w = world(ctx)
    version = ctx.version(1024)  # published with no run settings at all
    wallet = w.wallet(0)
    agent = w.agent([Step(text="never asked")])
    probe = next_id_probe(w, lambda: w.target.create_session(
        {"agent_version": agent.agent_version, "wallet_id": wallet}), "session_id", "session")
    before = probe() if ctx.profile == "reference" else ""
    answer = w.target.create_session({"agent_version": version.agent_version,
                                      "wallet_id": wallet})
    what = f"a session on version {version.agent_version}, which names no channel_id"
    replay = f"Replay: {answer.as_curl()}"
    crash: tuple[str, ...] = ("RUN-01", "PRO-02") if ctx.profile == "reference" else ("RUN-01",)
    expect(answer.status < 500, crash, f"{what} created or refused (4xx), never a server "
           "error", answer.describe, hint=replay)
    session = (answer.json_or_none() or {}).get("session_id") if answer.status < 300 else None
    if isinstance(session, str):
        started = w.target.create_run(session, {"input": "Hello"})
        expect(started.status < 500, "RUN-01", f"a run in {what} admitted or refused, never "
               "a server error", started.describe, hint=f"Replay: {started.as_curl()}")
    if ctx.profile != "reference":
        return
    expect(answer.status == 422, ("RUN-01", "PRO-02"), f"422 for {what} (docs/runs.md: "
           "channel_id is needed to create a session)", answer.describe, hint=replay)
    problem = error_shape_problem(answer)
    expect(problem is None and _error_path(answer) == "/agent_version", "PRO-03",
           f"an error body naming path '/agent_version' for {what}",
           lambda: f"{problem or 'path ' + repr(_error_path(answer))}: {answer.describe()}",
           hint=replay)
    after = probe()
    expect(after == before, "PRO-02", f"no session created by the refused {what}",
           f"before: {before}; after: {after}", hint=replay)
