"""What a scenario file holds (docs/scenarios.md): pydantic models, the schema's one source.

A scenario is data only: the agent and its channels, the wallet, the provider's script (the
provider's own `Step` model, faults included), the client's actions in order, and what must
be seen at the end. `scenarios/scenario.schema.json` is generated from `Scenario`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from arck.simulator.executor.plan import FAULT_KINDS as EXECUTOR_FAULT_KINDS
from arck.simulator.executor.plan import CallPlan
from arck.simulator.provider import FAULT_KINDS, Step

__all__ = [
    "ACTION_KINDS",
    "INVARIANTS",
    "TARGET_STEPS",
    "UNSUPPORTED_ACTIONS",
    "Action",
    "Agent",
    "BusinessExpectation",
    "Channel",
    "EventExpectation",
    "Expect",
    "Generated",
    "Prices",
    "RequestExpectation",
    "RunExpectation",
    "Scenario",
    "Tool",
    "WalletExpectation",
]

NAME = r"^[a-z0-9][a-z0-9-]{0,62}$"
RUN_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"
Count = Annotated[int, Field(ge=0)]
Micro = Annotated[int, Field(ge=0, le=10**15)]
Status = Annotated[int, Field(ge=100, le=599)]


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# -- the world the runs happen in ----------------------------------------------------------


class Tool(_Data):
    """A tool of the agent's tool set; its binding is created by the runner."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    description: str = ""
    max_result_context_bytes: Annotated[int, Field(ge=1)]
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class Agent(_Data):
    system_prompt: str = Field(description="sent with ' [arck-script:NAME]' appended")
    tools: list[Tool] = Field(default_factory=list)
    capability: dict[str, Any] | None = Field(
        default=None, description="the capability declaration of the tools' one binding "
        "(docs/capabilities.md); its target must take declarations (CapabilityTarget)")
    max_context_tokens: Annotated[int, Field(ge=1)] | None = None


class Prices(_Data):
    """Micro-units per million tokens (BIL-05)."""

    input: Micro
    cached_input: Micro
    output: Micro


class Channel(_Data):
    model: str = "sim-1"
    input_capacity: Annotated[int, Field(ge=1)]
    total_capacity: Annotated[int, Field(ge=1)]
    output_capacity: Annotated[int, Field(ge=1)]
    timeout_ms: Annotated[int, Field(ge=1)]
    prices: Prices


class Wallet(_Data):
    funds: Micro = Field(description="deposited once before the first action (0: none)")


# -- actions --------------------------------------------------------------------------------


class Generated(_Data):
    """A result generated from the seed: canonical JSON of exactly `size_bytes` bytes,
    `{"data": "<lowercase ASCII letters>"}`."""

    size_bytes: Annotated[int, Field(ge=11, le=10_000_000)]


class _Act(_Data):
    expect_status: Status | None = Field(
        default=None, description="the HTTP status the action's request must get"
    )


class RunArgs(_Act):
    input: str
    name: Annotated[str, Field(pattern=RUN_NAME)] | None = Field(
        default=None, description="how later actions and expect name the run (default rN)"
    )
    session: Annotated[str, Field(pattern=RUN_NAME)] = "main"


class RunRef(_Act):
    run: str | None = Field(default=None, description="a run's name (default: the last run)")


class WaitArgs(RunRef):
    max_steps: Annotated[int, Field(ge=0, le=10_000)] = Field(
        default=200, description="most moves of time to the next deadline (0: must be settled)"
    )


class AdvanceArgs(_Data):
    seconds: Annotated[float, Field(ge=0, allow_inf_nan=False)]


class ReceiptArgs(RunRef):
    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra={
        "required": ["result"]})

    call: Annotated[int, Field(ge=0)] | Literal["all"] = Field(
        default="all", description="index in the run's tool calls, or every dispatchable one"
    )
    result: Any = Field(
        default=None,
        description="a JSON value; an object whose only member is size_bytes is generated",
    )
    receipt_id: Annotated[str, Field(min_length=1, max_length=200)] | None = None

    @model_validator(mode="after")
    def _has_result(self) -> ReceiptArgs:
        if "result" not in self.model_fields_set:
            raise ValueError("result is required (a JSON value, or {size_bytes: N})")
        return self

    def generated(self) -> Generated | None:
        if isinstance(self.result, dict) and set(self.result) == {"size_bytes"}:
            return Generated.model_validate(self.result)
        return None


class _ExeAct(RunRef):
    """An action of an executor on one or more tool calls of a run."""

    call: Annotated[int, Field(ge=0)] | Literal["all"] = Field(
        default=0, description="index in the run's tool calls, or `all` (see the action)"
    )
    expect_answer: dict[str, Any] = Field(
        default_factory=dict,
        description="members of the last request's JSON answer at dotted paths, each equal",
    )


