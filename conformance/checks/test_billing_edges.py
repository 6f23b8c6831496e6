"""BIL-04 at the edges of what a provider reports: usage figures no honest provider sends (a
negative count, a float, a string, a boolean, null, more cached tokens than prompt tokens, a
count past any window) never create money. An engine that multiplies whatever it is told
lowers a charge below zero and credits the wallet while every honest call still bills right.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from arck.conformance import runoracle as money
from arck.conformance.checking import expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.runworld import ChannelSpec, canonical, world
from arck.simulator.provider import Step, UsageReported

FUNDS = 10**12
FIGURES = ("prompt_tokens", "completion_tokens", "cached_tokens")

INSANE = st.one_of(
    st.integers(max_value=-1),
    st.integers(min_value=10**12, max_value=10**18),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9),
    st.text(alphabet="0123456789-.e", min_size=1, max_size=8),
    st.booleans(),
    st.none(),
)
REPORTS = st.dictionaries(st.sampled_from(FIGURES), INSANE, min_size=1, max_size=3)
CLASSIC = ({"prompt_tokens": -1_000_000}, {"completion_tokens": -1}, {"cached_tokens": -500},
           {"cached_tokens": 10**9}, {"prompt_tokens": True}, {"prompt_tokens": 1.5},
           {"completion_tokens": "100"}, {"prompt_tokens": None},
           {"prompt_tokens": 10**12}, {"completion_tokens": 3 * 10**6})


def _usable(value: Any) -> int:
    """The reference profile: a figure that is not a non-negative JSON integer counts 0."""
    return value if type(value) is int and value >= 0 else 0


def profile_charge(true: dict[str, Any], told: dict[str, Any], spec: ChannelSpec) -> int:
    """What the profile charges for `true` usage with `told` figures replaced (docs/runs.md:
    invalid figures count 0; cached tokens at most the prompt's)."""
    prompt = _usable(told.get("prompt_tokens", true["prompt_tokens"]))
    completion = _usable(told.get("completion_tokens", true["completion_tokens"]))
    details = true.get("prompt_tokens_details") or {}
    cached = _usable(told.get("cached_tokens", details.get("cached_tokens", 0)))
    usage = {"prompt_tokens": prompt, "completion_tokens": completion,
             "prompt_tokens_details": {"cached_tokens": min(cached, prompt)}}
    return money.profile_charge(usage, spec.input_price, spec.cached_price, spec.output_price)


@property_check("BIL-04", "BIL-01", "RUN-11", "CTX-08", cases=REPORTS, examples=CLASSIC, cap=40)
def test_insane_usage_never_creates_money(ctx: CheckContext, case: Any) -> None:
    """One call whose reported usage carries `case`'s figures verbatim: the wallet's balance
    never rises above what was deposited nor falls below zero, nothing is charged below zero
    and nothing stays held once the run ended. Profile: the charge is the usage with every
    figure that is not a non-negative integer counted 0, cached tokens capped at the prompt's
    (docs/runs.md, Billing), as long as the reservation covers it."""
    w = world(ctx)
    spec = ChannelSpec()
    agent = w.agent([Step(text="an answer with odd usage", faults=[UsageReported(**case)]),
                     Step(text="an answer with honest usage")], channel=w.channel(spec))
    wallet = w.wallet(FUNDS)
    session = w.session(agent, wallet)
    with w.faults("usage_reported"):
        run = w.start(session, "Answer, please")
        snapshot, _ = w.settle(run["run_id"])
    state = w.wallet_state(wallet)
    balance, charged, reserved = (state.get(k) for k in ("balance", "charged", "reserved"))
    replay = (f"Reproduce: a provider answering one call with usage figures {canonical(case)} "
              "(simulated provider fault usage_reported), then GET /v1/wallets/{wallet_id}.")
    expect(snapshot.get("state") == "ended", "RUN-11", "the run ended (whatever the usage "
           "said), with no timer left to wait on", str(snapshot), replay)
    expect(all(isinstance(v, int) for v in (balance, charged, reserved)), "BIL-04",
           "the wallet's balance, charged and reserved as integers", str(state), replay)
    assert isinstance(balance, int)
    assert isinstance(charged, int)
    assert isinstance(reserved, int)
    expect(0 <= balance <= FUNDS and charged >= 0, "BIL-04",
           f"no money created or owed: 0 <= balance <= the {FUNDS} deposited, charged >= 0",
           f"{state} after usage {canonical(case)}; run {snapshot}", replay)
    expect(balance + charged == FUNDS, "BIL-04",
           "balance + charged = deposits (every micro-unit charged left the balance)",
           str(state), replay)
    if snapshot.get("end_reason") != "completed":
        return  # an engine may hold a usage it cannot trust as cost-pending (BIL-03)
    expect(reserved == 0, "BIL-01", "nothing held once the call was settled and its run "
           "completed", str(state), replay)
    if ctx.profile != "reference":
        return
    records = [r for r in w.provider.records() if r.conversation == agent.script]
    true = records[0].true_usage if len(records) == 1 else None
    if not isinstance(true, dict):
        return
    want = profile_charge(true, case, spec)
    reservation = money.profile_reservation(spec.input_capacity, spec.output_capacity,
                                            spec.input_price, spec.output_price)
    if want <= reservation:
        expect(charged == want and reserved == 0, "BIL-04",
               f"profile: charged {want} (figures that are not non-negative integers count 0, "
               "cached at most the prompt), nothing held", f"{state}; true usage {true}",
               replay)
    else:  # above its reservation: collected as far as the balance no one else holds allows
        expect(charged == min(want, FUNDS), "BIL-04", f"profile: charged {min(want, FUNDS)} "
               f"of a charge of {want} above the call's reservation of {reservation} (collected "
               "as far as the balance not held for others allows: docs/runs.md, Billing)",
               f"{state}; true usage {true}", replay)
    # CTX-08: only a trusted prompt_tokens is a calibration sample; the next call says how
    # many samples its coefficient rests on (RUN-15's `samples`).
    second = w.start(session, "And again")["run_id"]
    w.settle(second)
    started = [e.get("data", {}) for e in w.events(second) if e.get("type") == "model_call.started"]
    main = [d for d in started if d.get("purpose", "main") == "main"]
    told = case.get("prompt_tokens", 0)
    trusted = type(told) is int and told >= 0
    if main:
        expect(main[0].get("samples") == int(trusted), ("CTX-08", "BIL-04"),
               f"profile: {int(trusted)} calibration sample(s) behind the next call (a "
               f"reported prompt_tokens of {canonical(case.get('prompt_tokens'))} is "
               f"{'a' if trusted else 'no'} trusted count)", canonical(main[0]), replay)


# Prices a micro-unit or so off a whole micro-unit per token, and usage in the thousands: the
# exact cost lands just above a whole micro-unit, where rounding up and any other rounding (or
# a divisor off by one) part ways.
ODD_PRICES = st.tuples(st.integers(min_value=999_990, max_value=1_000_010),
                       st.integers(min_value=0, max_value=1_000_010),
                       st.integers(min_value=999_990, max_value=1_000_010))
ODD_USAGE = st.tuples(st.integers(min_value=1, max_value=5_000),
                      st.integers(min_value=0, max_value=5_000))
ODD_EXAMPLES = (((1_000_001, 500_000, 1_000_000), (1_000, 1_000)),
                ((1_000_000, 0, 1_000_003), (2_000, 7)))


@property_check("BIL-04", "BIL-05", cases=st.tuples(ODD_PRICES, ODD_USAGE),
                examples=ODD_EXAMPLES, cap=12)
def test_charges_at_odd_prices(ctx: CheckContext, case: Any) -> None:
    """A call's charge is its reported usage × the channel's prices per million tokens, exact
    to the micro-unit: core, that cost rounded either way; profile, rounded up (BIL-05)."""
    (input_price, cached_price, output_price), (prompt, completion) = case
    w = world(ctx)
    spec = ChannelSpec(model=ctx.name("odd-model"), input_price=input_price,
                       cached_price=cached_price, output_price=output_price)
    told = {"prompt_tokens": prompt, "completion_tokens": completion, "cached_tokens": 0}
    agent = w.agent([Step(text="priced", faults=[UsageReported(**told)])],
                    channel=w.channel(spec))
    wallet = w.wallet(FUNDS)
    with w.faults("usage_reported"):
        w.settle(w.start(w.session(agent, wallet), "What does it cost?")["run_id"])
    usage = {"prompt_tokens": prompt, "completion_tokens": completion,
             "prompt_tokens_details": {"cached_tokens": 0}}
    exact = money.cost(usage, input_price, cached_price, output_price)
    state = w.wallet_state(wallet)
    charged = state.get("charged")
    shown = (f"{prompt} prompt and {completion} completion tokens at {input_price} / "
             f"{output_price} micro-units per million: {exact} ({float(exact):.6f}) exactly")
    expect(isinstance(charged, int) and exact - 1 < charged < exact + 1, "BIL-04",
           f"a charge of {shown}, rounded either way", str(state))
    if ctx.profile == "reference":
        want = money.profile_charge(usage, input_price, cached_price, output_price)
        expect(charged == want, "BIL-05", f"profile: {want} charged for {shown}, rounded up",
               str(state))
