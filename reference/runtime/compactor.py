"""The compaction stage of a worker's step: decide, compact, summarize, or end the run.

Before each main model call the worker asks `Compactor.prepare` for the request to send. The
decision rests only on the calibrated estimate of the whole request (CTX-03) against the
effective budget: below 70% nothing happens; at or above it, local compaction first, then a
model summary only if still at or above 70% and the spacing allows it (CTX-04/05); a request
that cannot get under the budget ends the run `context_uncompactable` before anything is
reserved for it (CTX-15). Each rewrite is a new generation of the stored execution history,
in its own transaction with its event, so a crash between steps leaves a valid history.
What a rewrite contains is decided by the pure functions of `compaction`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from arck.reference.canonical import canonical_text, utf8_length
from arck.reference.models import AgentVersion
from arck.reference.runtime import billing, compaction, estimate
from arck.reference.runtime.compaction import Facts, Message
from arck.reference.runtime.runstore import RunStore, SessionRow, event, held
from arck.reference.runtime.wire import Channel

if TYPE_CHECKING:

    from arck.reference.runtime.worker import Workers

__all__ = ["REQUEST_TAIL", "Compactor", "Ready", "Target", "figures", "held", "request_body",
           "request_head"]


@dataclass(frozen=True)
class Target:
    """Where one model call goes: its channel, prices, calibration set key and reservation."""

    channel: Channel
    prices: billing.Prices
    set_key: str
    reservation: int

    @classmethod
    def of(cls, channel: Channel) -> Target:
        prices = billing.Prices(**channel.prices.model_dump())
        params = {"max_completion_tokens": channel.output_capacity}
        return cls(channel, prices, canonical_text([channel.model, channel.channel_id, params]),
                   billing.reservation(prices, channel.input_capacity, channel.output_capacity))


@dataclass(frozen=True)
class Ready:
    """The main request may go: the session row it is built from and its RUN-15 decision."""

    session: SessionRow
    compaction: dict[str, Any]


def request_body(model: str, max_tokens: int, tools: str, items: list[str]) -> bytes:
    """Stored message texts joined as they are: each request extends the last byte for byte."""
    return request_head(model, max_tokens, tools) + ",".join(items).encode() + REQUEST_TAIL


def request_head(model: str, max_tokens: int, tools: str) -> bytes:
    """A request body up to its messages' first text; the texts, `,`-joined, and
    `REQUEST_TAIL` follow (so a body can be built from texts already joined as bytes)."""
    head = f'{{"model":{json.dumps(model, ensure_ascii=False)},' \
           f'"max_completion_tokens":{max_tokens},'
    if tools:
        head += f'"tools":{tools},'
    return f'{head}"messages":['.encode()


REQUEST_TAIL = b"]}"


def raw_of(session: SessionRow) -> int:
    """The raw estimate from the session's running sizes (never recomputed over the history)."""
    return estimate.raw_estimate(session.exec_bytes + utf8_length(session.tools),
                                 session.exec_count)


def figures(
    raw: int, samples: list[tuple[int, int]], last: tuple[int, int] | None, budget: int,
    reservation: int,
) -> dict[str, Any]:
    """The RUN-15 figures of a main call, for the request actually sent."""
    found = estimate.estimate(raw, samples, last)
    return {
        "raw_estimate": raw,
        "calibrated_estimate": found.calibrated,
        "coefficient": float(found.coefficient),
        "coefficient_real": sum(real for _, real in samples),
        "coefficient_raw": sum(r for r, _ in samples),
        "samples": found.samples,
        "effective_budget": budget,
        "reservation": reservation,
    }


