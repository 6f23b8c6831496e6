"""How a check is declared: a plain function raising CheckFailure, tagged with requirement IDs.

`property_check` wraps it in a hypothesis test over a strategy of JSON-able cases; `check`
runs it once. Both replay a stored case instead when pytest is given `--arck-case FILE` naming
that check, so a failure found once reruns exactly, against any target (H-02); `arck_replay`
on the test does the same outside pytest's item protocol (baseline entries are judged so).

Each example starts with the target's recent exchanges cleared; a failure takes them along,
and is keyed by its requirement IDs and the line of the check's module that raised it, so
hypothesis shrinks and reports every distinct failure, not only the first.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

import pytest
from hypothesis import example, given, seed
from hypothesis.strategies import SearchStrategy

from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure, keyed

CaseFn = Callable[[CheckContext, Any], None]
PlainFn = Callable[[CheckContext], None]
F = TypeVar("F", bound=Callable[..., Any])


def _tag(ids: tuple[str, ...], fn: Callable[..., Any], test: F) -> F:
    test.__name__ = fn.__name__
    test.__qualname__ = fn.__qualname__
    test.__doc__ = fn.__doc__
    test.__module__ = fn.__module__
    marked: F = pytest.mark.requirement(*ids)(test)
    return marked


def property_check(
    *ids: str, cases: SearchStrategy[Any], examples: tuple[Any, ...] = ()
) -> Callable[[CaseFn], Any]:
    """A check run over many generated cases; the shrunk failing case is kept as its example.

    `examples` are cases tried on every run whatever the seed: the classic defects a check
    exists for, so it bites even when the random search is short.
    """

    def decorate(fn: CaseFn) -> Any:
        def test(arck: CheckContext, arck_replay_case: Any) -> None:
            if arck_replay_case is not None:
                _run(fn, arck, arck_replay_case, arck_replay_case)
                return
            arck.examples = 0

            @given(case=cases)
            def explore(case: Any) -> None:
                arck.examples = (arck.examples or 0) + 1
                _run(fn, arck, case, case)

            for case in examples:
                explore = example(case=case)(explore)
            explore = arck.settings(explore)
            if arck.seed is not None:
                explore = seed(arck.seed)(explore)
            explore()

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


def _run(fn: Callable[..., None], ctx: CheckContext, case: Any, *args: Any) -> None:
    """One example: `fn(ctx, *args)` on a fresh exchange log, failing as its keyed failure."""
    recent = getattr(ctx.target, "recent", None)
    if recent is not None:
        recent.clear()
    try:
        fn(ctx, *args)
    except CheckFailure as caught:
        failure = caught
    else:
        return
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


__all__ = ["check", "expect", "property_check"]
