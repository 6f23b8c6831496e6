"""Errors the target layer raises; `arck.conformance.errors` re-exports them in its tree."""

from __future__ import annotations


class UsageError(Exception):
    """Bad flags, a bad target file, an unknown mutant: the harness was misused (exit 2)."""


class TargetUnreachable(Exception):
    """The target answered nothing: exit code 2, never a pass."""


class StepUnavailable(Exception):
    """The target cannot do an optional step (restart, ...): the checks needing it are not
    applicable, with this message as the reason."""
