"""How a check is declared: a plain function raising CheckFailure, tagged with requirement IDs.

`property_check` wraps it in a hypothesis test over a strategy of JSON-able cases; `check`
runs it once. Both replay a stored case instead when pytest is given `--arck-case FILE` naming
that check, so a failure found once reruns exactly, against any target (H-02); `arck_replay`
on the test does the same outside pytest's item protocol (baseline entries are judged so).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from hypothesis import example, given, seed
from hypothesis.strategies import SearchStrategy

from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure

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
                _run(fn, arck, arck_replay_case)
                return
            arck.examples = 0

            @given(case=cases)
            def explore(case: Any) -> None:
                arck.examples = (arck.examples or 0) + 1
                _run(fn, arck, case)

            for case in examples:
                explore = example(case=case)(explore)
            explore = arck.settings(explore)
            if arck.seed is not None:
                explore = seed(arck.seed)(explore)
            explore()

        test.arck_replay = lambda ctx, case: _run(fn, ctx, case)  # type: ignore[attr-defined]
        return _tag(ids, fn, test)

    return decorate


def check(*ids: str) -> Callable[[PlainFn], Any]:
    """A check with one fixed scenario."""

    def decorate(fn: PlainFn) -> Any:
        def test(arck: CheckContext) -> None:
            fn(arck)

        # A one-shot check is deterministic: replaying its case is running it again.
        test.arck_replay = lambda ctx, case: fn(ctx)  # type: ignore[attr-defined]
        return _tag(ids, fn, test)

    return decorate


def _run(fn: CaseFn, ctx: CheckContext, case: Any) -> None:
    try:
        fn(ctx, case)
    except CheckFailure as failure:
        if failure.example is None:
            failure.example = case
        raise


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
