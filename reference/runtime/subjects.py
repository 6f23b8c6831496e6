"""CAP-10, CAP-12: whom a tool call acts for, and whether the platform can vouch for it.

A session's subject is **trusted** when the caller that created the session named it (`subject`
in `POST /v1/sessions`): an authenticated principal with `runtime:write` asserted it. The
default, `session:<session_id>`, names the session, not anyone it acts for, so it is not
trusted; nor is anything a model writes into a call's arguments. An operation declaring
`subject.required: true` is refused before dispatch in a session without a trusted subject,
whatever else it declares: `readonly` or `risk.level: low` grant no authority (CAP-12).
"""

from __future__ import annotations

from typing import Any

from arck.reference.capability import ExecutionPolicy
from arck.reference.runtime.runstore import SessionRow

__all__ = ["refused", "subject_required", "trusted"]


def trusted(session: SessionRow) -> bool:
    return session.subject is not None


def refused(policy: ExecutionPolicy, session: SessionRow) -> bool:
    """Whether a call of the operation must be refused for want of a trusted subject."""
    return policy.subject_required and not trusted(session)


def subject_required(name: str) -> dict[str, Any]:
    """The `tool` message a model reads for a call refused for want of a trusted subject."""
    return {"error": {
        "code": "subject_required",
        "message": f"{name!r} acts only for a known subject, and this session names none "
                   "(its creator gave no `subject`); nothing was run"}}
