"""Reads never fail: every documented read of runs and executors (docs/runs.md "Wire",
docs/executors.md "Wire") answered, with its documented members, after each kind of write.

A read is how a client, an executor and every other check learn what happened (RUN-03: the
server snapshot is the truth); one that fails after some write hides that write's outcome.
Core: the run, its events, its tool calls (RUN-03), both histories (RUN-07) and the wallet
(BIL-04) answered 2xx as the JSON their readers need; a call detached after acceptance never
listed `dispatchable` again (EXE-15). Profile: 200 with the tables' members (PRO-03), the
session and the channel read too, and the executor's own view of a call it held, in the
states docs/executors.md gives it (EXE-17).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arck.conformance.checking import check, expect
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotTestable
from arck.conformance.runworld import TOOL, Agent, RunWorld, canonical, world
from arck.simulator.provider import Step, ToolCall
from arck.simulator.target import Exchange

FUNDS = 10**12
# docs/runs.md "Wire" and docs/executors.md "Wire": the members of each answer
SESSION = {"session_id", "agent_version", "wallet_id", "subject"}
CHANNEL = {"channel_id", "name", "model", "input_capacity", "total_capacity", "output_capacity",
           "timeout_ms", "prices"}
WALLET = {"wallet_id", "name", "balance", "reserved", "available", "charged"}
RUN = {"run_id", "session_id", "state", "end_reason"}
EVENT = {"id", "type", "at", "data"}
TOOL_CALL = {"call_id", "run_id", "tool_call_id", "name", "arguments", "state",
             "cancel_requested"}
EXECUTOR_CALL = {"call_id", "state", "claim_id", "cancel_requested", "run_ended"}


@dataclass
class Reader:
    """Reads everything documented about one session after a write, and judges the answers.

    `held` are the calls the world's executor holds or held a claim on, each with the state
    docs/executors.md gives it now and `run_ended` (None: either, the run may have moved on
    by itself): its view of them is read too.
    """

    w: RunWorld
    agent: Agent
    wallet: str
    session: str
    held: dict[str, tuple[str, bool | None]] = field(default_factory=dict)

    def all(self, after: str, run_id: str | None = None) -> None:
        w, profile = self.w, self.w.ctx.profile == "reference"
        t = w.target
        if profile:
            self.members(t.request("GET", f"/v1/sessions/{self.session}"), SESSION, after,
                         "PRO-03", {"session_id": self.session, "wallet_id": self.wallet,
                                    "agent_version": self.agent.agent_version})
            self.members(t.request("GET", f"/v1/channels/{self.agent.channel.channel_id}"),
                         CHANNEL, after, "PRO-03",
                         {"channel_id": self.agent.channel.channel_id})
        for kind in ("formal", "execution"):
            data = self.members(t.history(self.session, kind), {"items"}, after, "RUN-07")
            self.listed(data, "items", after, "RUN-07", t.history(self.session, kind))
        wallet = t.get_wallet(self.wallet)
        self.members(wallet, {"balance", "reserved"}, after, "BIL-04")
        if profile:
            self.members(wallet, WALLET, after, "PRO-03", {"wallet_id": self.wallet})
        if run_id is None:
            return
        run = t.get_run(run_id)
        self.members(run, {"state"}, after, "RUN-03", {"run_id": run_id})
        if profile:
            self.members(run, RUN, after, "PRO-03", {"session_id": self.session})
        events = t.run_events(run_id)
        for item in self.listed(self.members(events, {"events"}, after, "RUN-03"), "events",
                                after, "RUN-03", events):
            if profile:
                self.item(item, EVENT, events, after)
        calls = t.tool_calls(run_id)
        listed = self.listed(self.members(calls, {"tool_calls"}, after, "RUN-03"),
                             "tool_calls", after, "RUN-03", calls)
        for item in listed:
            if profile:
                self.item(item, TOOL_CALL, calls, after)
        self.executor_views(listed, calls, after, profile)

    def executor_views(self, listed: list[Any], calls: Exchange, after: str,
                       profile: bool) -> None:
        """The held calls as listed in the run and as their executor reads them."""
        states = {c.get("call_id"): c.get("state") for c in listed if isinstance(c, dict)}
        for call_id, (state, ended) in self.held.items():
            if state == "reconciliation_required":
                expect(states.get(call_id) != "dispatchable", "EXE-15",
                       f"tool call {call_id}, detached after acceptance, never listed "
                       f"dispatchable again ({after})", calls.describe,
                       hint=f"Replay: {calls.as_curl()}")
            if not profile:
                continue
            expect(states.get(call_id) == state, "EXE-17", f"tool call {call_id} listed "
                   f"{state!r} in its run ({after})", calls.describe,
                   hint=f"Replay: {calls.as_curl()}")
            view = self.w.executors().executor_call(call_id, self.w.executor())
            values: dict[str, Any] = {"call_id": call_id, "state": state}
            if ended is not None:
                values["run_ended"] = ended
            self.members(view, EXECUTOR_CALL, after, "EXE-17", values)

    def members(self, exchange: Exchange, members: set[str], after: str, rid: str,
                values: dict[str, Any] | None = None) -> dict[str, Any]:
        """The answer's object, once judged: 2xx (200 on the profile), a JSON object holding
        `members`, and `values` as given."""
        data = exchange.json_or_none()
        profile = self.w.ctx.profile == "reference"
        ok = exchange.status == 200 if profile else 200 <= exchange.status < 300
        replay = f"Replay: {exchange.as_curl()}"
        expect(ok and isinstance(data, dict), rid, f"{'200' if profile else '2xx'} with a "
               f"JSON object for {exchange.method} {exchange.url} after {after}",
               exchange.describe, hint=replay)
        assert isinstance(data, dict)
        missing = sorted(members - set(data))
        expect(not missing, rid, f"members {sorted(members)} in the answer to "
               f"{exchange.method} {exchange.url} after {after}",
               lambda: f"missing {missing}: {exchange.describe()}", hint=replay)
        wrong = {k: data.get(k) for k, v in (values or {}).items() if data.get(k) != v}
        expect(not wrong, rid, f"{values} in the answer to {exchange.method} {exchange.url} "
               f"after {after}", lambda: f"{wrong}: {exchange.describe()}", hint=replay)
        return data

    def listed(self, data: dict[str, Any], key: str, after: str, rid: str,
               exchange: Exchange) -> list[Any]:
        items = data.get(key)
        expect(isinstance(items, list), rid, f"a list {key!r} in the answer to "
               f"{exchange.method} {exchange.url} after {after}", exchange.describe,
               hint=f"Replay: {exchange.as_curl()}")
        assert isinstance(items, list)
        return items

    def item(self, item: Any, members: set[str], exchange: Exchange, after: str) -> None:
        missing = sorted(members - set(item)) if isinstance(item, dict) else sorted(members)
        expect(not missing, "PRO-03", f"each item of {exchange.method} {exchange.url} with "
               f"members {sorted(members)} after {after}",
               lambda: f"missing {missing} in {canonical(item)[:300]}",
               hint=f"Replay: {exchange.as_curl()}")


def _waiting(w: RunWorld, run_id: str, calls: int) -> list[str]:
    """The dispatchable calls of a run that waits for `calls` of them."""
    snapshot, _ = w.settle(run_id)
    pending = [str(c.get("call_id")) for c in w.tool_calls(run_id)
               if c.get("state") == "dispatchable"]
    if snapshot.get("state") != "waiting_tools" or len(pending) != calls:
        raise NotTestable(f"not testable: run {run_id} never waited for {calls} tool "
                          f"call(s): {snapshot}; calls {pending}")
    return pending


@check("RUN-03", "RUN-07", "BIL-04", "EXE-15", "EXE-17", "PRO-03")
def test_reads_after_each_write(ctx: CheckContext) -> None:
    """Every documented read of a session, its run, its calls and its wallet, after each
    kind of write: the session created, a run started, waiting on two tool calls, one call
    claimed, the claim detached, the call claimed and accepted, detached after acceptance,
    the other answered, the run ended; and in a second run, a call claimed and the run
    cancelled."""
    w = world(ctx)
    target = w.executors()
    calls = [ToolCall(name=TOOL, arguments={"q": n}) for n in (1, 2)]
    agent = w.agent([Step(tool_calls=calls), Step(text="read back")])
    wallet = w.wallet(FUNDS)
    reader = Reader(w, agent, wallet, w.session(agent, wallet))
    reader.all("the session was created")
    run_id = str(w.start(reader.session, "Read everything back").get("run_id"))
    reader.all("a run was started", run_id)
    first, second = _waiting(w, run_id, 2)
    reader.all("the run began waiting on two tool calls", run_id)
    role = w.executor()
    claim = str(w.ok(target.claim(first, role), f"claim {first}").get("claim_id"))
    reader.held[first] = ("claimed", False)
    reader.all(f"{first} was claimed", run_id)
    w.ok(target.detach(first, claim, role), f"detach {first} before acceptance")
    reader.held[first] = ("dispatchable", False)  # nothing ran: it is offered again
    reader.all(f"the claim on {first} was detached before acceptance", run_id)
    claim = w.accept(first)
    reader.held[first] = ("accepted", False)
    reader.all(f"{first} was claimed again and its acceptance receipt stored", run_id)
    w.ok(target.detach(first, claim, w.executor()), f"detach {first} after acceptance")
    reader.held[first] = ("reconciliation_required", False)
    reader.all(f"the claim on {first} was detached after acceptance", run_id)
    w.ok(w.answer(second, {"status": "ok"}, "arck-reads-final"), f"answer {second}")
    # the batch is answered: the run may have gone on to its end by now
    reader.held = {first: ("reconciliation_required", None), second: ("completed", None)}
    reader.all(f"the final receipt of {second} was stored", run_id)
    snapshot, _ = w.settle(run_id)
    if snapshot.get("state") != "ended":
        raise NotTestable(f"not testable: run {run_id} never ended: {snapshot}")
    reader.held = {k: (state, True) for k, (state, _) in reader.held.items()}
    reader.all("the run ended", run_id)
    other = w.agent([Step(tool_calls=[ToolCall(name=TOOL, arguments={"q": 3})])],
                    channel=agent.channel)
    cancelled = Reader(w, other, wallet, w.session(other, wallet))
    run2 = str(w.start(cancelled.session, "To be cancelled").get("run_id"))
    [third] = _waiting(w, run2, 1)
    w.ok(target.claim(third, w.executor()), f"claim {third}")
    cancelled.held[third] = ("claimed", False)
    cancelled.all(f"{third} was claimed", run2)
    w.ok(target.cancel_run(run2), f"cancel run {run2}")
    cancelled.held[third] = ("claimed", True)  # a call keeps the state it had then
    cancelled.all("the run was cancelled", run2)
