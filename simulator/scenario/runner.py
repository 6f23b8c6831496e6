"""Drive a target through a scenario: set up, act in order, read the end, judge.

Only the target's runtime steps (`HttpTarget`'s create_channel, create_run, ...) and its
`control` (the simulated provider, time) are used; the engine is never imported. Each
action's requests and answers go into the trace; a wait that cannot finish is a finding,
never an endless loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from arck.simulator.control import Control
from arck.simulator.errors import UsageError
from arck.simulator.provider import script_tag
from arck.simulator.scenario import seeded
from arck.simulator.scenario.model import (
    TARGET_STEPS,
    UNSUPPORTED_ACTIONS,
    AdvanceArgs,
    AppendInputArgs,
    ReceiptArgs,
    RevokeArgs,
    RunArgs,
    RunRef,
    Scenario,
    WaitArgs,
    action_args,
    action_kind,
)
from arck.simulator.scenario.trace import Trace, digest, exchange_record
from arck.simulator.scenario.verdict import Seen, Verdict, judge
from arck.simulator.target import Exchange

__all__ = ["RUNTIME_STEPS", "Outcome", "ScenarioNotApplicable", "run_scenario"]

RUNTIME_STEPS = (
    "create_binding", "publish_tool_set", "publish_agent_version", "create_channel",
    "create_wallet", "deposit", "get_wallet", "create_session", "create_run", "get_run",
    "cancel_run", "run_events", "tool_calls", "submit_receipt", "register_executor",
    "executor_role", "heartbeat", "claim",
)
SETTLED = ("ended", "waiting_tools")


class ScenarioNotApplicable(UsageError):
    """The target lacks something the scenario needs (exit 2, with the reason)."""


@dataclass
class Outcome:
    verdict: Verdict
    trace: Trace


def applicable(scenario: Scenario, target: Any) -> Control:
    """The target's control, or ScenarioNotApplicable saying what is missing."""
    name = target.info.location
    control: Control | None = getattr(target, "control", None)
    if control is None:
        raise ScenarioNotApplicable(
            f"target {name} has no control (the simulated provider and the clock): an "
            "external service needs a provider section in its target file, which is not "
            "built yet; run scenarios against reference or mutant:NAME"
        )
    missing = [step for step in RUNTIME_STEPS if not callable(getattr(target, step, None))]
    if missing:
        raise ScenarioNotApplicable(f"target {name} has no runtime steps {', '.join(missing)}")
    for index, action in enumerate(scenario.actions):
        kind = action_kind(action)
        step = TARGET_STEPS.get(kind)
        if kind in UNSUPPORTED_ACTIONS:
            raise ScenarioNotApplicable(
                f"actions[{index}].{kind}: not supported by this target yet "
                f"({UNSUPPORTED_ACTIONS[kind]})"
            )
        if step is not None and not callable(getattr(target, step, None)):
            raise ScenarioNotApplicable(
                f"actions[{index}].{kind}: not supported by this target yet (target {name} "
                f"has no {step} step)"
            )
    return control


def _json(exchange: Exchange) -> Any:
    return exchange.json_or_none() if 200 <= exchange.status < 300 else None


