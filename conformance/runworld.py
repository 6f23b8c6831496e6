"""The setup checks of runs share: channels, wallets, scripted agents, sessions, runs, waiting.

Every step goes through the target's public API (docs/runs.md) and the harness's control of
the simulated provider and of time; a step the target refuses makes the check "not testable"
(setup failed), and a target with no provider to point at makes it "not applicable".
Waiting moves virtual time only to the next timer that is due, so a run that neither ends nor
waits for anything is seen to hang (RUN-11) instead of being waited on for ever.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure, NotApplicable, NotTestable
from arck.simulator.control import Control
from arck.simulator.executor.rules import contains_equal, run_state
from arck.simulator.provider import (
    RecordedRequest,
    RequestRecord,
    SimulatedProvider,
    Step,
    ToolCall,
    script_tag,
)
from arck.simulator.target import Exchange, ExecutorTarget, RuntimeTarget

__all__ = ["PROMPT", "SETTLED", "TOOL", "Agent", "ChannelSpec", "RunWorld", "canonical",
           "contains_equal", "only", "world"]

T = TypeVar("T")

SETTLED = frozenset({"ended", "waiting_tools"})
PROMPT = "You are an arck conformance agent."  # then the script's tag
TOOL = "arck_sample"  # a model-callable name: OpenAI function names allow no dots
MAX_WAIT_STEPS = 200  # timers a wait may pass before the run counts as never settling


@dataclass(frozen=True)
class ChannelSpec:
    """A channel's declared figures (BIL-05: integer micro-units per million tokens)."""

    model: str = "sim-1"
    input_capacity: int = 100_000
    total_capacity: int = 128_000
    output_capacity: int = 4_000
    timeout_ms: int = 30_000
    input_price: int = 2_000_000
    cached_price: int = 500_000
    output_price: int = 8_000_000

    def body(self, name: str) -> dict[str, Any]:
        return {
            "name": name, "model": self.model, "input_capacity": self.input_capacity,
            "total_capacity": self.total_capacity, "output_capacity": self.output_capacity,
            "timeout_ms": self.timeout_ms,
            "prices": {"input": self.input_price, "cached_input": self.cached_price,
                       "output": self.output_price},
        }


@dataclass(frozen=True)
class Channel:
    channel_id: str
    spec: ChannelSpec


@dataclass(frozen=True)
class Agent:
    """A published version whose system prompt names its provider script."""

    agent_version: str
    script: str
    system_prompt: str
    tool_name: str
    channel: Channel
    max_context_tokens: int | None


