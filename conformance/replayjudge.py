"""Whether a replayed case fails the way it failed when it was found, or another way.

A failure is identified as hypothesis identifies it (`errors.keyed`): the requirement IDs it
named and the line of the check that raised it, so the same assertion failing with other
numbers is the same failure. A case file keeps both (`failed`, `assertion`); one written
before `assertion` was kept is compared on its IDs alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from arck.conformance.errors import CheckFailure

__all__ = ["assertion_of", "compare"]


def assertion_of(failure: CheckFailure) -> str | None:
    """`<check module>:<line>` of the assertion that raised `failure`, if it is keyed."""
    key = type(failure).key
    return None if key is None else f"{key[1].rsplit('/', 1)[-1]}:{key[2]}"


def _named(ids: Sequence[str], at: str | None) -> str:
    return f"{', '.join(ids)}" + (f" at {at}" if at else "")


def compare(case: Mapping[str, Any], failures: Sequence[CheckFailure]) -> tuple[bool, str]:
    """(True, how) when one of `failures` is the case's own; else (False, what differs)."""
    wanted = sorted(set(case.get("failed") or case.get("requirements") or ()))
    at = case.get("assertion") if isinstance(case.get("assertion"), str) else None
    for failure in failures:
        ids = sorted(set(failure.requirements))
        if ids == wanted and (at is None or assertion_of(failure) == at):
            return True, f"the same way ({_named(ids, assertion_of(failure))})"
    now = "; ".join(_named(sorted(set(f.requirements)), assertion_of(f)) for f in failures)
    return False, f"another way: found failing {_named(wanted, at)}, now {now}"
