"""CTX from behaviour alone (RUN-15: "without it they infer from behaviour, with
tolerances"): judged only from the requests the simulated provider received and the usage it
reported, so it applies to every target, with or without `model_call.started` events.

The target's calibrated estimate of a request is the last reported `prompt_tokens` plus its
coefficient times the raw estimate of what was appended (CTX-08). arck cannot see that
estimate, but it can bound it: the appended messages are in the request, and their true
tokens (the provider's own count) times the drift factor is what the provider would report
for them. A coefficient fitted on other text may over- or under-count new text; the stated
tolerance is a factor of `DELTA_TOLERANCE` on the appended part only (a character-based raw
estimate on this check's texts is off by at most 2.2 ×). Hence two judgements:

* **Too early (CTX-03, CTX-04).** A request that does not extend the previous one (a
  compaction) while even the generous bound — previous reported prompt + tolerance × drift ×
  (true tokens of the appended messages + the previous answer) — is under 70% of the
  effective budget: nothing but a character count, or no estimate at all, could have asked
  for it.
* **Too late (CTX-04, CTX-08).** A request whose reported prompt exceeds the whole input
  window (the effective budget plus its 2,000-token margin) by more than the tolerance on its
  appended part: the target either never compacts or does not follow the usage the provider
  reports (an estimate left uncalibrated under drift).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hypothesis import strategies as st

from arck.conformance import runoracle
from arck.conformance.checking import expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotTestable
from arck.conformance.runworld import TOOL, ChannelSpec, RunWorld, canonical, messages, world
from arck.simulator.provider import Step, ToolCall, UsageDrift
from arck.simulator.provider.prompt import segments

FUNDS = 10**12
DELTA_TOLERANCE = 3  # × on the appended part's reported-equivalent tokens
SMALL = ChannelSpec(input_capacity=9_000, total_capacity=12_000, output_capacity=500)
DRIFTS = (0.5, 1.0, 2.0, 3.0)
TURNS = st.lists(st.one_of(
    st.tuples(st.just("tool"), st.integers(min_value=200, max_value=3_500)),  # result bytes
    st.tuples(st.just("text"), st.integers(min_value=200, max_value=6_000)),  # input bytes
), min_size=6, max_size=14)
# Past the window several times at each drift: both judgements have something to judge.
EXAMPLES = tuple((drift, [("tool", 3_000)] * 6 + [("text", 3_000)] * 4)
                 for drift in (0.5, 3.0))


def _appended(old: list[Any], new: list[Any]) -> int:
    """True tokens of what came after request `old`: the messages after the last assistant
    message of `new` (the results and input that followed the answer, kept in full as the
    newest), or the messages `new` holds beyond `old`'s, counted with repeats, if more."""
    last = max((i for i, m in enumerate(new)
                if isinstance(m, dict) and m.get("role") == "assistant"), default=-1)
    tail = sum(_true_tokens(m) for m in new[last + 1:])
    extra = Counter(canonical(m) for m in new) - Counter(canonical(m) for m in old)
    beyond = sum(_true_tokens(json.loads(m)) * n for m, n in extra.items())
    return max(tail, beyond)


def _true_tokens(message: Any) -> int:
    """The provider's own count of one message (its segment), as in its prompt_tokens."""
    if not isinstance(message, dict):
        return 0
    return len(segments([message], [])[1])


@property_check("CTX-03", "CTX-04", "CTX-08",
                cases=st.tuples(st.sampled_from(DRIFTS), TURNS), examples=EXAMPLES, cap=25)
def test_compaction_follows_reported_tokens(ctx: CheckContext, case: Any) -> None:
    """On a small window, with the provider's reported prompt tokens drifted by a factor:
    no compaction while the request is well under 70% of the effective budget in reported
    tokens, and no request past the whole window (judged from the provider's side only)."""
    drift, turns = case
    w = world(ctx)
    steps: list[Step] = []
    for kind, _size in turns:
        if kind == "tool":
            steps += [Step(tool_calls=[ToolCall(name=TOOL, arguments={"q": "rows"})]),
                      Step(text="noted")]
        else:
            steps.append(Step(text="ok"))
    faults = [UsageDrift(factor=drift)]
    agent = w.agent([s.model_copy(update={"faults": faults}) for s in steps],
                    channel=w.channel(SMALL), budget=4096)
    session = w.session(agent, w.wallet(FUNDS))
    for kind, size in turns:
        text = "tell me more " * (size // 13 if kind == "text" else 1)
        run_id = str(w.start(session, text).get("run_id"))
        result = {"status": "ok", "rows": "r" * size}
        w.answer_all(run_id, result, rounds=10)
        if w.snapshot(run_id).get("end_reason") == "context_uncompactable":
            break
    _judge(w, agent.script, drift)


def _judge(w: RunWorld, script: str, drift: float) -> None:
    budget = runoracle.effective_budget(None, SMALL.input_capacity, SMALL.total_capacity,
                                        SMALL.output_capacity)
    window = budget + runoracle.SAFETY_MARGIN
    sent = {r.id: r for r in w.provider.recorded(script)}
    calls = [(r, sent[r.id]) for r in w.provider.records()
             if r.id in sent and r.billed and r.usage is not None]
    if len(calls) < 2:
        raise NotTestable(f"not testable: {len(calls)} answered model call(s), nothing to "
                          "compare")
    judged = 0
    for n in range(1, len(calls)):
        (before, previous), (record, request) = calls[n - 1], calls[n]
        old, new = messages(previous), messages(request)
        answer = int((before.usage or {}).get("completion_tokens") or 0)
        delta = drift * DELTA_TOLERANCE * (_appended(old, new) + answer)
        last = int((before.usage or {}).get("prompt_tokens") or 0)
        reported = int((record.usage or {}).get("prompt_tokens") or 0)
        compacted = new[: len(old)] != old
        judged += 1
        if compacted:
            expect(last + delta >= 0.7 * budget, ("CTX-03", "CTX-04"),
                   f"request {n + 1}: a compaction only near 70% of the {budget}-token "
                   f"budget in reported tokens (at most {last} + {delta:.0f} appended, "
                   f"tolerance × {DELTA_TOLERANCE}, drift × {drift})",
                   f"the request rewritten at {last + delta:.0f} ≤ "
                   f"{0.7 * budget:.0f} tokens: {len(old)} messages became {len(new)}")
        expect(reported <= window + delta, ("CTX-04", "CTX-08"),
               f"request {n + 1}: within the {window}-token input window in reported tokens "
               f"(+{delta:.0f} tolerance on what was appended; drift × {drift})",
               f"{reported} reported prompt tokens")
    if not judged:
        raise NotTestable("not testable: no request followed another")
