"""How a check is declared: a plain function raising CheckFailure, tagged with requirement IDs.

`property_check` wraps it in a hypothesis test over a strategy of JSON-able cases; `check`
runs it once; `stateful_check` runs a hypothesis state machine whose steps go through `step`,
the function it decorates replaying a stored program of such steps. All replay a stored case
instead when pytest is given `--arck-case FILE` naming that check, so a failure found once
reruns exactly, against any target (H-02); `arck_replay` on the test does the same outside
pytest's item protocol (baseline entries are judged so).

Each example starts with the target's recent exchanges cleared; a failure takes them along,
and is keyed by its requirement IDs and the line of the check's module that raised it, so
hypothesis shrinks and reports every distinct failure, not only the first.

NotApplicable or NotTestable raised in an example is not a failure to shrink: it ends the
whole check at once with that verdict (hypothesis would otherwise shrink it, look for more,
and report a group of "distinct failures" that hides why). Only a setup failure after a real
failure was found (a shrink candidate that could not be set up, say) drops that one input,
so the failure stands. A case that applies only under some profile is left out of the
search by `cases` given as a function of the context, never raised per case.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NoReturn, TypeVar, cast

import pytest
from hypothesis import Phase, example, given, reject, seed, settings
from hypothesis.errors import FlakyStrategyDefinition
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test
from hypothesis.strategies import SearchStrategy

from arck.conformance.context import CheckContext
from arck.conformance.errors import (
    CheckFailure,
    CheckTimeout,
    NotApplicable,
    NotTestable,
    keyed,
    with_request,
)
from arck.conformance.outcomes import check_failures

CaseFn = Callable[[CheckContext, Any], None]
PlainFn = Callable[[CheckContext], None]
Cases = SearchStrategy[Any] | Callable[[CheckContext], SearchStrategy[Any]]
F = TypeVar("F", bound=Callable[..., Any])


class _Verdict(BaseException):
    """A NotApplicable or NotTestable raised in one example, carried out of hypothesis.

    Hypothesis counts every Exception as a failing example; a BaseException other than
    SystemExit and GeneratorExit it lets through untouched, with no shrinking and no search
    for more (`failure_exceptions_to_catch` in hypothesis.core). The check's test function
    unwraps it (`_searching`).
    """

    def __init__(self, verdict: NotApplicable | NotTestable) -> None:
        super().__init__(str(verdict))
        self.verdict = verdict


@dataclass
class _Search:
    """One hypothesis search of a check: whether it has found a real failure yet, and the
    wall-clock moment after which it starts no new input (None: no bound)."""

    failed: bool = False
    deadline: float | None = None


class _OutOfTime(BaseException):
    """The search's time is spent with no failure found: it ends, and the check passes on
    the inputs it tried (reported with their count). A BaseException, so hypothesis neither
    counts nor shrinks it (see _Verdict)."""


def _in_time(ctx: CheckContext) -> None:
    """Before each new input: stop the search once its time is spent, unless it has found a
    failure (then the input is part of shrinking it, which the check's own timeout bounds)
    or has not tried one input yet."""
    search = _SEARCH.get()
    if search is None or search.failed or search.deadline is None or not ctx.examples:
        return
    if time.monotonic() > search.deadline:
        ctx.stopped_by_time = True
        raise _OutOfTime


_SEARCH: ContextVar[_Search | None] = ContextVar("arck_search", default=None)


def _carry(exc: NotApplicable | NotTestable) -> NoReturn:
    """Inside a search, end the check with `exc` at once; a setup failure after a failure
    was found only drops this input (the failure is the verdict). Outside, raise `exc`."""
    search = _SEARCH.get()
    if search is None:
        raise exc
    if isinstance(exc, NotTestable) and search.failed:
        reject()
    raise _Verdict(exc)


def _searching(search: Callable[[], None], ctx: CheckContext) -> None:
    """Run a hypothesis search; a verdict carried out of it ends the check as that verdict,
    unless real failures were found beside it (in explicit examples), which then stand. A
    search whose time ran out before it found anything passes on what it tried."""
    ctx.stopped_by_time = False
    deadline = None if ctx.search_seconds is None else time.monotonic() + ctx.search_seconds
    search_state = _Search(deadline=deadline)
    token = _SEARCH.set(search_state)
    try:
        search()
    except _OutOfTime:
        return
    except FlakyStrategyDefinition:
        # A state machine's search stopped at its time budget: hypothesis sees the program
        # cut short draw otherwise than the same choices did before, and calls its data
        # generation flaky. Every program tried before it passed: pass on what was tried.
        if ctx.stopped_by_time and not search_state.failed:
            return
        raise
    except _Verdict as carried:
        raise carried.verdict from None
    except BaseExceptionGroup as group:
        spent, group_rest = group.split(_OutOfTime)
        if spent is not None and group_rest is None:
            return
        verdicts, rest = group.split(_Verdict)
        if verdicts is None:
            raise
        if rest is not None and check_failures(rest):
            raise rest from None
        first: BaseException = verdicts
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        assert isinstance(first, _Verdict)
        raise first.verdict from None
    finally:
        _SEARCH.reset(token)


def _tag(ids: tuple[str, ...], fn: Callable[..., Any], test: F) -> F:
    test.__name__ = fn.__name__
    test.__qualname__ = fn.__qualname__
    test.__doc__ = fn.__doc__
    test.__module__ = fn.__module__
    marked: F = pytest.mark.requirement(*ids)(test)
    return marked


def property_check(
    *ids: str, cases: Cases, examples: tuple[Any, ...] = (),
    cap: int | None = None,
) -> Callable[[CaseFn], Any]:
    """A check run over many generated cases; the shrunk failing case is kept as its example.

    `cases` is a strategy, or a function of the context giving one: cases that apply only
    under the reference profile are left out of the search elsewhere (raising NotApplicable
    for one case would end the whole check). `examples` are cases tried on every run
    whatever the seed: the classic defects a check exists for, so it bites even when the
    random search is short. `cap` bounds the cases generated whatever the profile asks, for
    a check whose cases are few and each costly (a kill and restart, a whole conversation):
    more would repeat the same ground.
    """

    def decorate(fn: CaseFn) -> Any:
        def test(arck: CheckContext, arck_replay_case: Any) -> None:
            if arck_replay_case is not None:
                _run(fn, arck, arck_replay_case, arck_replay_case)
                return
            arck.examples = 0
            strategy = cases if isinstance(cases, SearchStrategy) else cases(arck)

            @given(case=strategy)
            def explore(case: Any) -> None:
                _in_time(arck)
                arck.examples = (arck.examples or 0) + 1
                _run(fn, arck, case, case)

            for case in examples:
                explore = example(case=case)(explore)
            chosen = arck.settings
            if cap is not None and chosen.max_examples > cap:
                chosen = settings(chosen, max_examples=cap)
            explore = chosen(explore)
            if arck.seed is not None:
                explore = seed(arck.seed)(explore)
            _searching(explore, arck)

        test.arck_replay = lambda ctx, case: _run(fn, ctx, case, case)  # type: ignore[attr-defined]
        return _tag(ids, fn, test)

    return decorate


def check(*ids: str) -> Callable[[PlainFn], Any]:
    """A check with one fixed scenario."""

    def decorate(fn: PlainFn) -> Any:
        def test(arck: CheckContext) -> None:
            _run(fn, arck, None)

        # A one-shot check is deterministic: replaying its case is running it again.
        test.arck_replay = lambda ctx, case: _run(fn, ctx, None)  # type: ignore[attr-defined]
        return _tag(ids, fn, test)

    return decorate


def stateful_check(
    *ids: str,
    machine: Callable[[CheckContext], RuleBasedStateMachine],
    steps: int = 12,
    scenario: Callable[[Any, CheckFailure], str | None] | None = None,
    cap: int | None = None,
) -> Callable[[CaseFn], Any]:
    """A check run as a hypothesis state machine (`machine(ctx)`, at most `steps` steps;
    at most `cap` programs whatever the profile asks, as `property_check`'s `cap`).

    The machine's rules and invariants go through `step`, so each failure is keyed by its IDs
    and line and carries the program so far (a JSON-able case) as its example; hypothesis
    shrinks the program. The decorated function replays such a program (`arck replay`, a
    baseline). `scenario(case, failure)`, if given, turns a final failure's program into a
    scenario file's text, kept on the failure as `scenario` (the session writes it beside
    the case file).
    """

    def decorate(fn: CaseFn) -> Any:
        def replay(ctx: CheckContext, case: Any) -> None:
            with _scenarios(scenario):
                _run(fn, ctx, case, case)

        def test(arck: CheckContext, arck_replay_case: Any) -> None:
            if arck_replay_case is not None:
                replay(arck, arck_replay_case)
                return
            arck.examples = 0

            def factory() -> RuleBasedStateMachine:
                _in_time(arck)
                arck.examples = (arck.examples or 0) + 1
                recent = getattr(arck.target, "recent", None)
                if recent is not None:
                    recent.clear()
                try:
                    return machine(arck)
                except (NotApplicable, NotTestable) as exc:
                    _carry(exc)

            if arck.seed is not None:
                factory = seed(arck.seed)(factory)
            # The explain phase reruns every step of the shrunk program many times over to
            # annotate it: the program is the case file and the scenario already.
            phases = [p for p in arck.settings.phases if p is not Phase.explain]
            programs = arck.settings.max_examples if cap is None else \
                min(cap, arck.settings.max_examples)
            with _scenarios(scenario):
                chosen = settings(arck.settings, stateful_step_count=steps, phases=phases,
                                  max_examples=programs)
                _searching(lambda: run_state_machine_as_test(cast(Any, factory),
                                                             settings=chosen), arck)

        test.arck_replay = replay  # type: ignore[attr-defined]
        return _tag(ids, fn, test)

    return decorate


def step(fn: Callable[..., None], ctx: CheckContext, program: Any, *args: Any) -> None:
    """One step of a state machine: `fn(ctx, *args)`, a failure keyed by the line of `fn`'s
    module and carrying `program` (the steps so far) as its example. The exchange log is
    the whole example's, cleared when the machine was made."""
    _run(fn, ctx, program, *args, clear=False)


class _scenarios:
    """Attaches `scenario(example, failure)` to every CheckFailure leaving the block."""

    def __init__(self, build: Callable[[Any, CheckFailure], str | None] | None) -> None:
        self.build = build

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if self.build is None or exc is None:
            return
        for failure in check_failures(exc):
            if getattr(failure, "scenario", None) is None and failure.example is not None:
                failure.scenario = self.build(  # type: ignore[attr-defined]
                    failure.example, failure)


def _run(
    fn: Callable[..., None], ctx: CheckContext, case: Any, *args: Any, clear: bool = True
) -> None:
    """One example: `fn(ctx, *args)` on a fresh exchange log, failing as its keyed failure;
    a verdict (not applicable, not testable) ends the search; any other error keeps the
    last request sent before it, for the report."""
    recent = getattr(ctx.target, "recent", None)
    if recent is not None and clear:
        recent.clear()
    try:
        fn(ctx, *args)
    except CheckFailure as caught:
        failure = caught
    except (NotApplicable, NotTestable) as verdict:
        _carry(verdict)
    except (Exception, CheckTimeout) as error:
        if recent:
            with_request(error, recent[-1].reproduction())
        raise
    else:
        return
    search = _SEARCH.get()
    if search is not None:
        search.failed = True
    if failure.example is None:
        failure.example = case
    failure.exchanges = [e.reproduction() for e in recent or ()]
    tb = failure.__traceback__
    home: str = getattr(getattr(fn, "__code__", None), "co_filename", "")
    line = _last_line_in(tb, home)
    if line is None:
        raise failure
    # Raised outside the except block: no implicit __context__, which hypothesis would count
    # as part of the failure's identity (a JSON error inside the target's answer, say).
    raise keyed(failure, home, line).with_traceback(tb.tb_next if tb else None)


def _last_line_in(tb: TracebackType | None, filename: str) -> int | None:
    """The line of the innermost frame of `tb` in `filename`: where the check raised or called
    `expect` (read from the failure's own traceback, not the live stack)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def expect(
    condition: bool,
    requirement: str | tuple[str, ...],
    expected: str,
    seen: Callable[[], str] | str,
    hint: str = "",
) -> None:
    """Raise a CheckFailure unless `condition`; `seen` may be lazy to keep passing checks cheap."""
    if not condition:
        raise CheckFailure(requirement, expected, seen() if callable(seen) else seen, hint=hint)


__all__ = ["check", "expect", "property_check", "stateful_check", "step"]
