"""Every request body received, byte for byte, stored as a diff from its chain's previous one.

A chain is a conversation (or, untagged, the requests sharing a first message). Histories
grow, so each body is kept as the bytes between the longest common prefix and suffix it
shares with the chain's previous body: an append costs what was appended, and the whole
body is rebuilt exactly by replaying the chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arck.simulator.provider.cache import common_prefix

__all__ = ["RecordedRequest", "Recording"]

_BLOCK = 4096


@dataclass(frozen=True)
class RecordedRequest:
    id: str
    conversation: str | None
    headers: tuple[tuple[str, str], ...]
    body: bytes
    # Leading messages equal to those of the chain's previous request (None for a chain's
    # first request, or a body that is not a valid request).
    messages_common: int | None


@dataclass(frozen=True)
class _Entry:
    id: str
    chain: str
    previous: int | None
    prefix: int
    suffix: int
    middle: bytes
    conversation: str | None
    headers: tuple[tuple[str, str], ...]
    messages_common: int | None


@dataclass
class _Latest:
    index: int
    body: bytes
    digests: Sequence[str] | None


def _common_prefix(a: bytes, b: bytes) -> int:
    size, limit = 0, min(len(a), len(b))
    while size + _BLOCK <= limit and a[size : size + _BLOCK] == b[size : size + _BLOCK]:
        size += _BLOCK
    while size < limit and a[size] == b[size]:
        size += 1
    return size


def _common_count(a: Sequence[str] | None, b: Sequence[str] | None) -> int | None:
    if a is None or b is None:
        return None
    return common_prefix(a, b)


class Recording:
    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._index: dict[str, int] = {}
        self._latest: dict[str, _Latest] = {}

    @property
    def stored_bytes(self) -> int:
        """Bytes kept for bodies: the sum of the diffs (the latest body per chain aside)."""
        return sum(len(entry.middle) for entry in self._entries)

    def add(
        self,
        request_id: str,
        chain: str,
        conversation: str | None,
        headers: tuple[tuple[str, str], ...],
        body: bytes,
        digests: Sequence[str] | None,
    ) -> None:
        """`digests` identify the request's messages, one each (None: not a valid request)."""
        latest = self._latest.get(chain)
        if latest is None:
            previous, prefix, suffix, common = None, 0, 0, None
        else:
            before = latest.body
            previous, prefix = latest.index, _common_prefix(before, body)
            room = min(len(before), len(body)) - prefix
            suffix = _common_prefix(before[::-1][:room], body[::-1][:room])
            common = _common_count(latest.digests, digests)
        middle = body[prefix : len(body) - suffix]
        self._index[request_id] = len(self._entries)
        self._entries.append(
            _Entry(request_id, chain, previous, prefix, suffix, middle, conversation, headers,
                   common)
        )
        self._latest[chain] = _Latest(len(self._entries) - 1, body, digests)

    def body(self, request_id: str) -> bytes:
        index = self._index[request_id]
        latest = self._latest[self._entries[index].chain]
        if latest.index == index:
            return latest.body
        path: list[_Entry] = []
        at: int | None = index
        while at is not None:
            path.append(self._entries[at])
            at = self._entries[at].previous
        body = b""
        for entry in reversed(path):
            body = body[: entry.prefix] + entry.middle + body[len(body) - entry.suffix :]
        return body

    def all(self, conversation: str | None = None) -> list[RecordedRequest]:
        """Every request in order; with `conversation`, only that conversation's (a tagged
        conversation is a chain of its own, so only its bodies are rebuilt)."""
        bodies: dict[str, bytes] = {}
        found: list[RecordedRequest] = []
        for entry in self._entries:
            if conversation is not None and entry.conversation != conversation:
                continue
            before = bodies.get(entry.chain, b"")
            body = before[: entry.prefix] + entry.middle + before[len(before) - entry.suffix :]
            bodies[entry.chain] = body
            found.append(self._shown(entry, body))
        return found

    def get(self, request_id: str) -> RecordedRequest | None:
        index = self._index.get(request_id)
        if index is None:
            return None
        return self._shown(self._entries[index], self.body(request_id))

    @staticmethod
    def _shown(entry: _Entry, body: bytes) -> RecordedRequest:
        return RecordedRequest(entry.id, entry.conversation, entry.headers, body,
                               entry.messages_common)
