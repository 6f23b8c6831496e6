"""Mutants of what compaction keeps and stores (CTX-04, CTX-07, CTX-15, CTX-16, RUN-09, RUN-11).

Each is a defect that mutation sampling of `reference/runtime/compaction.py` and
`compactor.py` found the suite letting through, rebuilt on the `Compactor` seams (`local`,
`stretch`, `shrink`, `memory`, `threshold`, `prepare`, `_rewrite`) so the reference code
stays as it is: `tests/test_mutants.py` proves `conformance/checks/test_context_kept.py` (and
`test_context_stretch.py`) catches each one.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from fractions import Fraction
from typing import Any

from fastapi import FastAPI

from arck.reference.canonical import canonical_text
from arck.reference.models import AgentVersion
from arck.reference.mutants.base import serve
from arck.reference.runtime import compaction
from arck.reference.runtime.compaction import Facts, Message
from arck.reference.runtime.compactor import Compactor, Ready, Target, request_body
from arck.reference.runtime.runstore import SessionRow, event, held
from arck.reference.runtime.worker import Workers

__all__ = [
    "answer_summarised",
    "compaction_arguments_kept",
    "current_input_summarised",
    "empty_summary_accepted",
    "facts_dropped",
    "local_compaction_not_stored",
    "local_compaction_only_reported",
    "memory_resummarised",
    "stretch_cut_one_short",
    "stretch_given_up",
    "summary_of_nothing",
    "tail_arguments_placeholdered",
    "threshold_exclusive",
    "uncompactable_late",
    "zero_budget_loops",
]


def _flipped_input(
    messages: Sequence[Message], reserved: Collection[str]
) -> tuple[int, int] | None:
    """`compaction.current_input` with `role == "user"` flipped to `!=`: the last message that
    is *not* a user's (a tool answer, mostly) is taken for the run's input."""
    asked = {c.get("id"): i for i, m in enumerate(messages) for c in compaction._calls(m)
             if (c.get("function") or {}).get("name") in reserved}
    for i in range(len(messages) - 1, 0, -1):
        m = messages[i]
        if m.get("role") != "user" and not compaction._is_memory(m):
            return i, i + 1
        if m.get("role") == "tool" and m.get("tool_call_id") in asked:
            return asked[m.get("tool_call_id")], i + 1
    return None


def _stretch(
    messages: Sequence[Message], reserved: Collection[str], *, input_of: Any = None,
    memory_alone: bool = False,
) -> tuple[int, int] | None:
    """`compaction.stretch` with its current input found by `input_of`, and (`memory_alone`)
    a stretch of the previous working memory alone allowed."""
    tail = compaction.kept_from(messages)
    unit = (input_of or compaction.current_input)(messages, reserved)
    spans = [(1, unit[0]), (unit[1], tail)] if unit is not None and unit[0] < tail else [(1, tail)]
    spans = [(a, b) for a, b in spans if b > a and (
        memory_alone or not (b - a == 1 and compaction._is_memory(messages[a])))]
    if not spans:
        return None
    return max(spans, key=lambda s: (compaction.size(messages[s[0]:s[1]]), -s[0]))


class _InputSummarised(Compactor):
    """The run's current input is looked for with a flipped role test, so a summary made after
    two tool exchanges of the run takes the input with it (CTX-04)."""

    @staticmethod
    def stretch(messages: Sequence[Message], reserved: Collection[str]) -> tuple[int, int] | None:
        return _stretch(messages, reserved, input_of=_flipped_input)


def _answer_ignored(
    messages: Sequence[Message], reserved: Collection[str]
) -> tuple[int, int] | None:
    """`compaction.current_input` that gives up on meeting the answer to a request for input
    (`return None` for its span): a run whose input answers such a request has none."""
    asked = {c.get("id") for m in messages for c in compaction._calls(m)
             if (c.get("function") or {}).get("name") in reserved}
    for i in range(len(messages) - 1, 0, -1):
        m = messages[i]
        if m.get("role") == "user" and not compaction._is_memory(m):
            return i, i + 1
        if m.get("role") == "tool" and m.get("tool_call_id") in asked:
            return None
    return None


class _AnswerSummarised(Compactor):
    """The answer to a request for input is not taken for the run's input, so a summary made
    after two tool exchanges of the run takes the request and its answer with it (CTX-04)."""

    @staticmethod
    def stretch(messages: Sequence[Message], reserved: Collection[str]) -> tuple[int, int] | None:
        return _stretch(messages, reserved, input_of=_answer_ignored)


class _FactsDropped(Compactor):
    """The working memory carries no facts of the calls it replaced (only those of a
    rolled-up working memory): their receipt ids and statuses are lost (CTX-06)."""

    @staticmethod
    def memory(summary: str, part: Sequence[Message], facts: Facts) -> Message:
        return compaction.working_memory(summary, part, {})


class _MemoryResummarised(Compactor):
    """A stretch of the previous working memory alone is summarised again (CTX-04: nothing of
    the history is condensed, and a summary call is paid for it)."""

    @staticmethod
    def stretch(messages: Sequence[Message], reserved: Collection[str]) -> tuple[int, int] | None:
        return _stretch(messages, reserved, memory_alone=True)


class _TailPlaceholdered(Compactor):
    """Local compaction runs one message too far (`i <= end`): the first message of the kept
    tail, the second-last exchange's tool call, loses its arguments (CTX-16)."""

    @staticmethod
    def local(messages: Sequence[Message], facts: Facts) -> list[Message]:
        end = compaction.kept_from(messages)
        return [compaction._local_one(m, facts) if i <= end else m
                for i, m in enumerate(messages)]


