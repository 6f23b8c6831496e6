"""The error tree: the target is wrong (a failure) versus the harness was misused (exit 2)."""

from __future__ import annotations

from typing import Any

from arck.simulator.errors import TargetUnreachable, UsageError

__all__ = [
    "ArckError",
    "CheckFailure",
    "CheckTimeout",
    "NotApplicable",
    "NotTestable",
    "TargetUnreachable",
    "UsageError",
]

class ArckError(Exception):
    """Base of every error arck raises on purpose."""


# -- the target is wrong -----------------------------------------------------------------------


class CheckFailure(AssertionError):
    """A check saw the target break a requirement.

    The message says what was expected, what was seen and how to look further; `example` is the
    input that showed it (after shrinking), kept so the failure can be replayed.
    """

    def __init__(
        self,
        requirement: str | tuple[str, ...],
        expected: str,
        seen: str,
        *,
        example: Any = None,
        hint: str = "",
    ) -> None:
        self.requirements = (requirement,) if isinstance(requirement, str) else requirement
        self.expected = expected
        self.seen = seen
        self.example = example
        self.hint = hint
        ids = ", ".join(self.requirements)
        text = f"[{ids}] expected {expected}; saw {seen}."
        if hint:
            text += f" {hint}"
        super().__init__(text)


class NotApplicable(ArckError):
    """The target does not declare the capability or profile a check needs."""


class NotTestable(ArckError):
    """A prerequisite failed (setup, an earlier step), so the check could not judge."""


class CheckTimeout(BaseException):
    """The per-check watchdog fired: the target hung."""
