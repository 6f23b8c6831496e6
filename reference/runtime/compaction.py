"""Formal compaction of the execution history (CTX-04..07, CTX-15, CTX-16), as pure functions.

The worker decides *when* from the calibrated estimate of the whole request (CTX-03); these
functions say *what* a compacted history is. They take and return message lists (the OpenAI
shapes the execution history stores) and never touch the store, so a test or a check can
recompute every rewrite. Two kinds, always in this order (CTX-04):

* local: tool results and tool-call arguments older than the last 2 tool exchanges become short
  placeholders that keep the business facts (tool_call_id, receipt_id, status, size);
* summary: one contiguous early stretch becomes one working-memory message holding the model's
  summary beside the facts the engine itself carries over, so a summary cannot change them
  (CTX-06).

Every result stays a valid conversation: an assistant message with tool calls and its tool
answers are never split, and nothing is reordered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from fractions import Fraction
from typing import Any

from arck.reference.canonical import canonical_text, utf8_length

__all__ = [
    "BYPASS_THRESHOLD",
    "KEEP_EXCHANGES",
    "SUMMARY_PROMPT",
    "SUMMARY_SPACING",
    "WORKING_MEMORY",
    "Facts",
    "Message",
    "current_input",
    "fraction_text",
    "kept_from",
    "local",
    "minimal",
    "refusal",
    "replace",
    "shrink",
    "size",
    "stretch",
    "summary_messages",
    "working_memory",
]

Message = dict[str, Any]
# tool_call_id -> the business facts of its completed receipt: {"receipt_id", "status"?}.
Facts = Mapping[str, Mapping[str, Any]]

KEEP_EXCHANGES = 2  # CTX-16: the last 2 tool exchanges are kept in full
SUMMARY_SPACING = 4  # CTX-05: main calls completed after a summary call before the next one
BYPASS_THRESHOLD = Fraction(92, 100)  # CTX-05: at or above it, the spacing is skipped
WORKING_MEMORY = "arck_working_memory"  # the `name` of the working-memory user message
_MEMORY_HEAD = "[working memory]\n"
_FACTS_HEAD = "\n[facts]\n"  # canonical JSON follows: it never holds a raw newline
_PLACEHOLDER_HEAD = '{"compacted":true,'  # canonical text sorts "compacted" first
SUMMARY_PROMPT = (
    "You condense the earlier part of an agent's conversation into working memory. Answer "
    "with a short plain-text summary of what was asked, found, done and decided. Do not call "
    "tools, do not write tool-call syntax, and mention no identifier that is not in the text."
)
_SCRIPT_TAG = re.compile(r"\[arck-script:[^\]]*\]")
_CALL_ID = re.compile(r"(?<![\w-])call_[\w-]+")
_TOOL_SYNTAX = re.compile(
    r"tool_calls|</?tool_call|<function|\"arguments\"\s*:|\barck_request_", re.IGNORECASE
)


def size(messages: Sequence[Message]) -> int:
    """UTF-8 bytes of the messages' canonical JSON: what the raw estimate counts (CTX-13)."""
    return sum(utf8_length(canonical_text(m)) for m in messages)


def fraction_text(value: Fraction) -> str:
    """An exact fraction as "p/q" (always with its denominator), for events."""
    return f"{value.numerator}/{value.denominator}"


def _calls(message: Message) -> list[dict[str, Any]]:
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _is_memory(message: Message) -> bool:
    return message.get("role") == "user" and message.get("name") == WORKING_MEMORY


def kept_from(messages: Sequence[Message]) -> int:
    """Where the last KEEP_EXCHANGES tool exchanges start (len(messages) with none): nothing
    from there on is ever compacted. An exchange is an assistant message with tool calls and
    its tool answers."""
    starts = [i for i, m in enumerate(messages) if _calls(m)]
    return starts[-KEEP_EXCHANGES:][0] if starts else len(messages)


