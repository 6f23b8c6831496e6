"""Shared pieces for the provider tests: conversations and clients."""

from __future__ import annotations

from typing import Any

import httpx
import openai

from arck.simulator.clock import DEFAULT_START, VirtualClock
from arck.simulator.provider import SimulatedProvider, script_tag

BASE = "http://provider.arck.invalid/v1"
START = DEFAULT_START


def conversation(script: str | None, *turns: str) -> list[dict[str, Any]]:
    """A system prompt carrying the script's tag (or none), then user turns."""
    system = "You are a careful agent." + (f" {script_tag(script)}" if script else "")
    return [{"role": "system", "content": system}, *({"role": "user", "content": t} for t in turns)]


def provider(**options: Any) -> SimulatedProvider:
    return SimulatedProvider(clock=VirtualClock(START), **options)


def async_openai(p: SimulatedProvider) -> openai.AsyncOpenAI:
    """The official client on the in-process app; no retries, so each call is one request."""
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=p.app))
    # openai 3 is typed for its own httpx2 clients and takes httpx ones at run time.
    return openai.AsyncOpenAI(
        base_url=BASE, api_key="test", max_retries=0, http_client=http  # type: ignore[arg-type]
    )

