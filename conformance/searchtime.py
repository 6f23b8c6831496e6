"""How long a check keeps looking for further distinct failures after its first one.

Hypothesis goes on generating after the first failure, to report every distinct one, but
stops 10 seconds after it found the first, a figure written into its engine
(`ConjectureRunner.should_generate_more`), not a setting. On a slow live service 10 s may
be two inputs; on a fast one it may be wasted. arck makes it a setting
(`arck run --more-failures-seconds`) by shifting the time the engine reads for the first
failure: with limit L, the engine's `now - first > 10` holds exactly when the real
`now - first > L`. The shift is a data descriptor on that one attribute, installed once;
`tests/conformance/test_searchtime.py` pins the behaviour, so a hypothesis release that
renames the attribute fails our tests instead of silently ignoring the setting.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis.internal.conjecture import engine

__all__ = ["BUILT_IN_SECONDS", "more_failures_seconds", "set_more_failures_seconds"]

BUILT_IN_SECONDS = 10.0  # what hypothesis's engine compares with
_ATTRIBUTE = "first_bug_found_time"
_limit = BUILT_IN_SECONDS


def more_failures_seconds() -> float:
    return _limit


def set_more_failures_seconds(seconds: float) -> None:
    """After a check's first failure, look `seconds` more for others (0: stop there)."""
    global _limit
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"seconds must be a finite number >= 0, not {seconds!r}")
    _limit = float(seconds)


class _Shifted:
    """`first_bug_found_time` as the engine reads it: the real time, moved by the setting."""

    def __get__(self, runner: Any, owner: type | None = None) -> Any:
        if runner is None:
            return self
        real = runner.__dict__.get("_arck_" + _ATTRIBUTE, math.inf)
        return real + _limit - BUILT_IN_SECONDS

    def __set__(self, runner: Any, value: float) -> None:
        runner.__dict__["_arck_" + _ATTRIBUTE] = value


if not hasattr(engine.ConjectureRunner, "should_generate_more"):  # pragma: no cover
    raise ImportError("hypothesis's engine changed: arck's --more-failures-seconds needs "
                      "ConjectureRunner.should_generate_more (conformance/searchtime.py)")
if not isinstance(engine.ConjectureRunner.__dict__.get(_ATTRIBUTE), _Shifted):
    setattr(engine.ConjectureRunner, _ATTRIBUTE, _Shifted())
