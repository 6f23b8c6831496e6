"""Reservation and charge arithmetic in integer micro-units (BIL-01, BIL-04, BIL-05).

Prices are micro-units per million tokens; every amount rounds up to a whole micro-unit once,
over the whole call, so a charge is exactly reproducible from the reported usage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["PER", "Prices", "charge", "count", "reservation", "usage_figures"]

PER = 1_000_000


@dataclass(frozen=True)
class Prices:
    input: int
    cached_input: int
    output: int


def _ceil_div(numerator: int) -> int:
    return -(-numerator // PER)


def reservation(prices: Prices, input_capacity: int, output_capacity: int) -> int:
    """BIL-01: the channel's verified capacities × price, never the token estimate."""
    return _ceil_div(input_capacity * prices.input + output_capacity * prices.output)


def charge(prices: Prices, prompt: int, cached: int, completion: int) -> int:
    """BIL-04: reported usage × price; cached prompt tokens at the cached price."""
    cached = max(0, min(cached, prompt))
    return _ceil_div(
        (prompt - cached) * prices.input + cached * prices.cached_input + completion * prices.output
    )


def count(value: Any) -> int | None:
    """A reported token count, if it is one: a non-negative JSON integer (not a boolean,
    which Python counts as an int, nor a float or a string)."""
    return value if type(value) is int and value >= 0 else None


def usage_figures(usage: dict[str, Any]) -> tuple[int, int, int]:
    """(prompt, completion, cached) tokens a provider reported; a figure missing or not a
    non-negative integer counts 0."""
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") if isinstance(details, dict) else 0
    return (count(usage.get("prompt_tokens")) or 0, count(usage.get("completion_tokens")) or 0,
            count(cached) or 0)
