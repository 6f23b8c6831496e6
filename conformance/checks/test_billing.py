"""BIL: balance, reservation and settlement (SPEC §8), judged from the wallet the target shows
and the usage the simulated provider reported, priced by arck's own arithmetic; and CTX-12,
the estimate kept out of billing and byte budgets."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from arck.conformance import runoracle as money
from arck.conformance.checking import check, expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotTestable
from arck.conformance.runworld import (
    TOOL,
    Agent,
    ChannelSpec,
    RunWorld,
    canonical,
    messages,
    only,
    world,
)
from arck.simulator.provider import SlowAnswer, Step, ToolCall, UsageDrift

FUNDS = 10**12


def _reservation(spec: ChannelSpec) -> int:
    return money.profile_reservation(spec.input_capacity, spec.output_capacity,
                                     spec.input_price, spec.output_price)


def _reported(w: RunWorld, agents: list[Agent]) -> list[Any]:
    """The usage the provider reported for every processed request of these agents."""
    scripts = {a.script for a in agents}
    return [r.usage for r in w.provider.records()
            if r.conversation in scripts and r.billed and r.usage is not None]


def _bounds(usages: list[Any], spec: ChannelSpec) -> tuple[int, int]:
    """Core: Σ reported usage × price, each call rounded to a whole micro-unit either way."""
    exact = [money.cost(u, spec.input_price, spec.cached_price, spec.output_price)
             for u in usages]
    return sum(int(c) for c in exact), sum(-(-c.numerator // c.denominator) for c in exact)


@check("BIL-01", "BIL-05")
def test_reservation_held_while_the_call_is_in_flight(ctx: CheckContext) -> None:
    """While a model call is in flight its reservation is held; after it, the charge is the
    reported usage × price and the rest is released."""
    w = world(ctx)
    spec = ChannelSpec()
    agent = w.agent([Step(text="Here is the answer you asked for.",
                          faults=[SlowAnswer(seconds=10)])], channel=w.channel(spec))
    wallet = w.wallet(FUNDS)
    session = w.session(agent, wallet)
    with w.faults("slow"):
        run = w.start(session, "Please answer")
        # The wallet is read once the provider holds the call (its answer 10 s away): a
        # service may send it a moment after it answered the run's creation.
        record = only(w.received(agent, run["run_id"]), "model call of the run in flight",
                      lambda: f"run {w.snapshot(run['run_id'])}")
        during = w.wallet_state(wallet)
        floor, _ = _bounds([record.true_usage], spec)
        expect(isinstance(during.get("reserved"), int) and during["reserved"] >= max(floor, 1),
               "BIL-01", f"at least the call's cost ({floor} micro-units) reserved while it is "
               "in flight", str(during))
        if ctx.profile == "reference":
            want = _reservation(spec)
            expect(during.get("reserved") == want, ("BIL-01", "BIL-05"),
                   f"the reservation = verified capacity × price = {want} micro-units "
                   "(never the token estimate)", str(during))
        w.settle(run["run_id"])
    after = w.wallet_state(wallet)
    low, high = _bounds(_reported(w, [agent]), spec)
    charged = after.get("charged")
    expect(after.get("reserved") == 0 and isinstance(charged, int) and low <= charged <= high,
           "BIL-01", f"nothing left reserved and {low}..{high} micro-units charged "
           "(reported usage × price)", str(after))
    expect(after.get("balance") == FUNDS - (charged or 0), "BIL-04",
           f"balance = deposits − charged = {FUNDS} − {charged}", str(after))


WALLET_CASES = st.tuples(
    st.integers(min_value=2, max_value=5),  # sessions on the wallet
    st.integers(min_value=0, max_value=5),  # reservations the funds cover
    st.lists(st.tuples(st.integers(min_value=1, max_value=20),
                       st.sampled_from([0.5, 1.0, 1.5, 3.0])), min_size=5, max_size=5),
)


@property_check("BIL-04", "BIL-02", cases=WALLET_CASES)
def test_money_conserved_with_many_runs_on_one_wallet(ctx: CheckContext, case: Any) -> None:
    """Runs of several sessions share one wallet, their calls in flight at once: the balance
    never goes negative, nothing is reserved twice, and the charged total is the reported
    usage × price."""
    sessions, covered, calls = case
    w = world(ctx)
    spec = ChannelSpec()
    channel = w.channel(spec)
    funds = covered * _reservation(spec) + 1
    wallet = w.wallet(funds)
    agents = [w.agent([Step(text=f"answer {i}", faults=[SlowAnswer(seconds=seconds),
                                                        UsageDrift(factor=factor)])],
                      channel=channel) for i, (seconds, factor) in enumerate(calls[:sessions])]
    runs = [w.start(w.session(agent, wallet), f"question {i}")["run_id"]
            for i, agent in enumerate(agents)]
    seen = [w.wallet_state(wallet)]
    for run_id in runs:
        w.settle(run_id)
        seen.append(w.wallet_state(wallet))
    for state in seen:
        balance, reserved = state.get("balance"), state.get("reserved")
        expect(isinstance(balance, int) and isinstance(reserved, int) and
               0 <= reserved <= balance, "BIL-04",
               "a balance never negative and never more reserved than it holds", str(state))
    final = seen[-1]
    low, high = _bounds(_reported(w, agents), spec)
    charged = final.get("charged")
    expect(isinstance(charged, int) and low <= charged <= high and final.get("reserved") == 0,
           "BIL-04", f"{low}..{high} micro-units charged (Σ reported usage × price), nothing "
           "left reserved", str(final))
    expect(final.get("balance") == funds - (charged or 0), "BIL-04",
           f"balance = {funds} deposited − {charged} charged", str(final))
    for run_id, agent in zip(runs, agents, strict=True):
        snapshot = w.snapshot(run_id)
        if snapshot.get("end_reason") == "insufficient_balance":
            expect(not w.requests(agent), "BIL-02",
                   "no model request from a run ended for insufficient balance",
                   f"{len(w.requests(agent))} request(s) sent by {run_id}")


# -- CTX-12: the estimate serves context management only ------------------------------------

DRIFTS = st.sampled_from([(4.0, 0.25), (0.25, 4.0), (3.0, 0.5)])
ROWS = st.lists(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1,
                        max_size=30), min_size=1, max_size=6)


def _rows(words: list[str], size: int) -> dict[str, Any]:
    """A result of about `size` bytes made of `words`: over the 2,048-byte budget, under 8,192."""
    rows: list[str] = []
    while len(canonical(rows).encode()) < size:
        rows.append(words[len(rows) % len(words)] * 4)
    return {"arck": "estimate-independent", "rows": rows}


@property_check("CTX-12", cases=st.tuples(DRIFTS, st.integers(min_value=2_600, max_value=7_000),
                                          ROWS), cap=20)
def test_the_estimate_sets_no_charge_and_no_byte_budget(ctx: CheckContext, case: Any) -> None:
    """Two sessions whose provider reports prompt tokens drifted opposite ways, so their
    calibrated estimates part: the same tool result enters both requests as the same bytes
    (a byte budget is bytes), and each wallet is charged its reported usage × price."""
    (first, second), size, words = case
    w = world(ctx)
    result = _rows(words, size)
    sides = []
    # A channel each: samples are kept per channel (CTX-10), so each side calibrates alone.
    for factor, spec in ((first, ChannelSpec()), (second, ChannelSpec(timeout_ms=29_000))):
        channel = w.channel(spec)
        drift = [UsageDrift(factor=factor)]
        agent = w.agent([Step(text="warm", faults=drift), Step(text="warm again", faults=drift),
                         Step(tool_calls=[ToolCall(name=TOOL, arguments={"q": "rows"})],
                              faults=drift), Step(text="done", faults=drift)],
                        channel=channel, budget=2048)
        wallet = w.wallet(FUNDS)
        session = w.session(agent, wallet)
        runs = []
        for text in ("first question", "second question", "look the rows up"):
            run_id = str(w.start(session, text)["run_id"])
            w.answer_all(run_id, result)
            runs.append(run_id)
        sides.append((agent, wallet, runs, spec))
    estimates = [_last_estimate(w, runs[-1]) for _, _, runs, _ in sides]
    if None not in estimates and _close(estimates[0], estimates[1]):
        raise NotTestable(f"not testable: the two sessions' calibrated estimates never parted "
                          f"({estimates[0]} and {estimates[1]})")
    tools = [[m.get("content") for m in messages(w.requests(agent)[-1])
              if m.get("role") == "tool"] if w.requests(agent) else [] for agent, *_ in sides]
    if not tools[0] or not tools[1]:
        raise NotTestable(f"not testable: the tool result reached no request (tool messages "
                          f"per side: {len(tools[0])}, {len(tools[1])})")
    expect(canonical(tools[0]) == canonical(tools[1]), "CTX-12",
           f"the same {size}-byte result entering both sessions as the same bytes, whatever "
           f"their estimates ({estimates[0]} and {estimates[1]} tokens)",
           lambda: f"{canonical(tools[0])[:200]} / {canonical(tools[1])[:200]}")
    for agent, wallet, _, spec in sides:
        low, high = _bounds(_reported(w, [agent]), spec)
        state = w.wallet_state(wallet)
        charged = state.get("charged")
        expect(isinstance(charged, int) and low <= charged <= high, "CTX-12",
               f"{low}..{high} micro-units charged: the reported usage × price, never the "
               "estimate", str(state))


def _last_estimate(w: RunWorld, run_id: str) -> float | None:
    started = [e for e in w.of_type(run_id, "model_call.started")
               if e.get("purpose", "main") == "main"]
    value = started[-1].get("calibrated_estimate") if started else None
    return float(value) if isinstance(value, int | float) else None


def _close(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and max(a, b) < 1.5 * min(a, b)
