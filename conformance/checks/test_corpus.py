"""JSONTestSuite (nst/JSONTestSuite, MIT) against every JSON endpoint and as a receipt result.

`y_` files must be measured exactly (BUD-01), `n_` files refused (BUD-05); as whole request
bodies every file gets a documented 4xx, never a 5xx (PRO-01, PRO-02).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from arck.conformance import oracle
from arck.conformance.checking import check, expect
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure
from arck.conformance.judge import context_preview, error_shape_problem, refused, strict_json

DOCUMENTED_REFUSALS = (400, 413, 422)


@cache
def corpus() -> dict[str, bytes]:
    folder = resources.files("arck.conformance").joinpath("data/JSONTestSuite/test_parsing")
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.name.endswith(".json")}


def _strictly_valid(body: bytes) -> bool:
    try:
        strict_json(body)
    except (ValueError, RecursionError):
        return False
    return True


@check("BUD-01")
def test_corpus_valid_results_measured(ctx: CheckContext) -> None:
    for name, raw in sorted(corpus().items()):
        if not name.startswith("y_"):
            continue
        body = ctx.raw_dry_run_body(ctx.version(32768), raw)
        if not _strictly_valid(body):  # e.g. y_object_duplicated_key: valid JSON, not strict
            continue
        value = json.loads(raw)
        preview = context_preview(ctx.target.dry_run(body), "BUD-01")
        want = oracle.size(value)
        if preview["original_bytes"] != want:
            raise CheckFailure("BUD-01", f"original_bytes == {want} for {name}",
                               f"{preview['original_bytes']!r}", example={"file": name})


@check("BUD-05")
def test_corpus_invalid_results_refused(ctx: CheckContext) -> None:
    for name, raw in sorted(corpus().items()):
        if not name.startswith(("n_", "i_")):
            continue
        body = ctx.raw_dry_run_body(ctx.version(32768), raw)
        if _strictly_valid(body):
            continue  # an i_ file holding something strict JSON allows
        exchange = ctx.target.dry_run(body)
        expect(refused(exchange), "BUD-05", f"a receipt whose result is {name} refused (4xx)",
               exchange.describe)


def _json_endpoints(ctx: CheckContext) -> list[str]:
    version = ctx.version(1024)
    return ["/v1/bindings", "/v1/tool-sets", f"/v1/agents/{version.agent_id}/versions",
            "/v1/tools/dry-run"]


@check("PRO-01", "PRO-02")
def test_corpus_whole_bodies(ctx: CheckContext) -> None:
    ctx.require_destructive()
    for path in _json_endpoints(ctx):
        for name, raw in sorted(corpus().items()):
            exchange = ctx.target.request("POST", path, content=raw)
            problem = error_shape_problem(exchange)
            expect(exchange.status in DOCUMENTED_REFUSALS and problem is None,
                   ("PRO-01", "PRO-02"),
                   f"POST {path} with body {name}: a documented 4xx {DOCUMENTED_REFUSALS}",
                   lambda: f"{exchange.describe()} ({problem})")  # noqa: B023


