"""Canonical compact JSON and the size of a result (SPEC §1, BUD-01..05, BUD-23).

Sizes are computed with the exact `json.dumps` call SPEC.md names. Faster serializers (orjson)
spell some floats differently (`1e-7` against `1e-07`), so none is used here: a size that is
wrong by one byte is a wrong projection.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 512
MAX_INT_DIGITS = 4300
_INT_LIMIT = 10**MAX_INT_DIGITS  # the smallest integer with MAX_INT_DIGITS + 1 digits


class ResultLimitError(ValueError):
    """A result beyond a documented general limit (BUD-23); `path` is a JSON Pointer."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(f"{message} at {path or '/'}")
        self.message = message
        self.path = path


# The encoder `json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
# allow_nan=False)` builds on every call, built once: the same text, without the set-up cost
# that dominates measuring the many small values a projection sizes.
_CANONICAL = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
)


def canonical_text(value: Any) -> str:
    return _CANONICAL.encode(value)


def canonical_bytes(value: Any) -> bytes:
    return canonical_text(value).encode("utf-8")


def measure(value: Any) -> int:
    return utf8_length(canonical_text(value))


def utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def pointer_token(key: str | int) -> str:
    """One RFC 6901 reference token."""
    return str(key).replace("~", "~0").replace("/", "~1")


def check_limits(value: Any) -> None:
    """Refuse nesting deeper than MAX_DEPTH and integers longer than MAX_INT_DIGITS digits.

    Iterative, so a hostile value cannot exhaust the interpreter's stack before it is refused.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth + 1 > MAX_DEPTH:
                raise ResultLimitError(f"nested deeper than {MAX_DEPTH} levels", path)
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                stack.append((child, f"{path}/{pointer_token(key)}", depth + 1))
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) >= _INT_LIMIT:
            raise ResultLimitError(f"integer longer than {MAX_INT_DIGITS} digits", path)
