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
from arck.conformance.checking import check, expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotTestable
from arck.conformance.runworld import TOOL, Agent, ChannelSpec, RunWorld, messages, world
from arck.simulator.provider import ContextLengthExceeded, ServerError, Step, ToolCall

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


# Three tool exchanges of 3,000-byte results after a 2,000-byte input on a 2,000-token
# window reach 70% even after local compaction (as test_runs_events's compaction scenario).
NARROW = ChannelSpec(input_capacity=4_000, total_capacity=6_000, output_capacity=500)
REFUSAL = "The server had an error"  # the simulated provider's 500 message


@check("CTX-06", "RUN-11", "RUN-02")
def test_a_refused_summary_call_leaves_history_and_the_run_goes_on(ctx: CheckContext) -> None:
    """The summary model answers every summary call with an error (500): no summary is
    applied, nothing of the refusal reaches the main model, and the run does not wait on the
    failed compaction: it ends by itself with its reason (core). Profile (docs/runs.md,
    Compaction): `compaction.refused` is recorded, the refused call is not retried, and the
    run completes, held by the worker that began it (a takeover would mean that worker died:
    RUN-02's profile rule, judged as for every run)."""
    w = world(ctx)
    summary = w.channel(ChannelSpec(model=w.ctx.name("summary-model")))
    w.provider.add_model_script(summary.spec.model,
                                [Step(faults=[ServerError(status=500)])] * 8)
    steps = [Step(tool_calls=[ToolCall(name=TOOL, arguments={"page": n})]) for n in range(3)]
    agent = w.agent([*steps, Step(text=DONE)], channel=w.channel(NARROW),
                    summary_channel=summary)
    run_id = str(w.start(w.session(agent, w.wallet(FUNDS)), "x" * 2_000)["run_id"])
    w.answer_all(run_id, {"status": "ok", "rows": "r" * 3_000})
    snapshot, _ = w.settle(run_id)
    asked = [r for r in w.provider.records() if r.conversation == f"model:{summary.spec.model}"]
    if not asked:
        raise NotTestable("not testable: no summary was asked of the summary model")
    replay = ("Reproduce: a version on a 2,000-token window with a summary channel whose "
              "model answers 500; a 2,000-byte input, three tool calls answered with 3,000 "
              "bytes each (docs/runs.md, Compaction).")
    expect(snapshot.get("state") == "ended" and bool(snapshot.get("end_reason")), "RUN-11",
           "the run ended by itself, with its reason, after its summary call was refused",
           str(snapshot), replay)
    leaked = [n for n, r in enumerate(w.requests(agent), start=1)
              if REFUSAL in r.body.decode("utf-8", "replace")]
    expect(not leaked, "CTX-06", "nothing of the refused summary call in any request to the "
           "main model", f"in main request(s) {leaked}", replay)
    if ctx.profile == "reference":
        refused = w.of_type(run_id, "compaction.refused")
        expect(bool(refused) and snapshot.get("end_reason") == "completed", "CTX-06",
               "profile: `compaction.refused` recorded and the run `completed`",
               lambda: f"refusals {refused}; run {snapshot}", replay)
        expect(len(asked) == len(refused), "CTX-06", "profile: a refused summary call is "
               "not retried (one call per `compaction.refused`)",
               f"{len(asked)} summary call(s), {len(refused)} refusal(s)", replay)
