"""DRY: the dry-run preview (SPEC §3); mock receipts held to the limits of real ones (profile)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from arck.conformance import oracle
from arck.conformance import strategies as s
from arck.conformance.checking import check, expect, property_check
from arck.conformance.context import CheckContext
from arck.conformance.judge import PREVIEW_KEYS, answer, names, refused

NON_FINAL = ("accepted", "progress", "failed", "cancelled", "reconciliation_required", "submission")
ROLES_ALLOWED = ("read_only", "config_read")  # runtime:read, configuration:read
CURSOR_SCHEMA = {
    "type": "object",
    "properties": {"cursor": {"type": "string"}},
    "required": ["cursor"],
}


@property_check("DRY-01", cases=st.one_of(s.within_budget_cases(), s.over_budget_cases()))
def test_preview_fields(ctx: CheckContext, case: Any) -> None:
    budget, result = case
    data = answer(ctx.dry_run(ctx.version(budget), result), "DRY-01")
    expect(isinstance(data, dict) and data.get("execution_verified") is False, "DRY-01",
           "execution_verified == false", f"{str(data)[:200]}")
    preview = data.get("context_preview")
    expect(isinstance(preview, dict) and preview.keys() >= PREVIEW_KEYS, "DRY-01",
           f"context_preview holding {sorted(PREVIEW_KEYS)}", f"{str(preview)[:200]}")
    # Sorted, so the message reads the same in every process (set order follows the hash seed).
    seen = {k: preview[k] for k in sorted(PREVIEW_KEYS - {"result"})}
    want = {
        "max_result_context_bytes": budget,
        "original_bytes": oracle.size(result),
        "retained_bytes": oracle.size(preview["result"]),
        "truncated": oracle.size(result) > budget,
    }
    expect(seen == want, "DRY-01", f"{want}", f"{seen}")


@property_check("DRY-02", cases=st.lists(st.sampled_from(NON_FINAL), max_size=4))
def test_no_completed_receipt_no_preview(ctx: CheckContext, case: Any) -> None:
    version = ctx.version(1024)
    body = {
        "agent_version": version.agent_version,
        "tool_name": version.tool_name,
        "arguments": {},
        "mock_receipts": [
            {"receipt_id": f"arck-{i}", "kind": kind, "result": {"n": i}}
            for i, kind in enumerate(case)
        ],
    }
    data = answer(ctx.target.dry_run(body), "DRY-02")
    expect(isinstance(data, dict) and "context_preview" in data and
           data["context_preview"] is None, "DRY-02",
           f"context_preview == null with receipts of kinds {case}", f"{str(data)[:200]}")


@check("DRY-05")
def test_unknown_version_tool_and_bad_arguments(ctx: CheckContext) -> None:
    version = ctx.version(1024, CURSOR_SCHEMA)
    unknown = {"agent_version": "arck-no-such-version", "tool_name": version.tool_name,
               "arguments": {"cursor": "a"}, "mock_receipts": []}
    exchange = ctx.target.dry_run(unknown)
    expect(exchange.status == 404, "DRY-05", "an unknown version refused as not found (404)",
           exchange.describe)
    missing_tool = {**unknown, "agent_version": version.agent_version, "tool_name": "arck.none"}
    exchange = ctx.target.dry_run(missing_tool)
    expect(exchange.status == 404, "DRY-05", "a tool not in the version refused as not found",
           exchange.describe)
    exchange = ctx.dry_run(version, {"ok": True}, arguments={"cursor": 7})
    expect(refused(exchange) and names(exchange, "cursor"), "DRY-05",
           "arguments not matching input_schema refused, naming the path (cursor)",
           exchange.describe)


@check("DRY-06")
def test_caller_needs_permission_and_scope(ctx: CheckContext) -> None:
    version = ctx.version(1024)
    secret = "arck-secret-result-7f3a"
    for role in ("no_permission", "no_scope"):
        exchange = ctx.dry_run(version, {"note": secret}, role=role)
        text = exchange.body.decode("utf-8", "replace")
        leaked = [x for x in (secret, version.system_prompt, version.tool_set_id) if x in text]
        expect(refused(exchange) and not leaked, "DRY-06",
               f"a caller without {'a permission' if role == 'no_permission' else 'scope'} "
               "refused, revealing nothing of the version", exchange.describe)
    for role in ROLES_ALLOWED:
        exchange = ctx.dry_run(version, {"note": secret}, role=role)
        expect(200 <= exchange.status < 300, "DRY-06",
               f"a caller with only {role.replace('_', ' ')} permission allowed",
               exchange.describe)


@check("DRY-07")
def test_first_completed_receipt_previewed(ctx: CheckContext) -> None:
    version = ctx.version(1024)
    body = {
        "agent_version": version.agent_version,
        "tool_name": version.tool_name,
        "arguments": {},
        "mock_receipts": [
            {"receipt_id": "arck-0", "kind": "progress", "result": {"n": 0}},
            {"receipt_id": "arck-1", "kind": "completed", "result": {"n": 1}},
            {"receipt_id": "arck-2", "kind": "completed", "result": {"n": 2, "x": "y" * 2000}},
        ],
    }
    data = answer(ctx.target.dry_run(body), "DRY-07")
    preview = data.get("context_preview") if isinstance(data, dict) else None
    expect(isinstance(preview, dict) and preview.get("result") == {"n": 1}, "DRY-07",
           "the first completed receipt (arck-1) previewed", f"{str(preview)[:200]}")


_DEEP = b"[" * 513 + b"]" * 513  # one level past BUD-23's 512


def _receipts_body(ctx: CheckContext, receipts: tuple[tuple[str, bytes], ...]) -> bytes:
    """A dry-run body whose mock receipts hold `(kind, raw result JSON)`, written as raw text
    because json.dumps cannot write NaN, lone surrogates or 4,301 digits."""
    version = ctx.version(1024)
    head = json.dumps({"agent_version": version.agent_version, "tool_name": version.tool_name,
                       "arguments": {}})[:-1].encode()
    items = b",".join(
        b'{"receipt_id":"arck-%d","kind":"%s","result":%s}' % (i, kind.encode(), raw)
        for i, (kind, raw) in enumerate(receipts)
    )
    return head + b',"mock_receipts":[' + items + b"]}"


MOCK_CASES: tuple[tuple[tuple[tuple[str, bytes], ...], int, str, str, str], ...] = (
    ((("completed", b"1"), ("completed", _DEEP)), 422, "validation_failed", "/mock_receipts/1",
     "a 513-level result in the second completed receipt (the first is the one previewed)"),
    ((("progress", _DEEP), ("completed", b"1")), 422, "validation_failed", "/mock_receipts/0",
     "a 513-level result in a progress receipt before the completed one"),
    ((("completed", b"1"), ("failed", b"NaN")), 400, "invalid_json", "/mock_receipts/1",
     "NaN in a failed receipt after the completed one"),
    ((("completed", b"1"), ("completed", b'"\\udc00"')), 400, "invalid_json",
     "/mock_receipts/1", "a lone surrogate in the second completed receipt"),
    ((("accepted", b"1" * 4301), ("completed", b"1")), 400, "invalid_json", "/mock_receipts/0",
     "an integer of 4,301 digits in an accepted receipt"),
)


@check("BUD-23", "PRO-01")
def test_mock_receipts_validated_like_real_ones(ctx: CheckContext) -> None:
    """Every mock receipt's result, previewed or not, is held to what a real one is: deeper
    than 512 levels is 422; NaN, a lone surrogate or more than 4,300 digits cannot even be sent
    (400 invalid_json); each refusal names /mock_receipts/i/result (BUD-23 names the path)."""
    for receipts, status, code, receipt, what in MOCK_CASES:
        exchange = ctx.target.dry_run(_receipts_body(ctx, receipts))
        data = exchange.json_or_none()
        error = data.get("error") if isinstance(data, dict) else None
        path = error.get("path") if isinstance(error, dict) else None
        where = f"{receipt}/result"
        named = isinstance(path, str) and (path == where or path.startswith(where + "/"))
        rid = "BUD-23" if status == 422 else "PRO-01"
        expect(exchange.status == status and isinstance(error, dict)
               and error.get("code") == code and named, rid,
               f"{status} {code} at {where}… for {what}", exchange.describe)
