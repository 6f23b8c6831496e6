"""PRO-03 for the runtime's creations: what a creation answers is the resource as stored.
A channel, a wallet (and a deposit's answer), a session and a registered executor are each read
back at once; the read must be canonically the object the creation answered (an executor's
token aside, answered once), with the profile's sequential id. An engine whose creation answer
is built apart from what it stores (a wallet answered `reserved: -1`) shows every later read
right and lies only there."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx

from arck.conformance import oracle
from arck.conformance.checking import check, expect
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotApplicable
from arck.conformance.judge import documented_statuses, status_listed
from arck.conformance.runworld import ChannelSpec, canonical, world
from arck.simulator.target import Exchange

PREFIXES = {"channel_id": "ch", "wallet_id": "wal", "session_id": "ses", "executor_id": "exe"}
ONCE = {"token"}  # answered at creation only (docs/executors.md)


@check("PRO-03")
def test_created_answers_read_back(ctx: CheckContext) -> None:
    """Each creation answers 201 with members a read of it at once answers the same (a
    deposit: 200 with the wallet as read), a status its operation in /openapi.json lists;
    ids of the profile's form, `<prefix>-NNNNNN`."""
    if ctx.profile != "reference":
        raise NotApplicable("the answers' members and ids are the reference profile's")
    w = world(ctx)
    target = w.target
    spec = ChannelSpec(model=ctx.name("created-model"))

    doc = target.openapi().json_or_none()

    def judge(what: str, made: Exchange, key: str, read: Callable[[str], Exchange],
              status: int = 201) -> dict[str, Any]:
        data = made.json_or_none()
        expect(made.status == status and isinstance(data, dict) and isinstance(
            data.get(key), str), "PRO-03", f"{status} with a {key} for {what}", made.describe)
        path = httpx.URL(made.url).path
        listed = documented_statuses(doc, made.method, path)
        expect(listed is None or status_listed(made.status, listed), "PRO-03",
               f"the {made.status} answered for {what} among the responses /openapi.json lists "
               f"for POST {path} (the served document is the normative shape)",
               f"listed: {sorted(listed or ())}")
        assert isinstance(data, dict)
        ident = str(data[key])
        expect(re.fullmatch(rf"{PREFIXES[key]}-\d{{6,}}", ident) is not None, "PRO-03",
               f"{key} of the form {PREFIXES[key]}-NNNNNN", repr(ident))
        again = read(ident)
        shown = {k: v for k, v in data.items() if k not in ONCE}
        seen = again.json_or_none()
        same = isinstance(seen, dict) and all(
            k in seen and oracle.canonically_equal(seen[k], v) for k, v in shown.items())
        expect(again.status == 200 and same, "PRO-03",
               f"{what} read back with every member as it was answered (a read may add "
               "members, such as an executor's online_until)",
               lambda: f"answered {canonical(shown)[:300]}; read {again.describe()}",
               f"Reproduce: {made.as_curl()}, then {again.as_curl()}")
        return data

    channel = judge("a channel", target.create_channel(spec.body(ctx.name("channel"))),
                    "channel_id", lambda i: target.request("GET", f"/v1/channels/{i}"))
    wallet = judge("a wallet", target.create_wallet({"name": ctx.name("wallet")}),
                   "wallet_id", target.get_wallet)
    wallet_id = str(wallet["wallet_id"])
    judge("a deposit's wallet", target.deposit(wallet_id, 1_000), "wallet_id",
          target.get_wallet, status=200)
    agent = w.agent([], channel=w.channel(ChannelSpec(model=str(channel["model"]))))
    judge("a session", target.create_session({"agent_version": agent.agent_version,
                                              "wallet_id": wallet_id}),
          "session_id", lambda i: target.request("GET", f"/v1/sessions/{i}"))
    executors = w.executors()
    registered = executors.register_executor(
        {"name": ctx.name("executor"), "bindings": [ctx.binding_id()]})
    w.executor_api(registered)  # "not applicable" for a target with no executor API
    judge("an executor", registered, "executor_id",
          lambda i: target.request("GET", f"/v1/executors/{i}"))
