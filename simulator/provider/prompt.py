"""A request's prompt as token segments: what `prompt_tokens` counts and the cache compares.

Segment 0 is the request's frame and its tool definitions; then one segment per message.
Each segment ends with a marker token no text produces, so no segment is a proper prefix of
another and the prompt cache can match whole segments before comparing tokens.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from arck.simulator.provider import tokenizer

__all__ = ["MESSAGE_OVERHEAD", "REQUEST_OVERHEAD", "Segment", "canonical", "segments"]

Segment = tuple[str, ...]
REQUEST_OVERHEAD = 3  # <|request|> <|tools|> … <|messages|>
MESSAGE_OVERHEAD = 3  # <|start|> <|role:ROLE|> … <|end|>


def canonical(value: Any) -> str:
    """The JSON spelling tokens are counted from: sorted keys, no spaces, UTF-8 as is."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _frame(tools: Sequence[Any]) -> Segment:
    body = tokenizer.tokens(canonical(list(tools))) if tools else ()
    return ("<|request|>", "<|tools|>", *body, "<|messages|>")


def _content(content: Any) -> Sequence[str]:
    if content is None:
        return ()
    if isinstance(content, str):
        return tokenizer.tokens(content)
    found: list[str] = []
    for part in content:
        text = part.get("text") if part.get("type") == "text" else None
        found += tokenizer.tokens(text if isinstance(text, str) else canonical(part))
    return found


def _message(message: Mapping[str, Any]) -> Segment:
    rest = {k: v for k, v in message.items() if k not in ("role", "content")}
    extra = tokenizer.tokens(canonical(rest)) if rest else ()
    role = f"<|role:{message['role']}|>"
    return ("<|start|>", role, *_content(message.get("content")), *extra, "<|end|>")


def segments(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any]) -> list[Segment]:
    """The prompt of a validated request; `prompt_tokens` is the sum of the lengths."""
    return [_frame(tools), *(_message(m) for m in messages)]
