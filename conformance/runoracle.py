"""arck's own arithmetic of runs, from the requirement text (CTX, BIL), never from an engine.

Checks feed it what the provider answered (its usage) and what a target reports (RUN-15
figures) and compare. Core rules come with the freedom the protocol leaves (a rounding, a
coefficient other than the profile's); `profile` functions are the reference profile's exact
choices (CTX-16, BIL-01/05 in docs/runs.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

__all__ = [
    "DEFAULT_WINDOW",
    "MILLION",
    "SAFETY_MARGIN",
    "calibrated",
    "coefficient",
    "cost",
    "effective_budget",
    "profile_charge",
    "profile_reservation",
    "usage_figures",
]

DEFAULT_WINDOW = 256_000  # RUN-05
SAFETY_MARGIN = 2_000  # CTX-01
MILLION = 1_000_000
WINDOW = 8  # CTX-16: samples in the coefficient


def effective_budget(
    max_context_tokens: int | None, input_capacity: int, total_capacity: int, output: int
) -> int:
    """CTX-01: the smallest window, less this call's output reservation, less the margin."""
    window = DEFAULT_WINDOW if max_context_tokens is None else max_context_tokens
    return min(window, input_capacity, total_capacity - output) - SAFETY_MARGIN


def usage_figures(usage: Any) -> tuple[int, int, int]:
    """(prompt, cached, completion) of a usage object as the provider reported it."""
    if not isinstance(usage, dict):
        return 0, 0, 0
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens", 0) if isinstance(details, dict) else 0
    return int(usage.get("prompt_tokens", 0)), int(cached or 0), \
        int(usage.get("completion_tokens", 0))


def cost(usage: Any, input_price: int, cached_price: int, output_price: int) -> Fraction:
    """BIL-04: reported usage × price, exactly, in micro-units (prices per million tokens)."""
    prompt, cached, completion = usage_figures(usage)
    return Fraction((prompt - cached) * input_price + cached * cached_price
                    + completion * output_price, MILLION)


def profile_charge(usage: Any, input_price: int, cached_price: int, output_price: int) -> int:
    """BIL-05 in the profile: each call's cost rounded up to a whole micro-unit."""
    return math.ceil(cost(usage, input_price, cached_price, output_price))


def profile_reservation(
    input_capacity: int, output_capacity: int, input_price: int, output_price: int
) -> int:
    """BIL-01 in the profile: the channel's verified capacity × price, rounded up."""
    return math.ceil(Fraction(input_capacity * input_price + output_capacity * output_price,
                              MILLION))


def coefficient(samples: Sequence[tuple[int, int]]) -> Fraction:
    """CTX-16: Σ real / Σ raw over the last 8 (raw, real) samples; 1 with none."""
    last = list(samples)[-WINDOW:]
    raw = sum(r for r, _ in last)
    return Fraction(sum(real for _, real in last), raw) if raw else Fraction(1)


def calibrated(raw: int, c: Fraction, last: tuple[int, int] | None) -> Fraction:
    """CTX-08: last real + c × (raw − last raw); c × raw with no earlier call (unrounded)."""
    if last is None:
        return c * raw
    last_raw, last_real = last
    return last_real + c * (raw - last_raw)
