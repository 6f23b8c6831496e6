"""Rules over what the simulated executor did, judged once for the stateful check and the
scenarios' invariants, so a failing program and the scenario written from it are judged alike.

Each rule reads the executor's own records (`CallOutcome`, in the order the calls were
worked) and what the platform shows, and returns what broke, one line each (empty: held).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from arck.simulator.executor.outcome import CallOutcome
from arck.simulator.provider.prompt import canonical

__all__ = ["OUTCOME_MEMBERS", "claims_on_held_calls", "contains_equal",
           "finals_not_in_history", "receipt_ids_changed", "receipt_outcome", "run_state",
           "second_finals_taken"]


def run_state(
    target: Any, run_id: str, session: str, *, only_ended: bool = False
) -> tuple[Any, str | None]:
    """A run's snapshot (parsed; None when the answer was no 2xx JSON) and, as one canonical
    text, that snapshot with its session's formal and execution histories: what a receipt
    must not move and an ended run must keep (EXE-08, EXE-13, EXE-14). With `only_ended`,
    the text only once the run has ended (else None, and the histories are not read).
    The checks and the scenario runner both judge with it, so they compare the same thing."""
    snapshot = _answer(target.get_run(run_id))
    if only_ended and not (isinstance(snapshot, dict) and snapshot.get("state") == "ended"):
        return snapshot, None
    histories = [_answer(target.history(session, kind)) for kind in ("formal", "execution")]
    return snapshot, canonical([snapshot, *histories])


def _answer(exchange: Any) -> Any:
    return exchange.json_or_none() if 200 <= exchange.status < 300 else None


def contains_equal(item: Any, value: Any) -> bool:
    """`item` holds `value` somewhere inside, canonically equal (a receipt's shape in a
    history is the target's own, so only the value is looked for)."""
    want = canonical(value)
    stack = [item]
    while stack:
        found = stack.pop()
        if canonical(found) == want:
            return True
        if isinstance(found, dict):
            stack.extend(found.values())
        elif isinstance(found, list):
            stack.extend(found)
    return False


# The members of a receipt's answer that make its outcome (docs/executors.md); any other
# member (a delivery's own time or request id, say) may differ between deliveries.
OUTCOME_MEMBERS = ("call_id", "receipt_id", "state", "applied", "run_ended")


def receipt_outcome(answer: Any) -> str:
    """The outcome an answer to a receipt states, canonical: its outcome members when it is
    an object, else the whole answer."""
    if isinstance(answer, dict):
        return canonical({k: answer[k] for k in OUTCOME_MEMBERS if k in answer})
    return canonical(answer)


def claims_on_held_calls(outcomes: Sequence[CallOutcome]) -> list[str]:
    """EXE-01: a claim granted on a call some executor holds with its acceptance confirmed
    (and not detached). A held call is never dispatched again, so any later winner is a
    second one."""
    held: set[str] = set()
    broken: list[str] = []
    for outcome in outcomes:
        if outcome.call_id in held and any(200 <= c.status < 300 for c in outcome.claims):
            broken.append(f"call {outcome.call_id} claimed again while held:\n"
                          f"{outcome.describe()}")
        if outcome.confirmed and outcome.detach is None:
            held.add(outcome.call_id)
    return broken


def receipt_ids_changed(outcomes: Sequence[CallOutcome]) -> list[str]:
    """EXE-08, EXE-09: once a receipt id was answered 2xx, every later delivery of it (the
    executor sends one id with one body only) answered 2xx too, with the same outcome
    (`receipt_outcome`), and saying `replayed: true` when it says; the id sent again with
    another body (fault rebind) refused."""
    first: dict[tuple[str, str], str] = {}
    broken: list[str] = []
    for outcome in outcomes:
        for delivery in outcome.deliveries:
            exchange = delivery.exchange
            key = (outcome.call_id, delivery.receipt_id)
            if delivery.fault == "rebind":
                if 200 <= exchange.status < 300:
                    broken.append(f"receipt {delivery.receipt_id} sent again with another "
                                  f"body was taken: {exchange.describe()}")
                continue
            if delivery.lost or delivery.fault is not None:
                continue
            if not 200 <= exchange.status < 300:
                if key in first:
                    broken.append(f"receipt {delivery.receipt_id}, answered 2xx before, now "
                                  f"refused: {exchange.describe()}")
                continue
            answer = delivery.answer()
            shown = receipt_outcome(answer)
            if key not in first:
                first[key] = shown
                continue
            if shown != first[key]:
                broken.append(f"receipt {delivery.receipt_id} answered {exchange.describe()}; "
                              f"first {first[key][:200]}")
            elif isinstance(answer, dict) and "replayed" in answer and \
                    answer.get("replayed") is not True:
                broken.append(f"the repeated receipt {delivery.receipt_id} answered "
                              f"{exchange.describe()}, not replayed: true")
    return broken


def second_finals_taken(outcomes: Sequence[CallOutcome]) -> list[str]:
    """EXE-14: a faulty executor's second final (another kind, a new receipt_id) taken."""
    return [f"call {outcome.call_id}: the second final {d.receipt_id} ({d.kind}) taken: "
            f"{d.exchange.describe()}"
            for outcome in outcomes for d in outcome.deliveries
            if d.fault == "second_final" and 200 <= d.exchange.status < 300]


def finals_not_in_history(outcomes: Sequence[CallOutcome],
                          formal: Callable[[str], Any]) -> list[str]:
    """BUD-16: a final receipt the platform applied (2xx, neither `run_ended` nor
    `applied: false`) whose result is not in the formal history `formal(call_id)` of the
    call's session, canonically equal (None: the call's session is unknown, not judged)."""
    broken: list[str] = []
    for outcome in outcomes:
        for delivery in outcome.of_kind("final"):
            answer = delivery.answer()
            if delivery.lost or delivery.fault is not None or not isinstance(answer, dict) or \
                    not 200 <= delivery.exchange.status < 300 or \
                    answer.get("run_ended") or answer.get("applied") is False:
                continue
            body = _json(delivery.body)
            result = body.get("result") if isinstance(body, dict) else None
            history = formal(outcome.call_id) if result is not None else None
            if history is not None and not contains_equal(history, result):
                broken.append(f"the {delivery.kind} result of {outcome.call_id} is not in the "
                              f"formal history: {canonical(history)[:400]}")
    return broken


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None
