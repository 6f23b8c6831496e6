"""The reference profile's success status of each operation, from the wire tables of
docs/profile.md, docs/runs.md, docs/executors.md and docs/capabilities.md
(`tests/conformance/test_wirestatus.py` keeps them equal).

A success answered with another 2xx (a claim answered 200, a run 202) passes every check that
asks only "did it work?", and breaks every client written to the profile; so in the reference
profile each answer the harness sees is held to this table (`wrong_success`), and the served
document must list the same status (`conformance/checks/test_openapi.py`).
"""

from __future__ import annotations

import httpx

from arck.conformance.errors import CheckFailure
from arck.conformance.judge import template_pattern
from arck.simulator.target import Exchange

__all__ = ["SUCCESS", "judge_success", "success_status", "wrong_success"]

# (method, path template) → the one 2xx status the profile answers.
SUCCESS: dict[tuple[str, str], int] = {
    # docs/profile.md: definitions, dry-run, health
    ("POST", "/v1/bindings"): 201,
    ("GET", "/v1/bindings/{binding_id}"): 200,
    ("GET", "/v1/bindings/{binding_id}/policy"): 200,
    ("PUT", "/v1/bindings/{binding_id}/local-policy"): 200,
    ("POST", "/v1/openapi-imports"): 201,
    ("POST", "/v1/tool-sets"): 201,
    ("GET", "/v1/tool-sets/{tool_set_id}"): 200,
    ("POST", "/v1/agents/{agent_id}/versions"): 201,
    ("GET", "/v1/agent-versions/{agent_version}"): 200,
    ("POST", "/v1/tools/dry-run"): 200,
    ("GET", "/v1/health"): 200,
    # docs/runs.md: channels, wallets, sessions, runs
    ("POST", "/v1/channels"): 201,
    ("GET", "/v1/channels/{channel_id}"): 200,
    ("POST", "/v1/wallets"): 201,
    ("POST", "/v1/wallets/{wallet_id}/deposits"): 200,
    ("GET", "/v1/wallets/{wallet_id}"): 200,
    ("POST", "/v1/sessions"): 201,
    ("GET", "/v1/sessions/{session_id}"): 200,
    ("GET", "/v1/sessions/{session_id}/history"): 200,
    ("GET", "/v1/sessions/{session_id}/execution-history"): 200,
    ("POST", "/v1/sessions/{session_id}/runs"): 201,
    ("GET", "/v1/runs/{run_id}"): 200,
    ("POST", "/v1/runs/{run_id}/cancel"): 200,
    ("GET", "/v1/runs/{run_id}/events"): 200,
    ("GET", "/v1/runs/{run_id}/tool-calls"): 200,
    ("POST", "/v1/runs/{run_id}/input"): 200,
    ("POST", "/v1/agents/{agent_id}/tool-revocations"): 201,
    # docs/executors.md: executors and the executor API
    ("POST", "/v1/executors"): 201,
    ("GET", "/v1/executors/{executor_id}"): 200,
    ("POST", "/v1/executor/heartbeat"): 200,
    ("GET", "/v1/executor/candidates"): 200,
    ("GET", "/v1/executor/calls/{call_id}"): 200,
    ("POST", "/v1/tool-calls/{call_id}/claims"): 201,
    ("POST", "/v1/tool-calls/{call_id}/receipts"): 200,
    ("POST", "/v1/tool-calls/{call_id}/detach"): 200,
    ("POST", "/v1/tool-calls/{call_id}/cancel"): 200,
}


_PATTERNS = [(method, template_pattern(template), status)
             for (method, template), status in SUCCESS.items()]


def success_status(method: str, path: str) -> int | None:
    """The profile's success status for `method path` (a concrete path); None: not in the
    wire tables (a test hook, `/openapi.json`, a route of the target's own)."""
    for known, pattern, status in _PATTERNS:
        if known == method.upper() and pattern.match(path):
            return status
    return None


def wrong_success(method: str, url: str, status: int) -> int | None:
    """The status the profile answers where `status` is another 2xx; None when it agrees,
    is not a success, or the operation is not in the tables."""
    if not 200 <= status < 300:
        return None
    expected = success_status(method, httpx.URL(url).path)
    return expected if expected is not None and expected != status else None


def judge_success(exchange: Exchange) -> None:
    """Fail the check that made `exchange` (PRO-03) when it is a success answered with a 2xx
    other than the profile's: the session calls this for every exchange of a target in the
    reference profile."""
    expected = wrong_success(exchange.method, exchange.url, exchange.status)
    if expected is not None:
        path = httpx.URL(exchange.url).path
        raise CheckFailure(
            "PRO-03", f"profile: {expected} for a success of {exchange.method} {path} (the wire "
            "tables of docs/profile.md, runs.md and executors.md)", exchange.describe(),
            hint=f"Reproduce: {exchange.as_curl()}")

