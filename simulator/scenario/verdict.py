"""Judging a scenario's expectations against what was seen at the end of its run.

Each expectation becomes one `Judgement`: what, expected, seen, held. The runner adds its
own (an action's status, a run that never settled); this module judges `expect`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from arck.simulator.executor import CallOutcome
from arck.simulator.executor.rules import (
    claims_on_held_calls,
    finals_not_in_history,
    receipt_ids_changed,
    second_finals_taken,
)
from arck.simulator.provider import RecordedRequest
from arck.simulator.scenario.model import EventExpectation, Expect, RequestExpectation

__all__ = ["MISSING", "READS_FORMAL", "WATCHES_ENDED", "Judgement", "Seen", "Verdict", "judge",
           "member"]

MISSING = "<missing>"


@dataclass(frozen=True)
class Judgement:
    what: str
    expected: Any
    seen: Any
    held: bool

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "expected": self.expected, "seen": self.seen,
                "held": self.held}


@dataclass
class Verdict:
    judgements: list[Judgement] = field(default_factory=list)

    @property
    def held(self) -> bool:
        return all(j.held for j in self.judgements)

    def add(self, what: str, expected: Any, seen: Any, held: bool | None = None) -> None:
        self.judgements.append(
            Judgement(what, expected, seen, expected == seen if held is None else held)
        )

    def to_json(self) -> dict[str, Any]:
        return {"held": self.held, "expectations": [j.to_json() for j in self.judgements]}


@dataclass
class Seen:
    """What the runner read at the end (answers already parsed; None when not readable)."""

    runs: dict[str, dict[str, Any] | None]
    events: dict[str, list[dict[str, Any]] | None]
    tool_calls: dict[str, list[dict[str, Any]] | None]
    wallet: dict[str, Any] | None
    requests: int
    faults: dict[str, int]
    recorded: Sequence[RecordedRequest]
    # The provider's records as JSON, `received_at` made virtual seconds since setup.
    provider_requests: list[dict[str, Any]] = field(default_factory=list)
    # Channel prices by model: (input, cached_input, output) micro-units per million tokens.
    prices: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # The simulated executor's fault counts (every kind), and its business system's effects:
    # in all, and by call id.
    executor_faults: dict[str, int] = field(default_factory=dict)
    business_total: int = 0
    business_by_call: dict[str, int] = field(default_factory=dict)
    # For the executor invariants: the simulated executor's outcomes in the order worked
    # (rivals and recoveries included), each call's session's formal history (read only when
    # asked), and the runs whose state changed after they were first seen ended.
    outcomes: list[CallOutcome] = field(default_factory=list)
    formal_by_call: dict[str, Any] = field(default_factory=dict)
    ended_changed: list[str] = field(default_factory=list)


def member(data: Any, path: str) -> Any:
    """`data` at a dotted path (`usage.prompt_tokens`, list positions as numbers)."""
    for part in path.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return MISSING
    return data


def _append_only(recorded: Sequence[RecordedRequest]) -> list[str]:
    """Requests that do not start with all of their conversation's previous messages."""
    broken: list[str] = []
    previous: dict[str, int] = {}
    for request in recorded:
        try:
            count = len(json.loads(request.body)["messages"])
        except (ValueError, KeyError, TypeError):
            continue
        chain = request.conversation or f"untagged:{request.id}"
        if chain in previous and request.messages_common != previous[chain]:
            broken.append(f"{request.id}: {request.messages_common} of {previous[chain]} kept")
        previous[chain] = count
    return broken


def _events(verdict: Verdict, expected: EventExpectation, index: int, seen: Seen) -> None:
    where = f"events[{index}] ({expected.run} {expected.type})"
    events = seen.events.get(expected.run)
    if events is None:
        verdict.add(where, "the run's events", "not readable", held=False)
        return
    data = [e.get("data") for e in events if e.get("type") == expected.type]
    if expected.count is not None:
        verdict.add(f"{where}.count", expected.count, len(data))
    checks = expected.equals or expected.at_least or expected.at_most
    if not checks:
        return
    chosen = data[expected.index] if -len(data) <= expected.index < len(data) else MISSING
    at = f"{where}[{expected.index}]"
    for path, value in expected.equals.items():
        verdict.add(f"{at}.{path}", value, member(chosen, path))
    for path, low in expected.at_least.items():
        got = member(chosen, path)
        ok = isinstance(got, int | float) and not isinstance(got, bool) and got >= low
        verdict.add(f"{at}.{path}", f">= {low:g}", got, held=ok)
    for path, high in expected.at_most.items():
        got = member(chosen, path)
        ok = isinstance(got, int | float) and not isinstance(got, bool) and got <= high
        verdict.add(f"{at}.{path}", f"<= {high:g}", got, held=ok)


