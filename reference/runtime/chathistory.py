"""The chat-history tool (RUN-10; docs/runs.md "The chat-history tool").

`arck_chat_history` is a reserved tool name the engine answers itself, with no executor: the
tool message is the canonical JSON `{"messages": [{"role": "user"|"assistant", "text"}, ...]}`,
the last `limit` visible texts of the session's formal history (user inputs, answers to the
model's requests included, and the assistant's text). Never receipts, tool calls or their
arguments, requests' arguments, working memory or anything of the execution history.
Arguments: a JSON object `{"limit"?: 1..100}` (default 20); anything else is answered
`{"error": "invalid_arguments", "message"}` and the run goes on.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "NAME", "answer"]

NAME = "arck_chat_history"
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
_ROLES = {"user": "user", "assistant": "assistant"}  # formal item type -> role


def _limit(arguments: str) -> int | str:
    """The limit asked, or why the arguments are refused."""
    try:
        found: Any = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return "arguments are not JSON"
    if not isinstance(found, dict) or set(found) - {"limit"}:
        return 'arguments must be an object {"limit"?: integer}'
    limit = found.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        return f"limit must be an integer 1..{MAX_LIMIT}"
    return limit


def answer(db: sqlite3.Connection, session_id: str, arguments: str) -> dict[str, Any]:
    """What the tool returns: the visible text of the formal history, never anything else."""
    limit = _limit(arguments)
    if isinstance(limit, str):
        return {"error": "invalid_arguments", "message": limit}
    messages = []
    for (text,) in db.execute("SELECT item FROM history WHERE session_id = ? AND "
                              "kind = 'formal' ORDER BY seq", (session_id,)):
        item = json.loads(text)
        role = _ROLES.get(item.get("type"))
        if role is not None and isinstance(item.get("text"), str) and item["text"]:
            messages.append({"role": role, "text": item["text"]})
    return {"messages": messages[-limit:]}