class _UncompactableLate(Compactor):
    """The floor a request can be compacted to leaves out the current input (the system
    prompt alone): an input too large on its own is found only after compaction tried, so a
    summary call is made and paid for before the run ends (CTX-15, profile: nothing sent)."""

    @staticmethod
    def minimal(messages: Sequence[Message], reserved: Collection[str]) -> list[Message]:
        return [*messages[:1]]


class _EmptySummaryAccepted(Compactor):
    """A summary with no text (whitespace) is taken: the stretch is replaced by a working
    memory that says nothing of it (profile, CTX-06: an empty candidate is refused)."""

    @staticmethod
    def validate(summary: str, messages: Sequence[Message], span: tuple[int, int],
                 facts: Facts) -> str | None:
        return compaction.refusal(summary or "-", messages, span, facts) \
            if summary.strip() else None


class _RefusedSummaryStalls(Compactor):
    """A summary call the provider refuses is taken for a run that ended: the compaction step
    stops there and the run waits, held, for its lease to lapse (CTX-06: the candidate is
    refused and the history stays as it was; RUN-11: the run never hangs)."""

    async def _summarize(self, *args: Any, **kwargs: Any) -> list[Message] | str | None:
        result = await super()._summarize(*args, **kwargs)
        if isinstance(result, str) and result.startswith("the summary call was refused"):
            return None
        return result


class _ThresholdExclusive(Compactor):
    """Compacts above 70% only, not at it: a threshold a hair over 70% (for any budget below
    10¹² tokens, exactly the estimates at 70% are left alone; CTX-04 says "at ≥ 70%")."""

    threshold = Fraction(70, 100) + Fraction(1, 10**12)


class _LocalOnlyReported(Compactor):
    """A local compaction is decided and reported (its event, the call's decision) but its
    generation is never written: the request is built from the store, whole (CTX-07)."""

    def _rewrite(
        self, run_id: str, worker: str, session: SessionRow, kind: str, before: list[Message],
        after: list[Message], estimate_before: int, estimate_after: int,
    ) -> bool:
        if kind != "local":
            return super()._rewrite(run_id, worker, session, kind, before, after,
                                    estimate_before, estimate_after)
        with self.workers.store.transaction() as db:
            if not held(db, run_id, worker):
                return False
            event(db, run_id, "compaction.applied", self.workers.clock.now(), kind=kind,
                  messages_before=len(before), messages_after=len(after),
                  estimate_before=estimate_before, estimate_after=estimate_after)
        return True


