"""Errors the target layer raises; `arck.conformance.errors` re-exports them in its tree."""

from __future__ import annotations

from collections.abc import Sequence


class UsageError(Exception):
    """Bad flags, a bad target file, an unknown mutant: the harness was misused (exit 2)."""


class TargetUnreachable(Exception):
    """The target answered nothing: exit code 2, never a pass."""


class StepUnavailable(Exception):
    """The target cannot do an optional step (restart, ...): the checks needing it are not
    applicable, with this message as the reason."""


def fault_path(location: Sequence[int | str], whole: str) -> str:
    """A pydantic error location as a path (`steps[2].faults[0].seconds`), leaving out the
    branch name pydantic inserts under `faults` (the fault union's kind, not a field);
    `whole` when the error is about the whole value."""
    spelled = ""
    for index, part in enumerate(location):
        if isinstance(part, int):
            spelled += f"[{part}]"
        elif index >= 2 and location[index - 2] == "faults":
            continue
        else:
            spelled += ("." if spelled else "") + part
    return spelled or whole
