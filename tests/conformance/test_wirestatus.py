"""The profile's success statuses (conformance/wirestatus.py) are the docs' wire tables, and the
judge holds every exchange to them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arck.conformance import wirestatus
from arck.conformance.errors import CheckFailure
from arck.simulator.target import Exchange

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("docs/profile.md", "docs/runs.md", "docs/executors.md", "docs/capabilities.md")
# A row of a wire table: | `METHOD /path` | who | body → STATUS ... |
ROW = re.compile(r"^\| `(GET|POST|PUT) (/v1/[^` ]+)` \|[^|]*\|[^→]*→ (\d{3})\b", re.MULTILINE)


def _tables() -> dict[tuple[str, str], int]:
    found: dict[tuple[str, str], int] = {}
    for page in PAGES:
        for method, path, status in ROW.findall((ROOT / page).read_text("utf-8")):
            found[(method, path)] = int(status)
    return found


def test_the_table_is_the_docs() -> None:
    assert _tables() == wirestatus.SUCCESS


@pytest.mark.parametrize(("method", "path", "expected"), [
    ("POST", "/v1/tool-calls/tc-000001/claims", 201),
    ("POST", "/v1/tool-calls/tc-000001/receipts", 200),
    ("GET", "/v1/runs/run-000001/events", 200),
    ("POST", "/v1/sessions/ses-1/runs", 201),
    ("GET", "/v1/sessions/ses-1/history", 200),
    ("POST", "/v1/test-control/clock", None),
    ("GET", "/openapi.json", None),
    ("GET", "/v1/runs/run-1/events/extra", None),
])
def test_paths_find_their_operation(method: str, path: str, expected: int | None) -> None:
    assert wirestatus.success_status(method, path) == expected


def _exchange(method: str, path: str, status: int) -> Exchange:
    return Exchange(method=method, url=f"http://service.invalid{path}?x=1", request_body=None,
                    status=status, body=b"{}")


def test_another_success_fails_the_check() -> None:
    with pytest.raises(CheckFailure, match="profile: 201 for a success of POST"):
        wirestatus.judge_success(_exchange("POST", "/v1/tool-calls/tc-1/claims", 200))


@pytest.mark.parametrize(("method", "path", "status"), [
    ("POST", "/v1/tool-calls/tc-1/claims", 201),  # the table's
    ("POST", "/v1/tool-calls/tc-1/claims", 409),  # not a success: PRO-02's to judge
    ("POST", "/v1/test-control/clock", 204),  # not in the tables
])
def test_what_is_not_a_wrong_success_passes(method: str, path: str, status: int) -> None:
    wirestatus.judge_success(_exchange(method, path, status))

