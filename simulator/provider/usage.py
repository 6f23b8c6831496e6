"""The `usage` member: the provider's true counts, and what a drift fault reports instead."""

from __future__ import annotations

from typing import Any

from arck.simulator.provider.script import UsageDrift

__all__ = ["drifted", "usage"]


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
