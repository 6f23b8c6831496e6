"""What happened to each request, for an engine reconciling a call whose answer it lost.

Outcomes: `received` (still being processed, or slow), `answered` (a response was sent),
`lost` (processed and billed, but no response reached the caller), `failed` (the connection
broke before processing: nothing billed). Records are frozen; an update replaces one.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

__all__ = ["Ledger", "Outcome", "RequestRecord"]

Outcome = Literal["received", "answered", "lost", "failed"]


@dataclass(frozen=True)
class RequestRecord:
    id: str
    idempotency_key: str | None
    received_at: float
    model: str | None = None
    conversation: str | None = None
    step: int | None = None  # the call's index in its conversation (None: untagged)
    outcome: Outcome = "received"
    status_code: int | None = None
    response: bytes | None = None  # the body sent, or that would have been sent
    usage: dict[str, Any] | None = None  # as reported (None: the answer carried none)
    true_usage: dict[str, Any] | None = None  # the provider's own count
    billed: bool = False
    faults: tuple[str, ...] = ()
    finished_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        shown = asdict(self)
        body = self.response
        try:
            shown["response"] = None if body is None else json.loads(body)
        except ValueError:
            shown["response"] = body.decode("utf-8", "replace") if body is not None else None
        shown["faults"] = list(self.faults)
        return shown


class Ledger:
    def __init__(self) -> None:
        self._records: dict[str, RequestRecord] = {}
        self._by_key: dict[str, list[str]] = {}

    def open(self, record: RequestRecord) -> None:
        self._records[record.id] = record
        if record.idempotency_key is not None:
            self._by_key.setdefault(record.idempotency_key, []).append(record.id)

    def update(self, request_id: str, **changes: Any) -> RequestRecord:
        record = self._records[request_id] = replace(self._records[request_id], **changes)
        return record

    def get(self, request_id: str) -> RequestRecord | None:
        return self._records.get(request_id)

    def by_key(self, idempotency_key: str) -> list[RequestRecord]:
        return [self._records[i] for i in self._by_key.get(idempotency_key, ())]

    def all(self) -> list[RequestRecord]:
        return list(self._records.values())
