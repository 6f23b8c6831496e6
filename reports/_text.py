"""Text and data clean-up shared by the writers.

Messages and examples carry whatever the generated inputs held: lone surrogates, NUL, escape
sequences, NaN, tuple keys. A report must still be written, and must still parse.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Everything XML 1.0 forbids (also surrogates, which UTF-8 cannot encode).
_FORBIDDEN = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def visible(text: str) -> str:
    r"""Replace characters XML 1.0 forbids with `\uXXXX` text, so they stay visible."""
    return _FORBIDDEN.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def jsonable(value: Any) -> Any:
    """Plain JSON data: str keys, lists, finite numbers; anything else becomes its repr.

    Non-finite floats become the strings "NaN", "Infinity", "-Infinity": the output stays
    valid JSON for strict parsers, and the saved case file keeps the exact input.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _NON_FINITE[repr(value)]
    if isinstance(value, Mapping):
        return {_key(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return repr(value)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)  # json's own spelling: true, null, 1.5, NaN
    return repr(key)


def pretty_json(value: Any) -> str:
    """An example as people read it: indented, sorted, non-ASCII kept, forbidden chars shown."""
    text = json.dumps(jsonable(value), ensure_ascii=False, indent=2, sort_keys=True)
    return visible(text)


def write_bytes(path: Path, data: bytes) -> None:
    """Write a whole report file, creating its directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