class ClaimArgs(_ExeAct):
    """The scenario's executor claims the chosen calls and goes no further (a heartbeat
    first); `call: all` is every dispatchable one."""


class AcceptArgs(_ExeAct):
    """The scenario's executor sends `accepted` for the chosen calls: under the claim an
    earlier `claim` action left unaccepted, else after a claim of its own (`call: all`:
    every dispatchable one). A business task now in progress."""


FinalKind = Literal["completed", "failed", "cancelled", "submission", "reconciliation_required"]


class FinishArgs(_ExeAct):
    """The final receipt of calls the scenario's executor accepted earlier (also after the
    run ended: a late receipt); `call: all` is every call of the run it accepted."""

    kind: FinalKind = "completed"
    result: Any = Field(
        default=None,
        description="completed, submission, reconciliation_required (default {status: done}"
        " for the first two, none for the last); an object whose only member is size_bytes "
        "is generated",
    )
    error: dict[str, str] | None = Field(default=None, description="failed (default a "
                                         "business error)")
    reason: Annotated[str, Field(min_length=1)] | None = Field(default=None,
                                                                description="cancelled")
    receipt_id: Annotated[str, Field(min_length=1, max_length=200)] | None = None

    @model_validator(mode="after")
    def _members_of_kind(self) -> FinishArgs:
        if self.error is not None and self.kind != "failed":
            raise ValueError("error: only a failed receipt carries one")
        if self.reason is not None and self.kind != "cancelled":
            raise ValueError("reason: only a cancelled receipt carries one")
        if "result" in self.model_fields_set and self.kind in ("failed", "cancelled"):
            raise ValueError(f"result: a {self.kind} receipt carries none")
        return self

    def generated(self) -> Generated | None:
        if isinstance(self.result, dict) and set(self.result) == {"size_bytes"}:
            return Generated.model_validate(self.result)
        return None


class ExecuteArgs(_ExeAct):
    """The chosen calls worked by arck's simulated executor (docs/executor-simulator.md)
    with `plan`; `call: all` is every dispatchable one."""

    plan: CallPlan = Field(default_factory=CallPlan)


class ReleaseArgs(_ExeAct):
    """The simulated executor sends the final a `late` fault held back."""


class DetachArgs(_ExeAct):
    """The scenario's executor gives up its claim on the chosen call (before or after
    acceptance)."""


class CancelCallArgs(_ExeAct):
    """A business cancel request for the chosen call (service credential)."""


class RestartExecutorArgs(_Data):
    """The simulated executor's process dies and a new one starts on its journal."""


class AppendInputArgs(RunRef):
    """User input appended to an active run (RUN-06): the target's `append_input`."""

    input: str


class RevokeArgs(_Act):
    """The agent's permission to have one of its tools dispatched, revoked for good (RUN-14):
    the target's `revoke(agent_id, tool_name)`. About the agent, not a run."""

    tool: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")] | None = Field(
        default=None, description="one of the agent's tools (default: its first)"
    )


class Run(_Data):
    run: RunArgs


class Wait(_Data):
    wait: WaitArgs


class Advance(_Data):
    advance: AdvanceArgs


class Receipt(_Data):
    receipt: ReceiptArgs


class Cancel(_Data):
    cancel: RunRef


class AppendInput(_Data):
    append_input: AppendInputArgs


class Revoke(_Data):
    revoke: RevokeArgs


class Disconnect(_Data):
    disconnect: RunRef


class Claim(_Data):
    claim: ClaimArgs


class Accept(_Data):
    accept: AcceptArgs


class Finish(_Data):
    finish: FinishArgs


class Execute(_Data):
    execute: ExecuteArgs


class Release(_Data):
    release: ReleaseArgs


class RestartExecutor(_Data):
    restart_executor: RestartExecutorArgs


class Detach(_Data):
    detach: DetachArgs


class CancelCall(_Data):
    cancel_call: CancelCallArgs


# Actions that need an optional step of the target (action → its method): a target without
# it (an adapter's) cannot run the scenario at all (docs/scenarios.md "Steps a target lacks").
TARGET_STEPS = {"append_input": "append_input", "revoke": "revoke",
                "disconnect": "drop_event_stream", "detach": "detach",
                "cancel_call": "request_tool_cancel"}
# Actions no target can run yet (action → why): declared, never run. None at present.
UNSUPPORTED_ACTIONS: dict[str, str] = {}
_ACTIONS: dict[str, type[_Data]] = {
    "run": Run, "wait": Wait, "advance": Advance, "receipt": Receipt, "cancel": Cancel,
    "append_input": AppendInput, "revoke": Revoke, "disconnect": Disconnect,
    "claim": Claim, "accept": Accept, "finish": Finish, "execute": Execute,
    "release": Release, "restart_executor": RestartExecutor, "detach": Detach,
    "cancel_call": CancelCall,
}
ACTION_KINDS = tuple(_ACTIONS)