def _request(verdict: Verdict, expected: RequestExpectation, seen: Seen) -> None:
    records = seen.provider_requests
    chosen = (records[expected.index] if -len(records) <= expected.index < len(records)
              else None)
    where = f"provider_requests[{expected.index}]"
    for key, name in (("at", "received_at"), ("status", "status_code"),
                      ("outcome", "outcome"), ("billed", "billed")):
        value = getattr(expected, key)
        if value is not None:
            verdict.add(f"{where}.{key}", value, MISSING if chosen is None else chosen.get(name))


# -- invariants: rules over the whole story ---------------------------------------------------

UNKNOWN_OUTCOME = frozenset({"lost_response", "usage_missing", "slow"})
SETTLED = ("ended", "waiting_tools")


def _started(seen: Seen) -> dict[str, dict[str, Any]]:
    """Every model_call.started event of every run, by call id."""
    found: dict[str, dict[str, Any]] = {}
    for events in seen.events.values():
        for event in events or ():
            data = event.get("data")
            if event.get("type") == "model_call.started" and isinstance(data, dict):
                found[str(data.get("call_id"))] = data
    return found


def _key(request: RecordedRequest) -> str | None:
    return next((v for k, v in request.headers if k.lower() == "idempotency-key"), None)


def _messages(request: RecordedRequest) -> list[Any] | None:
    try:
        found = json.loads(request.body).get("messages")
    except (ValueError, AttributeError):
        return None
    return found if isinstance(found, list) else None


def _extends_unless_compacted(seen: Seen) -> list[str]:
    """Requests of a conversation not starting with the previous one's messages, on a call
    whose model_call.started reports no compaction (RUN-08, CTX-07)."""
    started = _started(seen)
    broken: list[str] = []
    previous: dict[str, list[Any]] = {}
    for request in seen.recorded:
        current = _messages(request)
        if request.conversation is None or current is None:
            continue
        before = previous.get(request.conversation)
        decision = ((started.get(str(_key(request))) or {}).get("compaction") or {}).get(
            "decision", "none")
        if before is not None and decision in ("none", "summary_refused") and \
                current[: len(before)] != before:
            broken.append(f"{request.id} ({_key(request)}) does not extend the previous "
                          "request and reports no compaction")
        previous[request.conversation] = current
    return broken


def _never_resent(seen: Seen) -> list[str]:
    """Request bodies sent again after a sending that was not refused (RUN-12)."""
    records = {str(r.get("id")): r for r in seen.provider_requests}
    sent: dict[bytes, str] = {}
    broken: list[str] = []
    for request in seen.recorded:
        if request.body in sent:
            broken.append(f"{request.id} resends the body of {sent[request.body]}")
        record = records.get(request.id, {})
        refused = (record.get("status_code") or 0) >= 400 or record.get("outcome") == "failed"
        if not refused:
            sent.setdefault(request.body, request.id)
    return broken


def _money_conserved(seen: Seen) -> list[str]:
    """The wallet: balance >= 0, reserved <= balance, charged at most Σ reported usage ×
    price (each call rounded up); once nothing is in flight (every run settled, no answer
    unknown or pending) nothing reserved and at least Σ rounded down charged (BIL-04)."""
    wallet = seen.wallet or {}
    balance, reserved, charged = (wallet.get(k) for k in ("balance", "reserved", "charged"))
    if not all(isinstance(v, int) for v in (balance, reserved, charged)):
        return [f"the wallet's balance, reserved and charged are not integers: {wallet}"]
    assert isinstance(balance, int)
    assert isinstance(reserved, int)
    assert isinstance(charged, int)
    broken: list[str] = []
    if balance < 0 or reserved > balance:
        broken.append(f"balance {balance}, reserved {reserved}")
    low = high = 0
    quiet = all(isinstance(s, dict) and s.get("state") in SETTLED for s in seen.runs.values())
    for record in seen.provider_requests:
        if record.get("outcome") == "received" or UNKNOWN_OUTCOME & set(record.get("faults")
                                                                         or ()):
            quiet = False
        if not record.get("billed"):
            continue
        usage = record.get("usage") or record.get("true_usage") or {}
        prices = seen.prices.get(str(record.get("model")))
        if prices is None:
            prices = next(iter(seen.prices.values()), (0, 0, 0))
        details = usage.get("prompt_tokens_details") or {}
        prompt, cached = usage.get("prompt_tokens", 0), details.get("cached_tokens", 0) or 0
        cost = Fraction((prompt - cached) * prices[0] + cached * prices[1]
                        + usage.get("completion_tokens", 0) * prices[2], 1_000_000)
        low, high = low + math.floor(cost), high + math.ceil(cost)
    if charged > high:
        broken.append(f"charged {charged} above Σ reported usage × price {high}")
    if quiet and reserved != 0:
        broken.append(f"{reserved} still reserved with nothing in flight")
    if quiet and charged < low:
        broken.append(f"charged {charged} below Σ reported usage × price {low}")
    return broken


