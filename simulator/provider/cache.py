"""The prompt cache: how many leading tokens a request shares with any earlier one.

A trie of whole segments, one per model (a provider's prompt cache never crosses models).
A request that extends an earlier one adds only its new segments, so memory grows with
what is appended, not with history length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arck.simulator.provider.prompt import Segment

__all__ = ["PromptCache", "common_prefix"]


class _Node(dict[Segment, "_Node"]):
    """Children keyed by their segment's tokens."""


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items two sequences share: a binary search on slices compared in C
    (a new request is compared with every earlier prompt that shares its prefix)."""
    same, differ = 0, min(len(a), len(b))  # a[:same] == b[:same]; a[:differ] != b[:differ]?
    if a[:differ] == b[:differ]:
        return differ
    while differ - same > 1:
        middle = (same + differ) // 2
        if a[same:middle] == b[same:middle]:
            same = middle
        else:
            differ = middle
    return same


class PromptCache:
    def __init__(self) -> None:
        self._roots: dict[str, _Node] = {}

    def match_and_store(self, model: str, segments: Sequence[Segment]) -> int:
        """Cached tokens for this prompt, which is then cached too."""
        node = self._roots.setdefault(model, _Node())
        matched, diverged = 0, False
        for segment in segments:
            child = node.get(segment)
            if child is None:
                if not diverged:
                    # Segments end with a unique marker, so nothing past this one can match.
                    matched += max((common_prefix(segment, seen) for seen in node), default=0)
                    diverged = True
                child = node[segment] = _Node()
            elif not diverged:
                matched += len(segment)
            node = child
        return matched
