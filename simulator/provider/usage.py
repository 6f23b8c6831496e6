"""The `usage` member: the provider's true counts, and what a drift fault reports instead."""

from __future__ import annotations

from typing import Any

from arck.simulator.provider.script import UsageDrift, UsageReported

__all__ = ["drifted", "reported_as", "usage"]


def usage(prompt: int, completion: int, cached: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def drifted(true: dict[str, Any], drift: UsageDrift) -> dict[str, Any]:
    """prompt_tokens = round(true × factor) + offset (ties to even, never below 0);
    cached tokens never above it; total = prompt + completion."""
    prompt = max(0, round(true["prompt_tokens"] * drift.factor) + drift.offset)
    cached = min(true["prompt_tokens_details"]["cached_tokens"], prompt)
    return usage(prompt, true["completion_tokens"], cached)


def reported_as(true: dict[str, Any], fault: UsageReported) -> dict[str, Any]:
    """The true usage with each figure the fault names replaced verbatim."""
    given = fault.model_fields_set
    shown = {**true, "prompt_tokens_details": dict(true["prompt_tokens_details"])}
    for name in ("prompt_tokens", "completion_tokens"):
        if name in given:
            shown[name] = getattr(fault, name)
    if "cached_tokens" in given:
        shown["prompt_tokens_details"]["cached_tokens"] = fault.cached_tokens
    prompt, completion = shown["prompt_tokens"], shown["completion_tokens"]
    both = all(type(v) is int for v in (prompt, completion))
    shown["total_tokens"] = prompt + completion if both else true["total_tokens"]
    return shown
