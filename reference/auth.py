"""Callers, their permissions and agent scopes (AUTH-01, AUTH-03, DRY-06).

A credential belongs to one tenant and carries permissions and agent scopes. The development
credentials are the ones docs/profile.md lists; they are for tests only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from arck.reference.errors import Unauthorized

__all__ = [
    "ALL_PERMISSIONS",
    "CONFIG_READ",
    "CONFIG_WRITE",
    "DEV_CREDENTIALS",
    "DRY_RUN",
    "EXECUTOR_CONNECT",
    "RUNTIME_READ",
    "RUNTIME_WRITE",
    "TOOLS_EXECUTE",
    "Principal",
    "authenticate",
    "bearer_token",
]

CONFIG_READ = "configuration:read"
CONFIG_WRITE = "configuration:write"
RUNTIME_READ = "runtime:read"
RUNTIME_WRITE = "runtime:write"  # sessions and runs: create, cancel
TOOLS_EXECUTE = "tools:execute"
EXECUTOR_CONNECT = "executor:connect"  # executor credentials only (docs/executors.md)
ALL_PERMISSIONS = frozenset(
    {CONFIG_READ, CONFIG_WRITE, RUNTIME_READ, RUNTIME_WRITE, TOOLS_EXECUTE}
)
DRY_RUN = frozenset({RUNTIME_READ, CONFIG_READ, TOOLS_EXECUTE})  # any one of them (DRY-06)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller; `agents` is a set of agent ids or `"*"` for every agent.

    `executor_id` is set for an executor credential (docs/executors.md): a kind of its own,
    admitted only to the executor API and covering no agent.
    """

    tenant: str
    permissions: frozenset[str]
    agents: frozenset[str] | Literal["*"]
    executor_id: str | None = None

    def covers(self, agent_id: str) -> bool:
        return self.agents == "*" or agent_id in self.agents


DEV_CREDENTIALS: Mapping[str, Principal] = {
    "arck-dev-full": Principal("t1", ALL_PERMISSIONS, "*"),
    "arck-dev-readonly": Principal("t1", frozenset({RUNTIME_READ}), "*"),
    "arck-dev-configread": Principal("t1", frozenset({CONFIG_READ}), "*"),
    "arck-dev-noperm": Principal("t1", frozenset(), "*"),
    "arck-dev-noscope": Principal("t1", ALL_PERMISSIONS, frozenset({"arck-no-such-agent"})),
    "arck-dev-other": Principal("t2", ALL_PERMISSIONS, "*"),
}


def bearer_token(authorization: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header (scheme case-insensitive)."""
    if not authorization:
        raise Unauthorized("missing Authorization header; send 'Authorization: Bearer <token>'")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise Unauthorized("malformed Authorization header; expected 'Bearer <token>'")
    return token


def authenticate(
    authorization: str | None,
    credentials: Mapping[str, Principal],
    lookup: Callable[[str], Principal | None] | None = None,
) -> Principal:
    """The caller named by the header, or 401 for a missing, malformed or unknown token;
    `lookup` finds the tokens that are not in `credentials` (executors, in the store)."""
    token = bearer_token(authorization)
    principal = credentials.get(token)
    if principal is None and lookup is not None:
        principal = lookup(token)
    if principal is None:
        raise Unauthorized("unknown bearer token")
    return principal
