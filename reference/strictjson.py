"""Strict JSON bodies (PRO-01): refuse what `json.loads` would let through or coerce.

`json.loads` accepts NaN and ±Infinity, turns `1e400` into inf, keeps lone escaped surrogates,
and lets the last of two duplicate keys win. Each of these would let a value JSON cannot hold
reach the engine (BUD-05), so the hooks below mark them and one walk over the parsed value
refuses the first in document order with its JSON Pointer.
"""

from __future__ import annotations

import json
import math
from typing import Any

from arck.reference.canonical import pointer_token

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "StrictJSONError", "loads_strict"]

MAX_DEPTH = 512
MAX_INT_DIGITS = 4300
_BOM = b"\xef\xbb\xbf"


class StrictJSONError(ValueError):
    """A body refused as invalid JSON; `path` is a JSON Pointer, `""` for the whole body."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(f"{message} at {path!r}" if path else message)
        self.message = message
        self.path = path


class _Refused:
    """Stands in for a value the hooks refused, so the walk can report where it was."""

    __slots__ = ("key", "message")

    def __init__(self, message: str, key: str | None = None) -> None:
        self.message = message
        self.key = key


def _constant(name: str) -> _Refused:
    return _Refused(f"{name} is not a JSON value")


def _float(text: str) -> float | _Refused:
    value = float(text)
    if math.isinf(value):
        return _Refused(f"number {text[:40]!r} overflows a double")
    return value


def _int(text: str) -> int | _Refused:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        return _Refused(f"integer of more than {MAX_INT_DIGITS} digits")
    try:
        return int(text)
    except ValueError:  # the interpreter's own digit limit may be lower
        return _Refused("integer too long for this interpreter")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Refused:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            return _Refused(f"duplicate object key {key[:64]!r}", key)
        result[key] = value
    return result


_Path = tuple[Any, str | int] | None  # (parent path, key): shared, so a deep walk stays linear


def _pointer(path: _Path) -> str:
    tokens: list[str] = []
    while path is not None:
        path, key = path
        tokens.append("/" + pointer_token(key))
    return "".join(reversed(tokens))


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _walk(value: Any, max_depth: int) -> None:
    """Refuse marked values, lone surrogates and excess depth; iterative, in document order."""
    stack: list[tuple[Any, int, _Path]] = [(value, 0, None)]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, _Refused):
            raise StrictJSONError(
                node.message, _pointer(path if node.key is None else (path, node.key))
            )
        if isinstance(node, str):
            if not _encodable(node):
                raise StrictJSONError("string holds a lone surrogate", _pointer(path))
        elif isinstance(node, dict | list):
            if depth + 1 > max_depth:
                raise StrictJSONError(f"nested deeper than {max_depth} levels", _pointer(path))
            children: list[tuple[Any, int, _Path]] = []
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                if isinstance(key, str) and not _encodable(key):
                    raise StrictJSONError(
                        "object key holds a lone surrogate", _pointer((path, key))
                    )
                if isinstance(child, str | dict | list | _Refused):
                    children.append((child, depth + 1, (path, key)))
            stack.extend(reversed(children))


def loads_strict(body: bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse a request body, raising only `StrictJSONError` for anything PRO-01 refuses.

    `max_depth` above about 900 cannot be reached: `json.loads` runs out of stack first.
    """
    if body.startswith(_BOM):
        raise StrictJSONError("body starts with a UTF-8 byte order mark")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StrictJSONError(f"invalid UTF-8 at byte {exc.start}: {exc.reason}") from None
    try:
        value = json.loads(
            text,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
            object_pairs_hook=_object,
        )
    except json.JSONDecodeError as exc:
        raise StrictJSONError(f"{exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise StrictJSONError(f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        raise StrictJSONError(f"not valid JSON: {exc}") from None
    _walk(value, max_depth)
    return value