class _LocalNotStored(_LocalOnlyReported):
    """A local compaction is sent but never stored: every request swaps the records it
    compacted for their placeholders as it is built, so the requests stay consistent, while
    the execution history keeps the full records for whoever reads it or resumes (RUN-09,
    CTX-07)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # session → {canonical text of a stored record: its compacted form}
        self.swaps: dict[str, dict[str, Message]] = {}

    def _rewrite(
        self, run_id: str, worker: str, session: SessionRow, kind: str, before: list[Message],
        after: list[Message], estimate_before: int, estimate_after: int,
    ) -> bool:
        if not super()._rewrite(run_id, worker, session, kind, before, after, estimate_before,
                                estimate_after):
            return False
        if kind == "local":
            swaps = self.swaps.setdefault(session.session_id, {})
            swaps.update({canonical_text(old): new for old, new in zip(before, after, strict=True)
                          if old != new})
        return True


class _LocalNotStoredWorkers(Workers):
    compactor_class = _LocalNotStored

    def _body(self, session: SessionRow, model: str, max_tokens: int) -> bytes:
        compactor = self.compactor
        assert isinstance(compactor, _LocalNotStored)
        swaps = compactor.swaps.get(session.session_id)
        if not swaps:
            return super()._body(session, model, max_tokens)
        texts = self.runs.history(session.session_id, "execution")
        sent = [canonical_text(swaps[t]) if t in swaps else t for t in texts]
        return request_body(model, max_tokens, session.tools, sent)


class _ZeroBudget(Compactor):
    """Decides on the share of the budget as a fraction taken first: a budget of 0 divides by
    zero, the worker fails, and every takeover of the run fails again (a loop, RUN-11); a
    negative one makes any estimate "below 70%", and the request is sent (CTX-15)."""

    async def prepare(
        self, run_id: str, worker: str, version: AgentVersion, main: Target, budget: int,
        repair: bool,
    ) -> Ready | None:
        if budget <= 0 and not repair:
            session = self.workers.runs.run_session(run_id)
            raw = -(-(session.exec_bytes + len(session.tools.encode())) // 4) + \
                3 * session.exec_count
            share = Fraction(raw, budget)  # ZeroDivisionError when the budget is 0
            if share < self.threshold:
                return Ready(session, {"decision": "none", "reason": "below 70%",
                                       "estimate_before": raw, "ratio_before": str(share)})
        return await super().prepare(run_id, worker, version, main, budget, repair)


def _compacting(compactor: type[Compactor]) -> type[Workers]:
    class CompactorWorkers(Workers):
        compactor_class = compactor

    return CompactorWorkers


def current_input_summarised() -> FastAPI:
    return serve(workers_class=_compacting(_InputSummarised))


def answer_summarised() -> FastAPI:
    return serve(workers_class=_compacting(_AnswerSummarised))


def facts_dropped() -> FastAPI:
    return serve(workers_class=_compacting(_FactsDropped))


def local_compaction_not_stored() -> FastAPI:
    return serve(workers_class=_LocalNotStoredWorkers)


def local_compaction_only_reported() -> FastAPI:
    return serve(workers_class=_compacting(_LocalOnlyReported))


def tail_arguments_placeholdered() -> FastAPI:
    return serve(workers_class=_compacting(_TailPlaceholdered))


def threshold_exclusive() -> FastAPI:
    return serve(workers_class=_compacting(_ThresholdExclusive))


def memory_resummarised() -> FastAPI:
    return serve(workers_class=_compacting(_MemoryResummarised))


def zero_budget_loops() -> FastAPI:
    return serve(workers_class=_compacting(_ZeroBudget))


def uncompactable_late() -> FastAPI:
    return serve(workers_class=_compacting(_UncompactableLate))


def refused_summary_stalls() -> FastAPI:
    return serve(workers_class=_compacting(_RefusedSummaryStalls))


def empty_summary_accepted() -> FastAPI:
    return serve(workers_class=_compacting(_EmptySummaryAccepted))


def _one_short(messages: Sequence[Message], start: int, end: int, fits: Any) -> int | None:
    cut = compaction.shrink(messages, start, end, fits)
    return cut - 1 if cut is not None and start < cut - 1 and cut < end else cut


class _OneShortCompactor(Compactor):
    """A stretch cut back to the summary window loses one more message than it must."""

    shrink = staticmethod(_one_short)


def stretch_cut_one_short() -> FastAPI:
    return serve(workers_class=_compacting(_OneShortCompactor))


def _whole_or_nothing(messages: Sequence[Message], start: int, end: int,
                      fits: Any) -> int | None:
    return end if fits(list(messages[start:end])) else None


class _GivenUpCompactor(Compactor):
    """A stretch too long for the summary window is not cut back: no summary at all."""

    shrink = staticmethod(_whole_or_nothing)


def stretch_given_up() -> FastAPI:
    return serve(workers_class=_compacting(_GivenUpCompactor))


def _results_only(messages: Sequence[Message], facts: Facts) -> list[Message]:
    compacted = compaction.local(messages, facts)
    return [old if old.get("role") == "assistant" else new
            for old, new in zip(messages, compacted, strict=True)]


class _ResultsOnlyCompactor(Compactor):
    """Local compaction replaces old tool results but keeps every call's long arguments."""

    local = staticmethod(_results_only)


def compaction_arguments_kept() -> FastAPI:
    return serve(workers_class=_compacting(_ResultsOnlyCompactor))


def _empty_when_nothing_fits(messages: Sequence[Message], start: int, end: int,
                             fits: Any) -> int | None:
    cut = compaction.shrink(messages, start, end, fits)
    return start if cut is None else cut


class _SummaryOfNothingCompactor(Compactor):
    """When not even the stretch's first message fits the summary window, the summary call
    is made anyway, of an empty stretch."""

    shrink = staticmethod(_empty_when_nothing_fits)


def summary_of_nothing() -> FastAPI:
    return serve(workers_class=_compacting(_SummaryOfNothingCompactor))