class Compactor:
    """Compaction for one worker pool; the summary call uses the pool's reserve/settle path.

    The thresholds are class attributes so a variant (a mutant) can change one alone.
    """

    threshold = estimate.COMPACTION_THRESHOLD  # CTX-04: 70% of the effective budget
    spacing = compaction.SUMMARY_SPACING  # CTX-05
    bypass = compaction.BYPASS_THRESHOLD  # CTX-05: 92%
    validate = staticmethod(compaction.refusal)  # CTX-06: why a candidate is refused, or None
    local = staticmethod(compaction.local)  # CTX-04: placeholders before the kept tail
    stretch = staticmethod(compaction.stretch)  # CTX-04/16: what a summary may replace
    shrink = staticmethod(compaction.shrink)  # CTX-04: the stretch cut back to the window
    memory = staticmethod(compaction.working_memory)  # CTX-06: summary text + engine's facts
    minimal = staticmethod(compaction.minimal)  # CTX-15: what no compaction can take away

    def __init__(self, workers: Workers, reserved: frozenset[str]) -> None:
        self.workers = workers
        self.reserved = reserved

    async def prepare(
        self, run_id: str, worker: str, version: AgentVersion, main: Target, budget: int,
        repair: bool,
    ) -> Ready | None:
        """Compact if the request needs it; None when the run ended (or is not ours any more).

        `repair`: the provider refused the last request with context_length_exceeded, so both
        kinds run whatever the estimate says, the spacing is skipped, and a request that cannot
        be made smaller ends the run.
        """
        runs = self.workers.runs
        session = runs.run_session(run_id)
        samples = runs.samples(session.tenant, main.set_key, estimate.CALIBRATION_WINDOW)

        def measure(messages: list[Message]) -> int:
            raw = estimate.raw_estimate(
                compaction.size(messages) + utf8_length(session.tools), len(messages))
            return estimate.estimate(raw, samples, session.last).calibrated

        before = estimate.estimate(raw_of(session), samples, session.last).calibrated
        record = {"estimate_before": before, "ratio_before": _ratio(before, budget)}
        threshold = self.threshold * budget
        if not repair and budget > 0 and before < threshold:
            return Ready(session, {"decision": "none", "reason": "below 70%", **record})
        messages: list[Message] = [json.loads(t) for t in
                                   runs.history(session.session_id, "execution")]
        if budget <= 0 or measure(self.minimal(messages, self.reserved)) >= budget:
            self._uncompactable(run_id, worker, "the system prompt, tool definitions and new "
                                "input alone reach the effective budget", before, budget)
            return None
        facts = runs.receipt_facts(session.session_id)
        reasons = ["context_length_exceeded from the provider" if repair else "at or above 70%"]
        done: list[str] = []
        current, refused = before, None
        compacted = self.local(messages, facts)
        if compacted != messages:
            after = measure(compacted)
            if not self._rewrite(run_id, worker, session, "local", messages, compacted,
                                 current, after):
                return None
            messages, current = compacted, after
            done.append("local")
            reasons.append(f"local compaction to {after}")
        else:
            reasons.append("nothing to compact locally")
        if repair or current >= threshold:
            spacing = session.calls_since_summary
            span = self.stretch(messages, self.reserved)
            spaced = spacing is not None and spacing < self.spacing
            if spaced and not repair and current < self.bypass * budget:
                reasons.append(f"summary spacing: {spacing} of {self.spacing} "
                               "main calls since the last summary")
            elif span is None:
                reasons.append("no stretch to summarize")
            else:
                if spaced:
                    reasons.append("spacing skipped: " + (
                        "repair" if repair else "at or above 92%"))
                result = await self._summarize(run_id, worker, session, version, messages,
                                               facts, span)
                if result is None:
                    return None
                if isinstance(result, str):
                    refused = result
                    reasons.append(f"summary refused: {result}")
                else:
                    after = measure(result)
                    if not self._rewrite(run_id, worker, session, "summary", messages, result,
                                         current, after):
                        return None
                    messages, current = result, after
                    done.append("summary")
                    reasons.append(f"summary to {after}")
        else:
            reasons.append("below 70% after local compaction")
        if current >= budget or (repair and not done):
            why = ("the request refused as too long cannot be made smaller" if current < budget
                   else "compaction cannot bring the request under the effective budget")
            self._uncompactable(run_id, worker, why, current, budget)
            return None
        decision = "summary_refused" if refused is not None else "+".join(done) or "none"
        return Ready(runs.run_session(run_id),
                     {"decision": decision, "reason": "; ".join(reasons), **record})

    async def _summarize(
        self, run_id: str, worker: str, session: SessionRow, version: AgentVersion,
        messages: list[Message], facts: Facts, span: tuple[int, int],
    ) -> list[Message] | str | None:
        """One summary call (CTX-04, 11, 14): on the summary channel, reserved and settled on
        the run's wallet like a main call, never a calibration sample, never resent. Returns
        the history with the stretch replaced, why it stays as it is, or None (run ended)."""
        pool = self.workers
        channel = pool.store.channel(session.tenant,
                                     version.summary_channel_id or session.channel_id)
        assert channel is not None
        target = Target.of(channel)
        window = estimate.effective_budget(channel.input_capacity, channel.input_capacity,
                                           channel.total_capacity, channel.output_capacity)

        def raw(part: list[Message]) -> int:
            request = compaction.summary_messages(part)
            return estimate.raw_estimate(compaction.size(request), len(request))

        end = self.shrink(messages, span[0], span[1], lambda part: raw(part) < window)
        if end is None:
            return self._refused(run_id, "the stretch does not fit the summary channel")
        span = (span[0], end)
        part = messages[span[0]:end]
        call_id = pool._begin(run_id, worker, session, target.reservation, raw(part),
                              target.set_key, {
                                  "purpose": "summary", "channel_id": channel.channel_id,
                                  "raw_estimate": raw(part), "reservation": target.reservation,
                                  "stretch": {"start": span[0], "end": end}})
        if call_id is None:
            return None
        items = [canonical_text(m) for m in compaction.summary_messages(part)]
        body = request_body(channel.model, channel.output_capacity, "", items)
        outcome = await pool.model.complete(body, call_id, channel.timeout_ms)
        text = pool._finish(run_id, worker, session, call_id, target.reservation, raw(part),
                            target.set_key, target.prices, outcome, purpose="summary")
        if text is None:
            return (self._refused(run_id, f"the summary call was refused ({outcome.status})")
                    if outcome.kind == "refused" else None)
        why = self.validate(text, messages, span, facts)
        if why is not None:
            return self._refused(run_id, why)
        return compaction.replace(messages, span, self.memory(text, part, facts))

    def _refused(self, run_id: str, reason: str) -> str:
        """CTX-06: the candidate is dropped and the history stays as it was."""
        with self.workers.store.transaction() as db:
            event(db, run_id, "compaction.refused", self.workers.clock.now(), reason=reason)
        return reason

    def _rewrite(
        self, run_id: str, worker: str, session: SessionRow, kind: str, before: list[Message],
        after: list[Message], estimate_before: int, estimate_after: int,
    ) -> bool:
        """CTX-07: the next generation of the execution history, with its event."""
        with self.workers.store.transaction() as db:
            if not held(db, run_id, worker):
                return False
            RunStore.rewrite_execution(db, session.session_id, [canonical_text(m) for m in after])
            event(db, run_id, "compaction.applied", self.workers.clock.now(), kind=kind,
                  messages_before=len(before), messages_after=len(after),
                  estimate_before=estimate_before, estimate_after=estimate_after)
        return True

    def _uncompactable(
        self, run_id: str, worker: str, reason: str, estimate_now: int, budget: int
    ) -> None:
        """CTX-15: the run ends before sending, with why; nothing is reserved for the call."""
        at = self.workers.clock.now()
        with self.workers.store.transaction() as db:
            if held(db, run_id, worker):
                event(db, run_id, "compaction.uncompactable", at, reason=reason,
                      estimate=estimate_now, effective_budget=budget)
                RunStore.end(db, run_id, "context_uncompactable", at, worker=worker)


def _ratio(value: int, budget: int) -> str | None:
    return compaction.fraction_text(Fraction(value, budget)) if budget > 0 else None