def _action_kind(value: Any) -> str | None:
    if isinstance(value, dict) and len(value) == 1:
        kind = next(iter(value))
        return kind if kind in _ACTIONS else None
    if isinstance(value, BaseModel):
        return next(iter(type(value).model_fields))
    return None


Action = Annotated[
    Annotated[Run, Tag("run")]
    | Annotated[Wait, Tag("wait")]
    | Annotated[Advance, Tag("advance")]
    | Annotated[Receipt, Tag("receipt")]
    | Annotated[Cancel, Tag("cancel")]
    | Annotated[AppendInput, Tag("append_input")]
    | Annotated[Revoke, Tag("revoke")]
    | Annotated[Disconnect, Tag("disconnect")]
    | Annotated[Claim, Tag("claim")]
    | Annotated[Accept, Tag("accept")]
    | Annotated[Finish, Tag("finish")]
    | Annotated[Execute, Tag("execute")]
    | Annotated[Release, Tag("release")]
    | Annotated[RestartExecutor, Tag("restart_executor")]
    | Annotated[Detach, Tag("detach")]
    | Annotated[CancelCall, Tag("cancel_call")],
    Discriminator(
        _action_kind,
        custom_error_type="action",
        custom_error_message="an action is a mapping with one key: " + ", ".join(_ACTIONS),
    ),
]


def action_kind(action: BaseModel) -> str:
    return next(iter(type(action).model_fields))


def action_args(action: BaseModel) -> Any:
    return getattr(action, action_kind(action))


# -- expectations ---------------------------------------------------------------------------


class RunExpectation(_Data):
    state: Literal["queued", "running", "waiting_tools", "ended"] | None = None
    end_reason: str | None = None
    tool_call_states: list[str] | None = Field(
        default=None, description="the states of the run's tool calls, in order"
    )
    cancel_requested: list[bool] | None = Field(
        default=None, description="each tool call's `cancel_requested`, in order"
    )


class WalletExpectation(_Data):
    balance: int | None = None
    reserved: int | None = None
    available: int | None = None


class EventExpectation(_Data):
    """About the events of one run of one type: how many, and members of the index-th one
    (dotted paths into its `data`, list positions as numbers)."""

    run: str
    type: str
    count: Count | None = None
    index: int = 0
    equals: dict[str, Any] = Field(default_factory=dict)
    at_least: dict[str, float] = Field(default_factory=dict)
    at_most: dict[str, float] = Field(default_factory=dict)


class RequestExpectation(_Data):
    """About the index-th request the simulated provider received (negative counts from the
    end), in the provider's own records."""

    index: int
    at: float | None = Field(
        default=None, ge=0,
        description="when it was received, in virtual seconds since setup (exact)",
    )
    status: Status | None = Field(
        default=None, description="the status it was answered with (none when lost)"
    )
    outcome: Literal["received", "answered", "lost", "failed"] | None = None
    billed: bool | None = None


class CallEffects(_Data):
    run: str
    call: Annotated[int, Field(ge=0)] = Field(description="index in the run's tool calls")
    count: Count


class BusinessExpectation(_Data):
    """Side effects the simulated executor's business system saw (its `execute` actions
    only): in all, and per call (by its operation key)."""

    total: Count | None = None
    calls: list[CallEffects] = Field(default_factory=list)


# Rules judged over the whole story (docs/scenarios.md "Expectations"): what a failing
# stateful check writes when the invariant it broke can be judged from the end of a scenario.
INVARIANTS = ("extends_unless_compacted", "never_resent", "money_conserved", "runs_settle",
              "one_claim_wins", "receipt_ids_keep_meaning", "one_final_per_call",
              "ended_runs_unchanged", "applied_finals_in_history")
Invariant = Literal["extends_unless_compacted", "never_resent", "money_conserved", "runs_settle",
                    "one_claim_wins", "receipt_ids_keep_meaning", "one_final_per_call",
                    "ended_runs_unchanged", "applied_finals_in_history"]