class _Driver:
    def __init__(self, scenario: Scenario, target: Any, control: Control, seed: int) -> None:
        self.scenario, self.target, self.control, self.seed = scenario, target, control, seed
        self.trace = Trace()
        self.verdict = Verdict()
        token = seeded.token(seed, scenario.name)
        self.base = f"{target.info.name_prefix}{scenario.name}-{token}"
        self.agent_id = self.base  # the agent its one version is published under
        self.runs: dict[str, str | None] = {}  # run name → run id (None: not created)
        self.last_run: str | None = None
        self.sessions: dict[str, str] = {}
        self.wallet_id: str | None = None
        self.receipts = 0
        self.executor: str | None = None  # the role of the executor answering tool calls
        self.now0 = control.now()

    # -- setup ----------------------------------------------------------------------------

    def _setup(self, step: str, exchange: Exchange, key: str) -> str:
        self.trace.add("setup", step=step, **exchange_record(exchange))
        value = (_json(exchange) or {}).get(key)
        if not isinstance(value, str):
            raise _SetupFailed(step, exchange)
        return value

    def setup(self) -> None:
        s = self.scenario
        script = seeded.script_name(self.seed, s.name)
        self.control.provider.add_script(script, s.script)
        self.trace.add("setup", step="provider_script", script=script, steps=len(s.script))
        tools = []
        if s.agent.tools:
            binding = self._setup("create_binding",
                                  self.target.create_binding(f"{self.base}-binding"),
                                  "binding_id")
            tools = [{**tool.model_dump(), "binding_id": binding} for tool in s.agent.tools]
            body = {"name": f"{self.base}-executor", "bindings": [binding]}
            self.executor = self.target.executor_role(self._setup(
                "register_executor", self.target.register_executor(body), "executor_id"))
        tool_set = self._setup(
            "publish_tool_set",
            self.target.publish_tool_set({"name": f"{self.base}-tools", "tools": tools}),
            "tool_set_id")
        channels = {}
        for name, channel in s.channels.items():
            body = {"name": f"{self.base}-{name}", **channel.model_dump()}
            channels[name] = self._setup(f"create_channel {name}",
                                         self.target.create_channel(body), "channel_id")
        version: dict[str, Any] = {
            "tool_set_id": tool_set, "channel_id": channels["main"],
            "system_prompt": f"{s.agent.system_prompt} {script_tag(script)}",
        }
        if "summary" in channels:
            version["summary_channel_id"] = channels["summary"]
        if s.agent.max_context_tokens is not None:
            version["max_context_tokens"] = s.agent.max_context_tokens
        agent_version = self._setup(
            "publish_agent_version", self.target.publish_agent_version(self.agent_id, version),
            "agent_version")
        self.wallet_id = self._setup(
            "create_wallet", self.target.create_wallet({"name": f"{self.base}-wallet"}),
            "wallet_id")
        if s.wallet.funds:
            self._setup("deposit", self.target.deposit(self.wallet_id, s.wallet.funds),
                        "wallet_id")
        for name in s.sessions():
            body = {"agent_version": agent_version, "wallet_id": self.wallet_id}
            self.sessions[name] = self._setup(f"create_session {name}",
                                              self.target.create_session(body), "session_id")

    # -- actions --------------------------------------------------------------------------

    def act(self, index: int, action: BaseModel) -> None:
        kind = action_kind(action)
        args = action_args(action)
        exchanges: list[Exchange] = []
        notes: list[str] = []
        advances: list[float] = []
        if isinstance(args, RunArgs):
            name = self.scenario.run_names()[index]
            exchange = self.target.create_run(self.sessions[args.session], {"input": args.input})
            exchanges.append(exchange)
            run_id = (_json(exchange) or {}).get("run_id")
            self.runs[name] = run_id if isinstance(run_id, str) else None
            self.last_run = name
        elif isinstance(args, AdvanceArgs):
            self.control.advance(args.seconds)
            advances.append(args.seconds)
        elif isinstance(args, RevokeArgs):
            tool = args.tool or self.scenario.agent.tools[0].name
            exchanges.append(self.target.revoke(self.agent_id, tool))
        elif isinstance(args, RunRef):
            name = args.run or self.last_run or ""
            run_id = self.runs.get(name)
            if run_id is None:
                notes.append(f"run {name!r} was not created: nothing to {kind}")
            elif isinstance(args, WaitArgs):
                self._wait(index, name, run_id, args, exchanges, advances, notes)
            elif isinstance(args, ReceiptArgs):
                self._receipt(index, run_id, args, exchanges, notes)
            elif isinstance(args, AppendInputArgs):
                exchanges.append(self.target.append_input(run_id, args.input))
            elif kind == "cancel":
                exchanges.append(self.target.cancel_run(run_id))
            elif kind == "disconnect":
                exchanges.append(self.target.drop_event_stream(run_id))
        expected = getattr(args, "expect_status", None)
        if expected is not None:
            last = exchanges[-1].status if exchanges else None
            self.verdict.add(f"actions[{index}].{kind}.status", expected, last)
        self.trace.add(
            "action", index=index, action=action.model_dump(mode="json", exclude_unset=True),
            exchanges=[exchange_record(e) for e in exchanges], advanced=advances,
            notes=notes, clock=self.control.now() - self.now0,
        )

    def _wait(self, index: int, name: str, run_id: str, args: WaitArgs,
              exchanges: list[Exchange], advances: list[float], notes: list[str]) -> None:
        for _ in range(args.max_steps + 1):
            exchange = self.target.get_run(run_id)
            exchanges.append(exchange)
            state = (_json(exchange) or {}).get("state")
            if state in SETTLED:
                return
            if len(advances) == args.max_steps:
                why = f"still {state!r} after {args.max_steps} steps of time"
                break
            deadline = self.control.next_deadline()
            if deadline is None:
                why = f"stuck: {state!r} with no timer due (nothing will ever move it)"
                break
            seconds = max(0.0, deadline - self.control.now())
            self.control.advance(seconds)
            advances.append(seconds)
        notes.append(why)
        self.verdict.add(f"actions[{index}].wait {name}: settles", "ended or waiting_tools",
                         why, held=False)

    def _receipt(self, index: int, run_id: str, args: ReceiptArgs,
                 exchanges: list[Exchange], notes: list[str]) -> None:
        listing = self.target.tool_calls(run_id)
        exchanges.append(listing)
        calls = (_json(listing) or {}).get("tool_calls") or []
        if args.call == "all":
            chosen = [c for c in calls if c.get("state") == "dispatchable"]
        elif args.call < len(calls):
            chosen = [calls[args.call]]
        else:
            chosen = []
        if not chosen:
            notes.append(f"no tool call to answer (call {args.call!r} of {len(calls)})")
        generated = args.generated()
        for position, call in enumerate(chosen):
            self.receipts += 1
            result = args.result if generated is None else seeded.generated_result(
                self.seed, f"{index}:{position}", generated.size_bytes)
            receipt_id = args.receipt_id or (
                f"{self.target.info.name_prefix}rc-{self.receipts}")
            self._execute(str(call.get("call_id")), receipt_id, result, exchanges, notes)

    def _execute(self, call_id: str, receipt_id: str, result: Any,
                 exchanges: list[Exchange], notes: list[str]) -> None:
        """As the scenario's executor (docs/executors.md): heartbeat, claim, `accepted`
        (the platform's answer confirms it), then the completed receipt. A refused step
        is recorded and ends the attempt; `expect_status` judges the last exchange."""
        role = self.executor
        if role is None:
            notes.append("the agent has no tools, so no executor: nothing to answer")
            return
        target = self.target
        exchanges.append(target.heartbeat(role))
        claimed = target.claim(call_id, role)
        exchanges.append(claimed)
        claim = (_json(claimed) or {}).get("claim_id")
        if not isinstance(claim, str):
            notes.append(f"call {call_id} not claimed ({claimed.status})")
            return
        accepted = target.submit_receipt(call_id, {
            "receipt_id": f"{receipt_id}-accepted", "claim_id": claim, "kind": "accepted"},
            role=role)
        exchanges.append(accepted)
        if not 200 <= accepted.status < 300:
            notes.append(f"call {call_id}: acceptance not confirmed ({accepted.status})")
            return
        exchanges.append(target.submit_receipt(call_id, {
            "receipt_id": receipt_id, "claim_id": claim, "kind": "completed",
            "result": result}, role=role))

    # -- the end --------------------------------------------------------------------------

    def finish(self) -> None:
        seen = Seen(runs={}, events={}, tool_calls={}, wallet=None, requests=0, faults={},
                    recorded=[])
        for name, run_id in self.runs.items():
            if run_id is None:
                seen.runs[name] = seen.events[name] = seen.tool_calls[name] = None
                continue
            snapshot, events, calls = (self.target.get_run(run_id),
                                       self.target.run_events(run_id),
                                       self.target.tool_calls(run_id))
            seen.runs[name] = _json(snapshot)
            seen.events[name] = (_json(events) or {}).get("events")
            seen.tool_calls[name] = (_json(calls) or {}).get("tool_calls")
            self.trace.add("run", name=name, run_id=run_id,
                           snapshot=exchange_record(snapshot), events=exchange_record(events),
                           tool_calls=exchange_record(calls))
        if self.wallet_id is not None:
            wallet = self.target.get_wallet(self.wallet_id)
            seen.wallet = _json(wallet)
            self.trace.add("wallet", **exchange_record(wallet))
        provider = self.control.provider
        records = provider.records()
        for record in records:
            shown = record.to_json()
            shown.pop("response", None)
            recorded = provider.recorded_request(record.id)
            body = recorded.body if recorded is not None else None
            self.trace.add("provider_request", **shown, body_sha256=digest(body),
                           body_bytes=None if body is None else len(body),
                           response_sha256=digest(record.response))
        seen.requests = len(records)
        seen.provider_requests = [
            {**record.to_json(), "received_at": record.received_at - self.now0}
            for record in records
        ]
        seen.faults = provider.fault_counts()
        seen.prices = {c.model: (c.prices.input, c.prices.cached_input, c.prices.output)
                       for name, c in sorted(self.scenario.channels.items(), reverse=True)}
        seen.recorded = provider.recorded()
        self.trace.add("faults", fired=seen.faults)
        judge(self.scenario.expect, seen, self.verdict)


class _SetupFailed(Exception):
    def __init__(self, step: str, exchange: Exchange) -> None:
        super().__init__(step)
        self.step, self.exchange = step, exchange


def run_scenario(scenario: Scenario, target: Any, seed: int = 0) -> Outcome:
    """Run `scenario` on `target` (which the caller builds and closes)."""
    control = applicable(scenario, target)
    driver = _Driver(scenario, target, control, seed)
    driver.trace.add("scenario", name=scenario.name, seed=seed, target=target.info.location,
                     scenario_sha256=digest(scenario.model_dump_json().encode("utf-8")))
    try:
        driver.setup()
    except _SetupFailed as failed:
        driver.verdict.add(f"setup: {failed.step}", "2xx with an id",
                           f"{failed.exchange.status} {failed.exchange.body[:300]!r}",
                           held=False)
    else:
        for index, action in enumerate(scenario.actions):
            driver.act(index, action)
        driver.finish()
    driver.trace.add("verdict", **driver.verdict.to_json())
    return Outcome(driver.verdict, driver.trace)