@dataclass
class RunWorld:
    ctx: CheckContext
    target: RuntimeTarget
    control: Control
    _channels: dict[ChannelSpec, Channel] = field(default_factory=dict)
    _executor: str | None = None  # the role of the world's executor, once registered
    # run id -> the target's restart count when the run was created; dropped once judged
    _restarts_at_start: dict[str, int] = field(default_factory=dict)

    @property
    def provider(self) -> SimulatedProvider:
        return self.control.provider

    # -- setup -----------------------------------------------------------------------------

    def channel(self, spec: ChannelSpec | None = None) -> Channel:
        spec = spec or ChannelSpec()
        if spec not in self._channels:
            exchange = self.target.create_channel(spec.body(self.ctx.name("channel")))
            self._channels[spec] = Channel(self._id(exchange, "channel_id", "create a channel"),
                                           spec)
        return self._channels[spec]

    def wallet(self, funds: int) -> str:
        wallet_id = self._id(self.target.create_wallet({"name": self.ctx.name("wallet")}),
                             "wallet_id", "create a wallet")
        if funds:
            self.ok(self.target.deposit(wallet_id, funds), f"deposit {funds} micro-units")
        return wallet_id

    def agent(
        self,
        steps: Sequence[Step],
        *,
        channel: Channel | None = None,
        budget: int = 1024,
        max_context_tokens: int | None = None,
        summary_channel: Channel | None = None,
        schema: dict[str, Any] | None = None,
    ) -> Agent:
        """A version on `channel` with one tool of `budget` bytes (and input `schema`),
        following `steps`."""
        tool = {**self.ctx.tool(budget, schema), "name": TOOL}
        tool_set = self.target.publish_tool_set({"name": self.ctx.name("tools"), "tools": [tool]})
        return self.agent_on(self._id(tool_set, "tool_set_id", "publish a tool set"), steps,
                             channel=channel, max_context_tokens=max_context_tokens,
                             summary_channel=summary_channel)

    def agent_on(
        self,
        tool_set_id: str,
        steps: Sequence[Step],
        *,
        channel: Channel | None = None,
        max_context_tokens: int | None = None,
        summary_channel: Channel | None = None,
    ) -> Agent:
        """A version of a tool set the check published itself, following `steps`."""
        channel = channel or self.channel()
        script = self.ctx.name("script")
        self.provider.add_script(script, list(steps))
        prompt = f"{PROMPT} {script_tag(script)}"
        body: dict[str, Any] = {
            "tool_set_id": tool_set_id, "system_prompt": prompt,
            "channel_id": channel.channel_id,
        }
        if max_context_tokens is not None:
            body["max_context_tokens"] = max_context_tokens
        if summary_channel is not None:
            body["summary_channel_id"] = summary_channel.channel_id
        published = self.target.publish_agent_version(self.ctx.agent_id, body)
        version = self._id(published, "agent_version", "publish an agent version with a channel")
        return Agent(version, script, prompt, TOOL, channel, max_context_tokens)

    def session(self, agent: Agent, wallet_id: str) -> str:
        body = {"agent_version": agent.agent_version, "wallet_id": wallet_id}
        return self._id(self.target.create_session(body), "session_id", "create a session")

    def start(self, session_id: str, text: str) -> dict[str, Any]:
        """Create a run; its snapshot (a run refused at admission comes back ended)."""
        created = self.target.create_run(session_id, {"input": text})
        data = self.ok(created, "create a run")
        if not isinstance(data.get("run_id"), str):
            raise NotTestable(f"setup could not create a run: no run_id in {data}",
                              exchange=created)
        self._restarts_at_start[data["run_id"]] = getattr(self.target, "restarts", 0)
        return data

    def waiting_call(self, arguments: dict[str, Any]) -> tuple[str, str, str]:
        """A run waiting for one tool call planned with `arguments` (then a text answer):
        (run id, session id, call id); "not testable" when the target never gets there."""
        run_id, session, [call_id] = self.waiting_calls(arguments)
        return run_id, session, call_id

    def waiting_calls(self, *arguments: dict[str, Any]) -> tuple[str, str, list[str]]:
        """A run waiting for a batch of tool calls, one per `arguments` (then a text answer):
        (run id, session id, the call ids in order); "not testable" when the target never
        gets there."""
        calls = [ToolCall(name=TOOL, arguments=a) for a in arguments]
        agent = self.agent([Step(tool_calls=calls), Step(text="done")])
        session = self.session(agent, self.wallet(10**12))
        run_id = str(self.start(session, "Use the tool").get("run_id"))
        snapshot, _ = self.settle(run_id)
        pending = [str(c.get("call_id")) for c in self.tool_calls(run_id)
                   if c.get("state") == "dispatchable"]
        if snapshot.get("state") != "waiting_tools" or len(pending) != len(arguments):
            # what the provider saw of the conversation tells a lost or refused model call
            seen = [(r.id, r.outcome, r.status_code, list(r.faults))
                    for r in self.provider.records() if r.conversation == agent.script]
            raise NotTestable(f"not testable: the run never waited for its {len(arguments)} "
                              f"tool call(s): {snapshot}; calls {canonical(pending)[:300]}; "
                              f"the provider's records of its model calls (id, outcome, "
                              f"status, faults): {seen}")
        return run_id, session, pending

    # -- observing -------------------------------------------------------------------------

    def settle(self, run_id: str) -> tuple[dict[str, Any], int]:
        """The run's snapshot once it ended or waits for tools, and the timers passed.

        A run still active with no timer pending is returned as it is: nothing will ever
        move it, and the check says so.
        """
        for passed in range(MAX_WAIT_STEPS):
            snapshot = self.snapshot(run_id)
            if snapshot.get("state") in SETTLED:
                if snapshot.get("state") == "ended":
                    self._no_hidden_takeover(run_id)
                return snapshot, passed
            deadline = self.control.next_deadline()
            if deadline is None:
                return snapshot, passed
            self.control.advance(max(0.0, deadline - self.control.now()))
        return self.snapshot(run_id), MAX_WAIT_STEPS

    def settle_all(self) -> None:
        """Settle every run this world started: a check that stops early (a step the target
        lacks) must not leave a model call in flight holding a worker from later checks."""
        for run_id in list(self._restarts_at_start):
            self.settle(run_id)

    def _no_hidden_takeover(self, run_id: str) -> None:
        """Profile: a run nobody restarted is never taken over. In the reference profile a
        takeover (`run.recovered`) means the worker holding the run died; with no restart
        that is an exception the engine swallowed, the run resumed a lease later, and every
        other figure looks right. Judged once per run, when it has ended."""
        at_start = self._restarts_at_start.pop(run_id, None)
        if at_start is None or self.ctx.profile != "reference":
            return
        if getattr(self.target, "restarts", 0) != at_start:
            return
        recovered = [e for e in self.events(run_id) if e.get("type") == "run.recovered"]
        if recovered:
            raise CheckFailure(
                "RUN-02", f"profile: run {run_id}, never restarted, never taken over (a "
                "takeover means its worker died: docs/runs.md, Leases and recovery)",
                canonical(recovered)[:400],
                hint=f"Reproduce: GET /v1/runs/{run_id}/events and look for run.recovered; "
                "the engine's log names the error that killed the worker.")

    def idle(self, seconds: float) -> None:
        """Move time over a stretch in which nothing the check judges needs the provider
        (an executor's silence): one step where the control can take it (`advance_idle`;
        docs/targets.md "Runs"), else as `advance`."""
        getattr(self.control, "advance_idle", self.control.advance)(seconds)

    def drive(
        self, run_id: str, result: Callable[[int], Any], receipt: Callable[[int], str],
        rounds: int = 20,
    ) -> dict[str, Any]:
        """Settle a run, answering each tool call it waits for with a completed receipt
        (`receipt(n)` and `result(n)` for the n-th call answered), until it stops waiting."""
        answered = 0
        snapshot: dict[str, Any] = {}
        for _ in range(rounds):
            snapshot, _passed = self.settle(run_id)
            pending = [c for c in self.tool_calls(run_id) if c.get("state") == "dispatchable"] \
                if snapshot.get("state") == "waiting_tools" else []
            if not pending:
                return snapshot
            for call in pending:
                answered += 1
                self.ok(self.answer(str(call["call_id"]), result(answered), receipt(answered)),
                        "send a completed receipt")
        return snapshot

    def answer_all(self, run_id: str, result: Any, rounds: int = 20,
                   receipt: Callable[[int], str] | None = None) -> dict[str, Any]:
        """`drive` with the same `result` for every call; receipt ids `arck-r-<run>-<n>`
        unless `receipt` names them (a check whose forgery must name real ids)."""
        return self.drive(run_id, lambda n: result,
                          receipt or (lambda n: f"arck-r-{run_id}-{n}"), rounds)

    # -- executing tool calls (docs/executors.md) ------------------------------------------

    def executor(self) -> str:
        """The role of the world's executor (registered once, for the check's binding),
        online: a heartbeat on every use, as time may have moved past its window."""
        if self._executor is None:
            self._executor = self.register_executor(online=False)
        self.ok(self.executors().heartbeat(self._executor), "send an executor heartbeat")
        return self._executor

    def executors(self) -> ExecutorTarget:
        """The target's executor steps, or "not applicable"."""
        target = self.target
        if not isinstance(target, ExecutorTarget):
            raise NotApplicable("the target has no executor steps (docs/executors.md): its "
                                "tool calls cannot be answered")
        return target

    def register_executor(
        self, bindings: Sequence[str] | None = None, permissions: Sequence[str] | None = None,
        *, online: bool = True,
    ) -> str:
        """A new executor (default: for the check's binding, every permission): its role."""
        target = self.executors()
        body: dict[str, Any] = {"name": self.ctx.name("executor"),
                                "bindings": list(bindings or [self.ctx.binding_id()])}
        if permissions is not None:
            body["permissions"] = list(permissions)
        exchange = target.register_executor(body)
        self.executor_api(exchange)
        role = target.executor_role(self._id(exchange, "executor_id", "register an executor"))
        if online:
            self.ok(target.heartbeat(role), "send an executor heartbeat")
        return role

    @staticmethod
    def executor_api(registered: Exchange) -> None:
        """"Not applicable" when registering an executor met no executor API: an unknown
        route (404, 405, 501) whose answer names no binding (a 404 about the binding the
        check registered is the target's own trouble, and stays "not testable")."""
        if registered.status in (404, 405, 501) and b"binding" not in registered.body.lower():
            raise NotApplicable(f"the target has no executor API (docs/executors.md): "
                                f"registering an executor answered {registered.describe()}")

    def accept(self, call_id: str, role: str | None = None) -> str:
        """Claim a call and have its acceptance confirmed: the claim's id. As `role` (an
        executor the check keeps online), else as the world's executor."""
        role = role or self.executor()
        target = self.executors()
        claim = self._id(target.claim(call_id, role), "claim_id", f"claim tool call {call_id}")
        body = {"receipt_id": f"arck-accept-{claim}", "claim_id": claim, "kind": "accepted"}
        self.ok(target.submit_receipt(call_id, body, role=role),
                f"have the acceptance of tool call {call_id} confirmed")
        return claim

    def finish(
        self, call_id: str, claim: str, receipt_id: str, result: Any, kind: str = "completed",
        *, role: str | None = None,
    ) -> Exchange:
        """The final receipt under `claim` (the check judges its answer); `role`: an executor
        known to be online (no time has moved since its heartbeat), or the world's, after a
        heartbeat."""
        body: dict[str, Any] = {"receipt_id": receipt_id, "claim_id": claim, "kind": kind}
        if kind == "failed":
            body["error"] = result
        elif kind != "cancelled":
            body["result"] = result
        return self.target.submit_receipt(call_id, body, role=role or self.executor())

    def answer(
        self, call_id: str, result: Any, receipt_id: str, kind: str = "completed",
        role: str | None = None,
    ) -> Exchange:
        """Claim, accept and finish a call as a well-behaved executor (`role`, else the
        world's): the final's answer. One heartbeat at most: the acceptance was confirmed a
        moment before, with no time moved."""
        claim = self.accept(call_id, role)
        return self.finish(call_id, claim, receipt_id, result, kind, role=role or self._executor)

    def state(self, run_id: str, session: str, *, only_ended: bool = False) -> str | None:
        """The run's snapshot and its session's two histories as one canonical text (with
        `only_ended`: None until the run has ended); "not testable" when the run cannot be
        read (`simulator/executor/rules.run_state`, shared with the scenario runner)."""
        snapshot, state = run_state(self.target, run_id, session, only_ended=only_ended)
        if not isinstance(snapshot, dict):
            self.snapshot(run_id)  # raises, naming the answer
        return state

    def snapshot(self, run_id: str) -> dict[str, Any]:
        return self.ok(self.target.get_run(run_id), f"read run {run_id}")

    def events(self, run_id: str) -> list[dict[str, Any]]:
        read = self.target.run_events(run_id)
        events = self.ok(read, f"read the events of run {run_id}").get("events")
        if not isinstance(events, list):
            raise NotTestable(f"the events of run {run_id} are not a list", exchange=read)
        return events

    def of_type(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        return [e.get("data", {}) for e in self.events(run_id) if e.get("type") == kind]

    def wallet_state(self, wallet_id: str) -> dict[str, Any]:
        return self.ok(self.target.get_wallet(wallet_id), f"read wallet {wallet_id}")

    def history(self, session_id: str, kind: str) -> list[Any]:
        read = self.target.history(session_id, kind)
        items = self.ok(read, f"read the {kind} history").get("items")
        if not isinstance(items, list):
            raise NotTestable(f"the {kind} history is not a list", exchange=read)
        return items

    def tool_calls(self, run_id: str) -> list[dict[str, Any]]:
        read = self.target.tool_calls(run_id)
        calls = self.ok(read, f"list the tool calls of {run_id}").get("tool_calls")
        if not isinstance(calls, list):
            raise NotTestable(f"the tool calls of {run_id} are not a list", exchange=read)
        return calls

    def requests(self, agent: Agent) -> list[RecordedRequest]:
        """What the provider received in this agent's conversation, in order."""
        return self.provider.recorded(agent.script)

    def received(self, agent: Agent, run_id: str, calls: int = 1) -> list[RequestRecord]:
        """The provider's records of this agent's conversation once it holds `calls` of
        them, each counted (its usage known): time moves to each next timer meanwhile, as
        `settle` does, for a service that calls the provider a moment after it was asked
        (the quiet wait over HTTP is only 30 ms) or on its own clock. "Not testable",
        saying what is missing and what was seen, when the run settles first or nothing
        will move it any more."""
        for _ in range(MAX_WAIT_STEPS):
            found = [r for r in self.provider.records() if r.conversation == agent.script
                     and r.true_usage is not None]
            if len(found) >= calls:
                return found
            snapshot = self.snapshot(run_id)
            deadline = None if snapshot.get("state") in SETTLED else self.control.next_deadline()
            if deadline is None:
                break
            self.control.advance(max(0.0, deadline - self.control.now()))
        found = [r for r in self.provider.records() if r.conversation == agent.script]
        raise NotTestable(
            f"not testable: the provider never received model call {len(found) + 1} of run "
            f"{run_id} (conversation {agent.script}; {calls} expected): it holds "
            f"{[(r.id, r.outcome) for r in found]} of it, {len(self.provider.records())} "
            f"request(s) in all; the run is {str(self.snapshot(run_id))[:300]}")

    @contextmanager
    def faults(self, *kinds: str) -> Iterator[None]:
        """The block needs each of `kinds` to fire at least once, or it tested nothing."""
        before = self.provider.fault_counts()
        yield
        after = self.provider.fault_counts()
        silent = [k for k in kinds if after.get(k, 0) <= before.get(k, 0)]
        if silent:
            raise NotTestable(f"not testable: fault never fired: {', '.join(silent)}")

    # -- helpers ---------------------------------------------------------------------------

    def ok(self, exchange: Exchange, step: str) -> dict[str, Any]:
        data = exchange.json_or_none()
        if not (200 <= exchange.status < 300) or not isinstance(data, dict):
            raise NotTestable(f"setup could not {step}: {exchange.describe()}",
                              exchange=exchange)
        return data

    def _id(self, exchange: Exchange, key: str, step: str) -> str:
        value = self.ok(exchange, step).get(key)
        if not isinstance(value, str):
            raise NotTestable(f"setup could not {step}: no string {key!r} in "
                              f"{exchange.describe()}", exchange=exchange)
        return value


def world(ctx: CheckContext) -> RunWorld:
    """The run setup for this target, or "not applicable" with why."""
    target = ctx.target
    control = getattr(target, "control", None)
    if not isinstance(target, RuntimeTarget) or control is None:
        raise NotApplicable(
            "the target runs no agents against arck's simulated model provider: checks of "
            "runs need an in-process target, or a target file that points the service at "
            "the provider (docs/targets.md)"
        )
    return RunWorld(ctx, target, control)


def executor_world(ctx: CheckContext) -> RunWorld:
    """`world`, with the target's executor API established first (the world's executor
    registered): a target without one is "not applicable" before any run is made, whatever
    its runs would have done."""
    w = world(ctx)
    w.executor()
    return w


def needs_virtual_time(w: RunWorld, what: str) -> None:
    """"Not applicable" on real time: `what` (a 120 s slow answer, backoffs) would take that
    long on the wall clock. A service has virtual time with capability `test-clock`."""
    if not w.control.virtual_time:
        raise NotApplicable(
            f"not applicable: {what} needs the test-clock capability (virtual time); in real "
            "time it would take minutes (docs/targets.md, Runs)"
        )


def only(items: Sequence[T], what: str, seen: Callable[[], str] | str = "") -> T:
    """The one item of `items`, or "not testable" naming what was looked for, how many
    were found (and which) and, from `seen`, what the target showed instead: a check
    never stops at a bare unpacking's ValueError."""
    if len(items) == 1:
        return items[0]
    found = "none" if not items else f"{len(items)}: {str(list(items))[:300]}"
    shown = seen() if callable(seen) else seen
    raise NotTestable(f"not testable: expected exactly one {what}, found {found}"
                      + (f"; {shown[:400]}" if shown else ""))


def canonical(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 as is: how two messages are compared for equality
    (NaN allowed, so a hostile body is shown rather than crashing the comparison)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def messages(request: RecordedRequest) -> list[Any]:
    """The messages of a recorded request body (empty when it is not a JSON object)."""
    try:
        body = json.loads(request.body)
    except ValueError:
        return []
    found = body.get("messages") if isinstance(body, dict) else None
    return found if isinstance(found, list) else []