class Expect(_Data):
    runs: dict[str, RunExpectation] = Field(default_factory=dict)
    charged_total: Micro | None = Field(
        default=None, description="the wallet's `charged` at the end, in micro-units"
    )
    wallet: WalletExpectation | None = None
    requests_seen: Count | None = Field(
        default=None, description="requests the simulated provider received"
    )
    provider_faults_fired: dict[str, Count] = Field(
        default_factory=dict, description="per fault kind listed; kinds left out are not judged"
    )
    executor_faults_fired: dict[str, Count] = Field(
        default_factory=dict,
        description="the simulated executor's fault counts, per kind listed (0 for every "
        "kind when no execute action ran)",
    )
    business_effects: BusinessExpectation | None = None
    append_only: bool | None = Field(
        default=None,
        description="each request of the conversation starts with all of the previous "
        "request's messages, byte for byte (RUN-08, BUD-15)",
    )
    provider_requests: list[RequestExpectation] = Field(
        default_factory=list,
        description="members of single requests the provider received: when, answered how, "
        "billed or not",
    )
    events: list[EventExpectation] = Field(default_factory=list)
    invariants: list[Invariant] = Field(
        default_factory=list,
        description="rules over the whole story: requests extend the previous one unless a "
        "compaction is reported (RUN-08, CTX-07); no processed request sent again (RUN-12); "
        "the wallet within reported usage × price (BIL-04); every run settled (RUN-11); no "
        "operation done twice, no claim won on a held call (EXE-01); a receipt id keeps its "
        "answer (EXE-08, EXE-09); no second final taken (EXE-14); a run once ended never "
        "changes (EXE-13); every applied final result in the formal history (BUD-16)",
    )

    @model_validator(mode="after")
    def _known_faults(self) -> Expect:
        unknown = sorted(set(self.provider_faults_fired) - set(FAULT_KINDS))
        if unknown:
            raise ValueError(f"provider_faults_fired: unknown kinds {unknown}; known: "
                             + ", ".join(FAULT_KINDS))
        unknown = sorted(set(self.executor_faults_fired) - set(EXECUTOR_FAULT_KINDS))
        if unknown:
            raise ValueError(f"executor_faults_fired: unknown kinds {unknown}; known: "
                             + ", ".join(EXECUTOR_FAULT_KINDS))
        return self


# -- the scenario ---------------------------------------------------------------------------


class Scenario(_Data):
    """One replayable story: a trap an engine may fall into, and what shows it did not."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", title="arck scenario",
        json_schema_extra={"$id": "https://arck.invalid/scenario.schema.json"},
    )

    name: Annotated[str, Field(pattern=NAME, description="the trap it shows, kebab-case")]
    description: str = Field(min_length=1, description="the trap, and why each figure is so")
    agent: Agent
    channels: dict[str, Channel] = Field(description="'main', and optionally 'summary'")
    wallet: Wallet
    script: list[Step] = Field(
        default_factory=list, description="the provider's steps (docs/provider.md), in order"
    )
    actions: list[Action] = Field(min_length=1)
    expect: Expect

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        unknown = set(self.channels) - {"main", "summary"}
        if "main" not in self.channels or unknown:
            raise ValueError("channels: give 'main' and optionally 'summary', nothing else")
        names = self.run_names()
        seen: set[str] = set()
        for index, action in enumerate(self.actions):
            kind = action_kind(action)
            args = action_args(action)
            if kind == "run":
                name = names[index]
                if name in seen:
                    raise ValueError(f"actions[{index}].run.name: {name!r} names two runs")
                seen.add(name)
            elif kind == "revoke":
                tools = [tool.name for tool in self.agent.tools]
                if not tools:
                    raise ValueError(f"actions[{index}].revoke: the agent has no tool to revoke")
                if args.tool is not None and args.tool not in tools:
                    raise ValueError(f"actions[{index}].revoke.tool: {args.tool!r} is not one "
                                     f"of the agent's tools ({', '.join(tools)})")
            elif isinstance(args, RunRef) and args.run is not None and args.run not in seen:
                raise ValueError(
                    f"actions[{index}].{kind}.run: {args.run!r} names no earlier run"
                )
            elif isinstance(args, RunRef) and args.run is None and not seen:
                raise ValueError(f"actions[{index}].{kind}: no run before it")
            if isinstance(args, _ExeAct) and not self.agent.tools:
                raise ValueError(f"actions[{index}].{kind}: the agent has no tools, so no "
                                 "executor")
        for name in self.expect.runs:
            if name not in seen:
                raise ValueError(f"expect.runs: {name!r} names no run")
        for i, event in enumerate(self.expect.events):
            if event.run not in seen:
                raise ValueError(f"expect.events[{i}].run: {event.run!r} names no run")
        effects = self.expect.business_effects
        for i, call in enumerate(effects.calls if effects is not None else ()):
            if call.run not in seen:
                raise ValueError(f"expect.business_effects.calls[{i}].run: {call.run!r} "
                                 "names no run")
        return self

    def run_names(self) -> dict[int, str]:
        """Action index → the name of the run it creates (`rN`, counting runs from 1)."""
        names: dict[int, str] = {}
        for index, action in enumerate(self.actions):
            if isinstance(action, Run):
                names[index] = action.run.name or f"r{len(names) + 1}"
        return names

    def sessions(self) -> list[str]:
        """Session names in order of first use."""
        return list(dict.fromkeys(a.run.session for a in self.actions if isinstance(a, Run)))