def _runs_settle(seen: Seen) -> list[str]:
    return [f"{name}: {member(s, 'state')}" for name, s in seen.runs.items()
            if member(s, "state") not in SETTLED]


def _one_claim_wins(seen: Seen) -> list[str]:
    """EXE-01: no operation done twice in the business system, no claim won on a call an
    executor holds."""
    twice = [f"{call} done {count} times" for call, count in
             sorted(seen.business_by_call.items()) if count > 1]
    return twice + claims_on_held_calls(seen.outcomes)


_INVARIANTS: dict[str, Callable[[Seen], list[str]]] = {
    "extends_unless_compacted": _extends_unless_compacted,
    "never_resent": _never_resent,
    "money_conserved": _money_conserved,
    "runs_settle": _runs_settle,
    "one_claim_wins": _one_claim_wins,
    "receipt_ids_keep_meaning": lambda seen: receipt_ids_changed(seen.outcomes),
    "one_final_per_call": lambda seen: second_finals_taken(seen.outcomes),
    "ended_runs_unchanged": lambda seen: seen.ended_changed,
    "applied_finals_in_history": lambda seen: finals_not_in_history(
        seen.outcomes, seen.formal_by_call.get),
}
# Invariants whose reading costs requests: the runner makes them only when one is asked.
WATCHES_ENDED = "ended_runs_unchanged"
READS_FORMAL = "applied_finals_in_history"


def judge(expect: Expect, seen: Seen, verdict: Verdict) -> None:
    for name, run in expect.runs.items():
        snapshot = seen.runs.get(name)
        for key in ("state", "end_reason"):
            value = getattr(run, key)
            if value is not None:
                verdict.add(f"runs.{name}.{key}", value, member(snapshot, key))
        if run.tool_call_states is not None:
            calls = seen.tool_calls.get(name)
            states = None if calls is None else [c.get("state") for c in calls]
            verdict.add(f"runs.{name}.tool_call_states", run.tool_call_states, states)
        if run.cancel_requested is not None:
            calls = seen.tool_calls.get(name)
            asked = None if calls is None else [c.get("cancel_requested") for c in calls]
            verdict.add(f"runs.{name}.cancel_requested", run.cancel_requested, asked)
    if expect.charged_total is not None:
        verdict.add("charged_total", expect.charged_total, member(seen.wallet, "charged"))
    if expect.wallet is not None:
        for key in ("balance", "reserved", "available"):
            value = getattr(expect.wallet, key)
            if value is not None:
                verdict.add(f"wallet.{key}", value, member(seen.wallet, key))
    if expect.requests_seen is not None:
        verdict.add("requests_seen", expect.requests_seen, seen.requests)
    for kind, count in expect.provider_faults_fired.items():
        verdict.add(f"provider_faults_fired.{kind}", count, seen.faults.get(kind, MISSING))
    for kind, count in expect.executor_faults_fired.items():
        verdict.add(f"executor_faults_fired.{kind}", count,
                    seen.executor_faults.get(kind, MISSING))
    if expect.business_effects is not None:
        effects = expect.business_effects
        if effects.total is not None:
            verdict.add("business_effects.total", effects.total, seen.business_total)
        for call in effects.calls:
            call_id = member(seen.tool_calls.get(call.run), f"{call.call}.call_id")
            verdict.add(f"business_effects.{call.run}[{call.call}]", call.count,
                        MISSING if call_id is MISSING
                        else seen.business_by_call.get(str(call_id), 0))
    if expect.append_only is not None:
        broken = _append_only(seen.recorded)
        verdict.add("append_only", expect.append_only, broken or True,
                    held=(not broken) == expect.append_only)
    for request in expect.provider_requests:
        _request(verdict, request, seen)
    for index, event in enumerate(expect.events):
        _events(verdict, event, index, seen)
    for name in expect.invariants:
        broken = _INVARIANTS[name](seen)
        verdict.add(f"invariants.{name}", "holds", broken or "holds", held=not broken)