def current_input(messages: Sequence[Message], reserved: Collection[str]) -> tuple[int, int] | None:
    """[start, end) of the current run's input: the last user message that is not working
    memory, or the last answer to a reserved request (input, approval) with the assistant
    message that asked it, so the two stay together."""
    asked = {
        c.get("id"): i for i, m in enumerate(messages) for c in _calls(m)
        if (c.get("function") or {}).get("name") in reserved
    }
    for i in range(len(messages) - 1, 0, -1):
        m = messages[i]
        if m.get("role") == "user" and not _is_memory(m):
            return i, i + 1
        if m.get("role") == "tool" and m.get("tool_call_id") in asked:
            return asked[m.get("tool_call_id")], i + 1
    return None


def minimal(messages: Sequence[Message], reserved: Collection[str]) -> list[Message]:
    """CTX-15: the smallest request compaction could ever reach: system prompt and current
    input (tool definitions are added by the caller's estimate)."""
    unit = current_input(messages, reserved)
    return [*messages[:1], *(messages[unit[0]:unit[1]] if unit else ())]


# -- local compaction -----------------------------------------------------------------------


def local(messages: Sequence[Message], facts: Facts) -> list[Message]:
    """Placeholders for the tool results and arguments of completed business calls before the
    kept tail; the same list (equal) when there is nothing to replace.

    A placeholder replaces only what it is shorter than, and never another placeholder, so
    compacting twice changes nothing. Answers to reserved requests have no receipt and are the
    user's words: they stay.
    """
    end = kept_from(messages)
    return [_local_one(m, facts) if i < end else m for i, m in enumerate(messages)]


def _placeholder(original: str, fact: Mapping[str, Any]) -> str | None:
    if original.startswith(_PLACEHOLDER_HEAD):
        return None
    text = canonical_text({"compacted": True, "original_bytes": utf8_length(original), **fact})
    return text if utf8_length(text) < utf8_length(original) else None


def _local_one(message: Message, facts: Facts) -> Message:
    if message.get("role") == "tool":
        fact = facts.get(str(message.get("tool_call_id")))
        content = message.get("content")
        if fact is None or not isinstance(content, str):
            return message
        text = _placeholder(content, fact)
        return message if text is None else {**message, "content": text}
    calls = _calls(message)
    if not calls:
        return message
    changed = [_local_call(c, facts) for c in calls]
    return {**message, "tool_calls": changed} if changed != calls else message


def _local_call(call: dict[str, Any], facts: Facts) -> dict[str, Any]:
    function = call.get("function")
    if str(call.get("id")) not in facts or not isinstance(function, dict):
        return call
    arguments = function.get("arguments")
    text = _placeholder(arguments, {}) if isinstance(arguments, str) else None
    return call if text is None else {**call, "function": {**function, "arguments": text}}


# -- model summary --------------------------------------------------------------------------


def stretch(messages: Sequence[Message], reserved: Collection[str]) -> tuple[int, int] | None:
    """[start, end) of the contiguous early stretch a summary may replace, or None.

    It lies between the system prompt and the kept tail (the last 2 tool exchanges, CTX-16) and
    never holds the current input: when the input lies inside that span, the stretch is the
    larger side of it in bytes (the earlier on a tie). A previous working memory at its start
    is included, so summaries roll up; a stretch of that message alone is no stretch.
    """
    tail = kept_from(messages)
    unit = current_input(messages, reserved)
    spans = [(1, unit[0]), (unit[1], tail)] if unit is not None and unit[0] < tail else [(1, tail)]
    spans = [(a, b) for a, b in spans if b > a and not (b - a == 1 and _is_memory(messages[a]))]
    if not spans:
        return None
    return max(spans, key=lambda s: (size(messages[s[0]:s[1]]), -s[0]))


def shrink(
    messages: Sequence[Message], start: int, end: int, fits: Callable[[list[Message]], bool]
) -> int | None:
    """The largest end <= `end` whose stretch `fits` (the summary channel's window), cutting
    only before a non-tool message so no exchange is split; None when nothing fits."""
    for cut in range(end, start, -1):
        if (cut == end or messages[cut].get("role") != "tool") and fits(list(messages[start:cut])):
            return cut
    return None


