"""arck's own oracle of pacing (CAP-08): the core bound every counter keeps, and the reference
profile's exact sliding window (docs/capabilities.md, "Pacing"). Times are integer
milliseconds of the target's clock."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

__all__ = ["over_core_bound", "retry_after_ms", "room"]


def over_core_bound(
    times: Sequence[int], count: int, window: int
) -> tuple[int, int, int] | None:
    """The first closed interval [t, t + k × window] (k ≥ 1, t a dispatch) holding more than
    (k + 1) × count dispatches, as (t, k, dispatches in it); None when every one keeps the
    bound. Intervals starting at a dispatch are enough: sliding one to its first dispatch
    loses none of them."""
    ordered = sorted(times)
    if not ordered:
        return None
    span = ordered[-1] - ordered[0]
    for i, start in enumerate(ordered):
        for k in range(1, span // window + 2):
            inside = bisect_right(ordered, start + k * window) - i
            if inside > (k + 1) * count:
                return start, k, inside
    return None


def room(dispatched: Sequence[int], at: int, count: int, window: int) -> int:
    """Profile: dispatches the sliding window (at − window, at] still admits at `at`."""
    ordered = sorted(dispatched)
    inside = len(ordered) - bisect_right(ordered, at - window)
    return max(0, count - inside)


def retry_after_ms(dispatched: Sequence[int], at: int, count: int, window: int) -> int:
    """Profile: when a full window has room again, counted from `at`: once the oldest
    dispatch that keeps it full has left it (never less than 1 ms)."""
    ordered = sorted(dispatched)
    inside = ordered[bisect_left(ordered, at - window + 1):]
    if len(inside) < count:
        return 0
    return max(1, inside[len(inside) - count] + window - at)
