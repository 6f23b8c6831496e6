"""The assistant message of a step, its completion tokens, and the cut at max_tokens.

Requests for user input and for approval travel as calls to reserved functions, since the
OpenAI shape has no other way for a model to ask (docs/provider.md).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from arck.simulator.provider import tokenizer
from arck.simulator.provider.script import REQUEST_APPROVAL, REQUEST_INPUT, Step

__all__ = ["CALL_OVERHEAD", "Answer", "build", "default_text"]

CALL_OVERHEAD = 3
_WORDS = (
    "the", "agent", "checked", "each", "result", "and", "found", "answer", "ready", "to",
    "send", "nothing", "else", "was", "needed", "for", "this", "turn", "so", "it",
    "summarised", "what", "saw", "in", "plain", "words", "12", "steps", "東京", "café",
)


@dataclass(frozen=True)
class Answer:
    message: dict[str, Any]
    finish_reason: str
    completion_tokens: int


@dataclass(frozen=True)
class _Call:
    id: str
    name: str
    arguments: str

    def cost(self) -> int:
        return CALL_OVERHEAD + tokenizer.count(self.name) + tokenizer.count(self.arguments)


def default_text(seed: int, conversation: str, index: int) -> str:
    """The answer to a call with no step: 4 to 12 words, drawn from the seed alone."""
    draw = random.Random(f"arck-provider:{seed}:{conversation}:{index}")
    return " ".join(draw.choice(_WORDS) for _ in range(draw.randint(4, 12))) + "."


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _calls(step: Step | None, id_prefix: str) -> list[_Call]:
    if step is None:
        return []
    asked: list[tuple[str | None, str, str]]
    if step.request_input is not None:
        asked = [(None, REQUEST_INPUT, _compact({"question": step.request_input}))]
    elif step.request_approval is not None:
        asked = [(None, REQUEST_APPROVAL, _compact({"request": step.request_approval}))]
    else:
        asked = [(c.id, c.name, c.arguments_json()) for c in step.tool_calls or ()]
    return [
        _Call(call_id or f"{id_prefix}_{index}", name, arguments)
        for index, (call_id, name, arguments) in enumerate(asked)
    ]


def build(step: Step | None, fallback: str, id_prefix: str, budget: int | None) -> Answer:
    """`fallback` is the text when the step asks nothing; `budget` is max_tokens."""
    calls = _calls(step, id_prefix)
    text = step.text if step is not None and step.text is not None else None
    if text is None and not calls:
        text = fallback
    total = (tokenizer.count(text) if text is not None else 0) + sum(c.cost() for c in calls)
    finish = "tool_calls" if calls else "stop"
    if budget is not None and total > budget:
        text, calls = _cut(text, calls, budget)
        total, finish = budget, "length"
        if text is None and not calls:
            text = ""
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return Answer(message, finish, total)


def _cut(text: str | None, calls: list[_Call], budget: int) -> tuple[str | None, list[_Call]]:
    """The first `budget` tokens: text first, then each call (overhead, name, arguments)."""
    left = budget
    if text is not None:
        if tokenizer.count(text) >= left:
            return tokenizer.cut(text, left), []
        left -= tokenizer.count(text)
    kept: list[_Call] = []
    for call in calls:
        head = CALL_OVERHEAD + tokenizer.count(call.name)
        if left <= head:
            break
        kept.append(_Call(call.id, call.name, tokenizer.cut(call.arguments, left - head)))
        left -= call.cost()
        if left <= 0:
            break
    return text, kept
