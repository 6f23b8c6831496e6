"""Judging a scenario's expectations against what was seen at the end of its run.

Each expectation becomes one `Judgement`: what, expected, seen, held. The runner adds its
own (an action's status, a run that never settled); this module judges `expect`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from arck.simulator.provider import RecordedRequest
from arck.simulator.scenario.model import EventExpectation, Expect, RequestExpectation

__all__ = ["MISSING", "Judgement", "Seen", "Verdict", "judge", "member"]

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
    if expect.append_only is not None:
        broken = _append_only(seen.recorded)
        verdict.add("append_only", expect.append_only, broken or True,
                    held=(not broken) == expect.append_only)
    for request in expect.provider_requests:
        _request(verdict, request, seen)
    for index, event in enumerate(expect.events):
        _events(verdict, event, index, seen)