def summary_messages(part: Sequence[Message]) -> list[Message]:
    """The summary request's messages: its own system prompt (never the session's) and the
    stretch as canonical JSON lines, any script tag removed, so a scripted provider answers it
    as an unscripted conversation."""
    lines = "\n".join(_SCRIPT_TAG.sub("", canonical_text(m)) for m in part)
    return [{"role": "system", "content": SUMMARY_PROMPT},
            {"role": "user", "content": "Summarize this stretch, one message per line:\n" + lines}]


def _carried(message: Message) -> list[dict[str, Any]]:
    """The facts a working-memory message carries (the canonical JSON after its last head)."""
    content = message.get("content")
    if not _is_memory(message) or not isinstance(content, str) or _FACTS_HEAD not in content:
        return []
    loaded = json.loads(content.rpartition(_FACTS_HEAD)[2])
    return [f for f in loaded if isinstance(f, dict)] if isinstance(loaded, list) else []


def _facts_of(part: Sequence[Message], facts: Facts) -> list[dict[str, Any]]:
    """The business facts of a stretch, in order: those carried by working memory, then one
    per completed call (tool_call_id, name, receipt_id, status)."""
    kept: list[dict[str, Any]] = []
    for m in part:
        kept += _carried(m)
        for c in _calls(m):
            fact = facts.get(str(c.get("id")))
            if fact is not None:
                name = (c.get("function") or {}).get("name")
                kept.append({"tool_call_id": c.get("id"), "name": name, **fact})
    return kept


def working_memory(summary: str, part: Sequence[Message], facts: Facts) -> Message:
    """The message replacing a stretch: the summary text, then the stretch's facts as the
    engine recorded them (never as the model retold them)."""
    kept = canonical_text(_facts_of(part, facts))
    return {"role": "user", "name": WORKING_MEMORY,
            "content": _MEMORY_HEAD + summary.strip() + _FACTS_HEAD + kept}


def _ids(messages: Sequence[Message], facts: Facts) -> set[str]:
    """tool_call ids and receipt ids named by the messages (their calls, answers and facts)."""
    found: set[str] = set()
    for m in messages:
        named = [c.get("id") for c in _calls(m)] + [m.get("tool_call_id")]
        for ident in named:
            found.add(str(ident))
            fact = facts.get(str(ident))
            if fact is not None:
                found.add(str(fact.get("receipt_id")))
        for fact in _carried(m):
            found.update(str(fact.get(k)) for k in ("tool_call_id", "receipt_id") if k in fact)
    found.discard("None")
    return found


def _mentions(text: str, ident: str) -> bool:
    return bool(ident) and re.search(rf"(?<![\w-]){re.escape(ident)}(?![\w-])", text) is not None


def refusal(
    summary: str, messages: Sequence[Message], span: tuple[int, int], facts: Facts
) -> str | None:
    """Why a summary candidate may not replace messages[start:end] (CTX-06), or None.

    Refused: an empty text; tool-call syntax (a summary never creates a tool-execution right);
    a receipt id or tool_call id the session knows but the stretch does not hold, or any
    provider-shaped call id (call_...) outside it; a working memory not shorter in bytes than
    the stretch it would replace.
    """
    start, end = span
    if not summary.strip():
        return "the summary is empty"
    if _TOOL_SYNTAX.search(summary):
        return "the summary contains tool-call syntax"
    inside = _ids(messages[start:end], facts)
    known = _ids(messages, facts) | {str(f.get("receipt_id")) for f in facts.values()}
    foreign = sorted(i for i in known - inside if _mentions(summary, i))
    foreign += sorted({m for m in _CALL_ID.findall(summary) if m not in inside} - set(foreign))
    if foreign:
        return f"the summary names {foreign[0]}, which is not in the summarized stretch"
    if size([working_memory(summary, messages[start:end], facts)]) >= size(messages[start:end]):
        return "the summary is not shorter than the stretch it would replace"
    return None


def replace(messages: Sequence[Message], span: tuple[int, int], message: Message) -> list[Message]:
    return [*messages[: span[0]], message, *messages[span[1]:]]
