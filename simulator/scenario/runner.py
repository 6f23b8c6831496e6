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
from arck.simulator.executor import FAULT_KINDS as EXECUTOR_FAULT_KINDS
from arck.simulator.executor import BusinessSystem, CallOutcome, PlanError, SimulatedExecutor
from arck.simulator.executor import operation_key as business_key
from arck.simulator.executor.rules import run_state
from arck.simulator.provider import script_tag
from arck.simulator.scenario import seeded
from arck.simulator.scenario.model import (
    TARGET_STEPS,
    UNSUPPORTED_ACTIONS,
    AcceptArgs,
    AdvanceArgs,
    AppendInputArgs,
    CancelCallArgs,
    ClaimArgs,
    DetachArgs,
    ExecuteArgs,
    FinishArgs,
    ReceiptArgs,
    ReleaseArgs,
    RestartExecutorArgs,
    RevokeArgs,
    RunArgs,
    RunRef,
    Scenario,
    WaitArgs,
    action_args,
    action_kind,
)
from arck.simulator.scenario.trace import Trace, digest, exchange_record
from arck.simulator.scenario.verdict import (
    READS_FORMAL,
    WATCHES_ENDED,
    Seen,
    Verdict,
    judge,
    member,
)
from arck.simulator.target import CapabilityTarget, Exchange

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
    steps = RUNTIME_STEPS + (("history",) if {WATCHES_ENDED, READS_FORMAL} & set(
        scenario.expect.invariants) else ())
    missing = [step for step in steps if not callable(getattr(target, step, None))]
    if missing:
        raise ScenarioNotApplicable(f"target {name} has no runtime steps {', '.join(missing)}")
    if scenario.agent.capability is not None and not isinstance(target, CapabilityTarget):
        raise ScenarioNotApplicable(f"agent.capability: target {name} takes no capability "
                                    "declarations (docs/capabilities.md)")
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
        self.binding: str | None = None
        self.claims: dict[str, str] = {}  # call id → the scenario executor's latest claim
        self.unaccepted: set[str] = set()  # calls claimed by a `claim` action, not accepted
        self.accepted: dict[str, list[str]] = {}  # run id → calls it accepted, in order
        self.business = BusinessSystem()
        self.simulated: SimulatedExecutor | None = None  # made by the first execute action
        self.outcomes: list[CallOutcome] = []  # what it did, in order (for the invariants)
        self.run_sessions: dict[str, str] = {}  # run name → its session's name
        self.first_ended: dict[str, str] = {}  # run name → its state when first seen ended
        self.watch = WATCHES_ENDED in scenario.expect.invariants
        self.now0 = control.now()

    # -- setup ----------------------------------------------------------------------------

    def _setup(self, step: str, exchange: Exchange, key: str) -> str:
        self.trace.add("setup", step=step, **exchange_record(exchange))
        value = (_json(exchange) or {}).get(key)
        if not isinstance(value, str):
            raise _SetupFailed(step, exchange)
        return value

    def _bound(self, name: str) -> Exchange:
        """The tools' binding, with the agent's capability declaration if it has one."""
        declared = self.scenario.agent.capability
        target = self.target
        if declared is None or not isinstance(target, CapabilityTarget):
            made: Exchange = target.create_binding(name)  # `applicable` refused the second
            return made
        return target.declare_binding(name, declared)

    def setup(self) -> None:
        s = self.scenario
        script = seeded.script_name(self.seed, s.name)
        self.control.provider.add_script(script, s.script)
        self.trace.add("setup", step="provider_script", script=script, steps=len(s.script))
        tools = []
        if s.agent.tools:
            binding = self._setup("create_binding", self._bound(f"{self.base}-binding"),
                                  "binding_id")
            self.binding = binding
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
        outcomes: list[dict[str, Any]] = []  # what the simulated executor did, per call
        if isinstance(args, RunArgs):
            name = self.scenario.run_names()[index]
            exchange = self.target.create_run(self.sessions[args.session], {"input": args.input})
            exchanges.append(exchange)
            run_id = (_json(exchange) or {}).get("run_id")
            self.runs[name] = run_id if isinstance(run_id, str) else None
            self.run_sessions[name] = args.session
            self.last_run = name
        elif isinstance(args, AdvanceArgs):
            self.control.advance(args.seconds)
            advances.append(args.seconds)
        elif isinstance(args, RevokeArgs):
            tool = args.tool or self.scenario.agent.tools[0].name
            exchanges.append(self.target.revoke(self.agent_id, tool))
        elif isinstance(args, RestartExecutorArgs):
            self._restart(index, exchanges, notes, outcomes)
        elif isinstance(args, RunRef):
            name = args.run or self.last_run or ""
            run_id = self.runs.get(name)
            if run_id is None:
                notes.append(f"run {name!r} was not created: nothing to {kind}")
            elif isinstance(args, WaitArgs):
                self._wait(index, name, run_id, args, exchanges, advances, notes)
            elif isinstance(args, ReceiptArgs):
                self._receipt(index, run_id, args, exchanges, notes)
            elif isinstance(args, ExecuteArgs | ReleaseArgs):
                self._simulated(index, kind, run_id, args, exchanges, notes, outcomes)
            elif isinstance(args, ClaimArgs | AcceptArgs | FinishArgs | DetachArgs
                            | CancelCallArgs):
                self._executor_step(index, kind, run_id, args, exchanges, notes)
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
        for path, value in (getattr(args, "expect_answer", None) or {}).items():
            answer = _json(exchanges[-1]) if exchanges else None
            if exchanges and answer is None:
                answer = exchanges[-1].json_or_none()
            self.verdict.add(f"actions[{index}].{kind}.answer.{path}", value,
                             member(answer, path))
        record: dict[str, Any] = {}
        if outcomes:
            record["executor"] = outcomes
        self.trace.add(
            "action", index=index, action=action.model_dump(mode="json", exclude_unset=True),
            exchanges=[exchange_record(e) for e in exchanges], advanced=advances,
            notes=notes, clock=self.control.now() - self.now0, **record,
        )
        if self.watch:
            self._watch_ended(index)

    def _ended_state(self, name: str) -> str | None:
        """The run's snapshot and its session's two histories, once it has ended."""
        run_id = self.runs.get(name)
        if run_id is None:
            return None
        session = self.sessions[self.run_sessions[name]]
        return run_state(self.target, run_id, session, only_ended=True)[1]

    def _watch_ended(self, index: int) -> None:
        """For ended_runs_unchanged: each run's state the first time it is seen ended (after
        every action; only scenarios asking for that invariant pay these reads)."""
        for name in [n for n in self.runs if n not in self.first_ended]:
            state = self._ended_state(name)
            if state is not None:
                self.first_ended[name] = state
                self.trace.add("watch", index=index, run=name, ended_sha256=digest(
                    state.encode("utf-8")))

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


    # -- executor actions (docs/scenarios.md "Actions") ---------------------------------------

    def _calls(self, run_id: str, call: int | str, exchanges: list[Exchange],
               notes: list[str], all_of: Any) -> list[str]:
        """The chosen calls' ids: GET the run's tool calls, then `call` (an index) or those
        `all_of(view)` keeps."""
        listing = self.target.tool_calls(run_id)
        exchanges.append(listing)
        calls = [c for c in (_json(listing) or {}).get("tool_calls") or [] if isinstance(c, dict)]
        if call == "all":
            chosen = [c for c in calls if all_of(c)]
        elif isinstance(call, int) and call < len(calls):
            chosen = [calls[call]]
        else:
            chosen = []
        if not chosen:
            notes.append(f"no tool call to act on (call {call!r} of {len(calls)})")
        return [str(c.get("call_id")) for c in chosen]

    def _claim(self, call_id: str, exchanges: list[Exchange], notes: list[str]) -> str | None:
        role = self.executor
        assert role is not None
        exchanges.append(self.target.heartbeat(role))
        claimed = self.target.claim(call_id, role)
        exchanges.append(claimed)
        claim = (_json(claimed) or {}).get("claim_id")
        if not isinstance(claim, str):
            notes.append(f"call {call_id} not claimed ({claimed.status})")
            return None
        self.claims[call_id] = claim
        return claim

    def _executor_step(self, index: int, kind: str, run_id: str, args: Any,
                       exchanges: list[Exchange], notes: list[str]) -> None:
        """claim, accept, finish, detach, cancel_call: single requests of the scenario's
        executor (or, for cancel_call, the service) on the chosen calls."""
        role = self.executor
        assert role is not None  # the model refuses these actions for an agent without tools
        target = self.target
        mine = self.accepted.setdefault(run_id, [])
        if kind == "finish":
            def keep(view: dict[str, Any]) -> bool:
                return view.get("call_id") in mine
        elif kind in ("claim", "accept"):
            def keep(view: dict[str, Any]) -> bool:
                return view.get("state") == "dispatchable" or (
                    kind == "accept" and view.get("call_id") in self.unaccepted)
        else:
            def keep(view: dict[str, Any]) -> bool:
                return view.get("call_id") in self.claims
        for position, call_id in enumerate(self._calls(run_id, args.call, exchanges, notes,
                                                       keep)):
            if kind == "cancel_call":
                exchanges.append(target.request_tool_cancel(call_id))
                continue
            if kind == "claim":
                if self._claim(call_id, exchanges, notes) is not None:
                    self.unaccepted.add(call_id)
                continue
            if kind == "accept":
                claim = self.claims.get(call_id) if call_id in self.unaccepted else None
                self.unaccepted.discard(call_id)
                if claim is None:
                    claim = self._claim(call_id, exchanges, notes)
                if claim is None:
                    continue
                self.receipts += 1
                answer = target.submit_receipt(call_id, {
                    "receipt_id": f"{self.target.info.name_prefix}rc-{self.receipts}-accepted",
                    "claim_id": claim, "kind": "accepted"}, role=role)
                exchanges.append(answer)
                if 200 <= answer.status < 300 and call_id not in mine:
                    mine.append(call_id)
                continue
            claim = self.claims.get(call_id)
            if claim is None:
                notes.append(f"call {call_id}: the scenario's executor holds no claim on it")
                continue
            if kind == "detach":
                exchanges.append(target.detach(call_id, claim, role))
                continue
            self.receipts += 1
            body: dict[str, Any] = {
                "receipt_id": args.receipt_id or f"{self.target.info.name_prefix}rc-"
                f"{self.receipts}", "claim_id": claim, "kind": args.kind}
            generated = args.generated()
            if generated is not None:
                body["result"] = seeded.generated_result(self.seed, f"{index}:{position}",
                                                         generated.size_bytes)
            elif args.kind in ("completed", "submission"):
                body["result"] = {"status": "done"} if args.result is None else args.result
            elif args.kind == "reconciliation_required" and args.result is not None:
                body["result"] = args.result
            elif args.kind == "failed":
                body["error"] = args.error or {"code": "business_error",
                                               "message": "the operation was refused"}
            elif args.kind == "cancelled" and args.reason is not None:
                body["reason"] = args.reason
            exchanges.append(target.submit_receipt(call_id, body, role=role))

    def _simulator(self) -> SimulatedExecutor:
        if self.simulated is None:
            assert self.binding is not None
            self.simulated = SimulatedExecutor.register(
                self.target, [self.binding], business=self.business,
                name=f"{self.base}-simulated", seed=self.seed)
        return self.simulated

    def _record(self, outcome: CallOutcome, exchanges: list[Exchange],
                outcomes: list[dict[str, Any]]) -> None:
        for out in (outcome, *outcome.rivals):
            self.outcomes.append(out)
            exchanges.extend(out.exchanges)
            outcomes.append({
                "call_id": out.call_id, "executor": out.executor, "process": out.process,
                "confirmed": out.confirmed, "handler_runs": out.handler_runs,
                "crashed": out.crashed, "held": out.held, "already_ran": out.already_ran,
                "fired": out.fired, "refused": out.refused is not None,
            })

    def _simulated(self, index: int, kind: str, run_id: str, args: Any,
                   exchanges: list[Exchange], notes: list[str],
                   outcomes: list[dict[str, Any]]) -> None:
        """execute and release: arck's simulated executor on the chosen calls."""
        if kind == "execute":
            def keep(view: dict[str, Any]) -> bool:
                return view.get("state") == "dispatchable"
        else:
            def keep(view: dict[str, Any]) -> bool:
                entry = self.simulated.journal.get(str(view.get("call_id"))) \
                    if self.simulated is not None else None
                return entry is not None and any(r.held for r in entry.receipts)
        for call_id in self._calls(run_id, args.call, exchanges, notes, keep):
            try:
                executor = self._simulator()
                if not executor.alive:  # restarted first, as its supervisor would
                    self._restart(index, exchanges, notes, outcomes)
                    executor = self._simulator()
                outcome = (executor.execute(call_id, args.plan) if kind == "execute"
                           else executor.release(call_id))
            except PlanError as why:  # a dead process, or nothing held back
                notes.append(str(why))
                self.verdict.add(f"actions[{index}].{kind} {call_id}", "done", str(why),
                                 held=False)
                continue
            self._record(outcome, exchanges, outcomes)

    def _restart(self, index: int, exchanges: list[Exchange], notes: list[str],
                 outcomes: list[dict[str, Any]]) -> None:
        if self.simulated is None:
            notes.append("no simulated executor yet: nothing to restart")
            return
        self.simulated = self.simulated.restart()
        for call_id in sorted(self.simulated.recovered):
            self._record(self.simulated.recovered[call_id], exchanges, outcomes)

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
        if self.simulated is not None:
            seen.executor_faults = self.simulated.fault_counts()
            self.trace.add("executor_faults", fired=seen.executor_faults)
        else:
            seen.executor_faults = {kind: 0 for kind in EXECUTOR_FAULT_KINDS}
        seen.business_total = self.business.total()
        seen.business_by_call = {
            str(call.get("call_id")): self.business.count(business_key(str(call.get("call_id"))))
            for calls in seen.tool_calls.values() for call in calls or ()
        }
        if self.business.total():
            self.trace.add("business", effects=[
                {"operation_key": e.operation_key, "call_id": e.call_id,
                 "executor": e.executor, "process": e.process, "confirmed": e.confirmed,
                 "at": None if e.at is None else e.at - self.now0}
                for e in self.business.effects()])
        seen.outcomes = self.outcomes
        if self.watch:
            seen.ended_changed = [
                f"{name} was {was[:300]}, now {(now or '')[:300]}"
                for name, was in self.first_ended.items()
                if (now := self._ended_state(name)) != was]
        if READS_FORMAL in self.scenario.expect.invariants:
            seen.formal_by_call = self._formal_by_call(seen)
        judge(self.scenario.expect, seen, self.verdict)

    def _formal_by_call(self, seen: Seen) -> dict[str, Any]:
        """Each seen tool call's session's formal history (one read per session)."""
        formal: dict[str, Any] = {}
        by_call: dict[str, Any] = {}
        for name, calls in seen.tool_calls.items():
            session = self.sessions.get(self.run_sessions.get(name, ""))
            if session is None:
                continue
            if session not in formal:
                formal[session] = _json(self.target.history(session, "formal"))
            for call in calls or ():
                by_call[str(call.get("call_id"))] = formal[session]
        return by_call


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
