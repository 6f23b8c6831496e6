"""The OpenAI chat-completions wire shape: requests read strictly, errors shaped as OpenAI's.

Only what the provider answers from is checked, as OpenAI checks it (including that every
assistant tool call is answered by a tool message), with `param` naming the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["ROLES", "ChatRequest", "WireError", "dumps", "error_body", "parse"]

ROLES = ("system", "developer", "user", "assistant", "tool")


class WireError(Exception):
    """An error answer: status and OpenAI's `{"error": {message, type, param, code}}`."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind
        self.param, self.code, self.headers = param, code, headers or {}

    def body(self) -> bytes:
        return error_body(self.message, self.kind, self.param, self.code)


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    max_tokens: int | None


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def error_body(message: str, kind: str, param: str | None, code: str | None) -> bytes:
    return dumps({"error": {"message": message, "type": kind, "param": param, "code": code}})


def _invalid(param: str, message: str, code: str = "invalid_value") -> WireError:
    return WireError(400, message, param=param, code=code)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(raw: bytes) -> ChatRequest:
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except ValueError:
        raise WireError(
            400,
            "We could not parse the JSON body of your request. (HINT: This likely means you "
            "aren't using your HTTP library correctly.)",
        ) from None
    if not isinstance(body, dict):
        raise WireError(400, "The request body must be a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _invalid("model", "you must provide a model parameter", "missing_required_parameter")
    if body.get("stream") is True:
        raise _invalid(
            "stream", "arck's simulated provider does not stream: send stream false",
            "unsupported_value",
        )
    if body.get("n", 1) != 1:
        raise _invalid("n", "arck's simulated provider answers one choice: n must be 1",
                       "unsupported_value")
    return ChatRequest(
        model=model,
        messages=_messages(body.get("messages")),
        tools=_tools(body.get("tools")),
        max_tokens=_max_tokens(body),
    )


def _max_tokens(body: dict[str, Any]) -> int | None:
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise _invalid(name, f"Invalid '{name}': expected an integer >= 1, got {value!r}.")
        return value
    return None


def _tools(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _invalid("tools", "Invalid 'tools': expected an array.", "invalid_type")
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise _invalid(f"{where}.type", f"Invalid '{where}': only function tools are allowed.")
        function = tool.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise _invalid(f"{where}.function.name", f"Missing '{where}.function.name'.",
                           "missing_required_parameter")
    return tools


def _messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise _invalid("messages", "Invalid 'messages': expected a non-empty array.",
                       "missing_required_parameter")
    unanswered: list[str] = []  # tool_call_ids still waiting for their tool message
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise _invalid(f"{where}.role", f"Invalid '{where}.role': expected one of {ROLES}.")
        role = message["role"]
        _content(message.get("content"), f"{where}.content", required=role != "assistant")
        if unanswered and role != "tool":
            raise _invalid(
                f"{where}.role",
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Unanswered: {', '.join(unanswered)}",
            )
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in unanswered:
                raise _invalid(
                    f"{where}.tool_call_id",
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceding message with 'tool_calls'.",
                )
            unanswered.remove(call_id)
        if role == "assistant" and message.get("tool_calls") is not None:
            unanswered = _tool_calls(message["tool_calls"], f"{where}.tool_calls")
    if unanswered:
        raise _invalid(
            "messages",
            "An assistant message with 'tool_calls' must be followed by tool messages "
            f"responding to each 'tool_call_id'. Unanswered: {', '.join(unanswered)}",
        )
    return messages


def _content(content: Any, where: str, *, required: bool) -> None:
    if content is None and not required:
        return
    if isinstance(content, str):
        return
    if isinstance(content, list) and all(
        isinstance(part, dict) and isinstance(part.get("type"), str) for part in content
    ):
        return
    raise _invalid(where, f"Invalid '{where}': expected a string or an array of content parts.")


def _tool_calls(calls: Any, where: str) -> list[str]:
    if not isinstance(calls, list) or not calls:
        raise _invalid(where, f"Invalid '{where}': expected a non-empty array.")
    ids: list[str] = []
    for index, call in enumerate(calls):
        at = f"{where}[{index}]"
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("id"), str)
            or call.get("type") != "function"
            or not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments"), str)
        ):
            raise _invalid(at, f"Invalid '{at}': expected {{id, type: function, "
                               "function: {name, arguments: string}}.")
        ids.append(call["id"])
    return ids
