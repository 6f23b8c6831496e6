"""A request the provider refuses as too long (400 `context_length_exceeded`): CTX-05's
"explicit context-overflow problem", with RUN-11 (never hangs or loops) and BIL-04 (money
conserved) around it. The refusal comes either once from the model's script, or from a model
whose real window (400 tokens) is far smaller than its channel declares (100,000), so that
every request past the first exchange is refused for as long as the model is asked.

Core: the run ends with a recorded reason, at most `MAX_AFTER` more requests reach the
provider after the first refusal (a bounded repair, never a loop), and the wallet holds
nothing back and is charged the reported usage × price of the requests processed (a refused
one was not processed: the provider bills nothing for it). Profile (docs/runs.md, Overflow
repair): the request sent after a refusal was compacted first, a second refusal in the same
step ends the run `context_uncompactable` with nothing more sent, and a repaired request that
is answered lets the run complete.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

from arck.conformance import runoracle as money
from arck.conformance.checking import expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.runworld import TOOL, Agent, ChannelSpec, RunWorld, messages, world
from arck.simulator.provider import ContextLengthExceeded, Step, ToolCall

FUNDS = 10**12
WINDOW = 400  # tokens the narrow model really takes, prompt and max_tokens together
OUTPUT = 200  # the channel's output capacity, so a first request of ~100 tokens fits
MAX_AFTER = 6  # requests after the first refusal that still count as a bounded repair
DONE = "All done."

CASES = st.tuples(
    st.sampled_from(["once", "window"]),
    st.integers(min_value=0, max_value=3),  # tool exchanges before the refusal
    st.integers(min_value=1_000, max_value=6_000),  # bytes of each tool result
)


def _steps(mode: str, exchanges: int) -> list[Step]:
    calls = [Step(tool_calls=[ToolCall(name=TOOL, arguments={"page": n})])
             for n in range(exchanges)]
    if mode == "once":
        return [*calls, Step(faults=[ContextLengthExceeded()]), Step(text=DONE),
                Step(text=DONE)]
    return [*calls, Step(text=DONE), Step(text=DONE)]


@property_check("RUN-11", "CTX-05", "BIL-04", cases=CASES,
                examples=(("once", 3, 2_000), ("window", 1, 6_000), ("once", 0, 1_000)),
                cap=8)
def test_context_overflow_repaired_or_ended(ctx: CheckContext, case: Any) -> None:
    """A request refused as too long is repaired a bounded number of times or the run ends
    with its reason; nothing is charged for what the provider refused."""
    mode, exchanges, size = case
    w = world(ctx)
    model = ctx.name("narrow-model")
    spec = ChannelSpec(model=model, output_capacity=OUTPUT)
    if mode == "window":
        exchanges = max(exchanges, 1)  # the first request fits; the one after a result not
        w.provider.set_context_window(model, WINDOW)
    agent = w.agent(_steps(mode, exchanges), channel=w.channel(spec), budget=4096)
    wallet = w.wallet(FUNDS)
    session = w.session(agent, wallet)
    try:
        with w.faults("context_length"):
            run_id = str(w.start(session, "Look the pages up")["run_id"])
            snapshot = w.answer_all(run_id, {"status": "ok", "rows": "r" * size},
                                    rounds=exchanges + 2)
    finally:
        w.provider.set_context_window(model, None)
    records = [r for r in w.provider.records() if r.model == model]
    first = next(i for i, r in enumerate(records) if "context_length" in r.faults)
    after = len(records) - first - 1
    shown = f"{mode} refusal after {exchanges} tool exchange(s) of {size:,} bytes"
    reason = snapshot.get("end_reason")
    expect(snapshot.get("state") == "ended" and isinstance(reason, str) and reason != "",
           "RUN-11", f"the run ended with a recorded reason after the provider refused a "
           f"request as too long ({shown})", lambda: f"{snapshot}",
           hint="A run that neither ends nor waits for anything hangs or loops.")
    expect(after <= MAX_AFTER, "RUN-11", f"at most {MAX_AFTER} more model requests after "
           f"the first context_length_exceeded ({shown})",
           lambda: f"{after}: " + ", ".join(f"{r.status_code}" for r in records[first:]))
    _judge_money(w, wallet, spec, records)
    if ctx.profile == "reference":
        _judge_not_resent(w, agent, records, shown)
        _judge_repair(w, run_id, str(reason), shown)


def _judge_not_resent(w: RunWorld, agent: Agent, records: list[Any], shown: str) -> None:
    """Profile: a request refused as too long never goes again byte for byte (the provider's
    side: a resend inside one model call is invisible in the run's events)."""
    refused = {r.id for r in records if "context_length" in r.faults}
    sent = w.requests(agent)
    for before, after in itertools.pairwise(sent):
        expect(not (before.id in refused and messages(before) == messages(after)), "CTX-05",
               f"profile: a request refused as too long repaired before it is sent again "
               f"({shown})", f"request {after.id} sent the messages of {before.id}, which "
               "the provider had refused with context_length_exceeded, unchanged")


def _judge_money(w: RunWorld, wallet: str, spec: ChannelSpec, records: list[Any]) -> None:
    """Charged within Σ reported usage × price of the processed requests, each call rounded
    either way (summaries on this channel included, CTX-14); nothing left reserved."""
    exact = [money.cost(r.usage, spec.input_price, spec.cached_price, spec.output_price)
             for r in records if r.billed and r.usage is not None]
    low, high = sum(int(c) for c in exact), sum(-(-c.numerator // c.denominator) for c in exact)
    state = w.wallet_state(wallet)
    charged = state.get("charged")
    expect(state.get("reserved") == 0 and isinstance(charged, int) and low <= charged <= high,
           "BIL-04", f"nothing reserved once the run ended and {low}..{high} micro-units "
           "charged (the usage of the requests the provider processed; refused ones cost "
           "nothing)", str(state))
    expect(state.get("balance") == FUNDS - (charged or 0), "BIL-04",
           f"balance = deposits − charged = {FUNDS} − {charged}", str(state))


def _refused(finished: dict[str, Any] | None) -> bool:
    return finished is not None and finished.get("outcome") == "refused" \
        and finished.get("status") == 400


def _judge_repair(w: RunWorld, run_id: str, reason: str, shown: str) -> None:
    """Profile: each refused main call is followed by a compacted request or the end
    `context_uncompactable`; a refused repair ends the run; an answered one completes it."""
    started = [e for e in w.of_type(run_id, "model_call.started")
               if e.get("purpose", "main") == "main"]
    finished = {e.get("call_id"): e for e in w.of_type(run_id, "model_call.finished")}
    for n, call in enumerate(started):
        if not _refused(finished.get(call.get("call_id"))):
            continue
        following = started[n + 1] if n + 1 < len(started) else None
        if following is None:
            expect(reason == "context_uncompactable", "CTX-05", "profile: a request refused "
                   f"as too long and not sent again ends the run context_uncompactable "
                   f"({shown})", reason)
            return
        decision = following.get("compaction")
        expect(isinstance(decision, dict) and decision.get("decision") != "none", "CTX-05",
               f"profile: the request sent after a context_length_exceeded refusal compacted "
               f"first, spacing skipped ({shown})", str(following))
        if _refused(finished.get(following.get("call_id"))):
            expect(n + 2 == len(started) and reason == "context_uncompactable", "CTX-05",
                   f"profile: a repaired request refused again ends the run "
                   f"context_uncompactable with nothing more sent ({shown})",
                   f"{len(started) - n - 2} more main call(s), end reason {reason!r}")
        else:
            expect(reason == "completed", "RUN-11", f"profile: the run completed once its "
                   f"repaired request was answered ({shown})", reason)
        return
