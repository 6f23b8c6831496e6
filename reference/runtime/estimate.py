"""Token estimation, calibration and the effective budget (CTX-01, CTX-08..10, CTX-13, CTX-16).

Pure arithmetic over integers and exact fractions, so a check can recompute every figure the
run's events report and compare them for equality, not within a tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

__all__ = [
    "CALIBRATION_WINDOW",
    "COMPACTION_THRESHOLD",
    "SAFETY_MARGIN",
    "Estimate",
    "coefficient",
    "effective_budget",
    "estimate",
    "raw_estimate",
]

CALIBRATION_WINDOW = 8  # CTX-16: the last 8 samples of the current set
SAFETY_MARGIN = 2_000  # CTX-01
COMPACTION_THRESHOLD = Fraction(70, 100)  # CTX-04
PER_MESSAGE = 3


def raw_estimate(request_bytes: int, messages: int) -> int:
    """CTX-13: ceil(UTF-8 bytes of the canonical messages and tools / 4) + 3 per message."""
    return -(-request_bytes // 4) + PER_MESSAGE * messages


def coefficient(samples: Sequence[tuple[int, int]]) -> Fraction:
    """CTX-16: Σ real / Σ raw over the last samples given as (raw, real); 1 with none."""
    raw = sum(r for r, _ in samples)
    return Fraction(sum(real for _, real in samples), raw) if raw > 0 else Fraction(1)


@dataclass(frozen=True)
class Estimate:
    raw: int
    calibrated: int
    coefficient: Fraction
    samples: int


def estimate(
    raw: int, samples: Sequence[tuple[int, int]], last: tuple[int, int] | None
) -> Estimate:
    """CTX-08/09: last real + c × (raw − raw of last), rounded up; raw with no sample.

    `last` is (raw, real prompt_tokens) of the conversation's previous trusted call; without
    one (a new session on a calibrated channel) the estimate is ceil(c × raw).
    """
    c = coefficient(samples)
    if not samples:
        return Estimate(raw, raw, c, 0)
    if last is None:
        return Estimate(raw, math.ceil(c * raw), c, len(samples))
    last_raw, last_real = last
    return Estimate(raw, last_real + math.ceil(c * (raw - last_raw)), c, len(samples))


def effective_budget(
    max_context_tokens: int, input_capacity: int, total_capacity: int, output_reservation: int
) -> int:
    """CTX-01: the smallest window less this call's output reservation, less the margin."""
    window = min(max_context_tokens, input_capacity, total_capacity - output_reservation)
    return window - SAFETY_MARGIN
