"""The JSONL trace of a scenario run: canonical lines, byte-identical for the same run.

Every line is canonical JSON (sorted keys, no spaces, UTF-8 as is) of one record with a
`kind`: `scenario`, `setup`, `action`, `run`, `wallet`, `provider_request`, `faults`,
`executor_faults`, `business`, `verdict`. Nothing in it comes from the wall clock, the
process or hash order: ids come from the target, times from the virtual clock.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from arck.simulator.target import Exchange

__all__ = ["Trace", "canonical", "digest", "exchange_record"]


def canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=False)


def digest(data: bytes | None) -> str | None:
    return None if data is None else "sha256:" + hashlib.sha256(data).hexdigest()


def _answer(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return {"unparsed": body.decode("utf-8", "backslashreplace")}


def exchange_record(exchange: Exchange) -> dict[str, Any]:
    """One request and its answer: method, path (not the host), body, status, answer."""
    _, _, rest = exchange.url.partition("://")
    path = "/" + rest.partition("/")[2]
    body = None if exchange.request_body is None else _answer(exchange.request_body)
    return {"request": {"method": exchange.method, "path": path, "body": body},
            "status": exchange.status, "answer": _answer(exchange.body)}


class Trace:
    """Lines in order, kept in memory and written at the end (or never, without a path)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, kind: str, **record: Any) -> None:
        self.lines.append(canonical({"kind": kind, **record}))

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.text().encode("utf-8"))
