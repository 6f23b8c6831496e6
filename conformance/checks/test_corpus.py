"""JSONTestSuite (nst/JSONTestSuite, MIT) against every JSON endpoint and as a receipt result.

`y_` files must be measured exactly (BUD-01), `n_` files refused (BUD-05); as whole request
bodies every file gets a documented 4xx, never a 5xx (PRO-01, PRO-02): on the tool endpoints
every file, on those of runs, wallets and executors every file strict parsing refuses (a
valid `{}` is a real request there: a cancel, a heartbeat, a claim).
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
from arck.conformance.runworld import world
from arck.simulator.provider import Step

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
        _judge_refusals(ctx, path, "full", sorted(corpus().items()))


def _judge_refusals(ctx: CheckContext, path: str, role: str,
                    bodies: list[tuple[str, bytes]]) -> None:
    """Each body POSTed whole to `path` as `role`: a documented 4xx with the error shape."""
    for name, raw in bodies:
        exchange = ctx.target.request("POST", path, content=raw, role=role)
        problem = error_shape_problem(exchange)
        expect(exchange.status in DOCUMENTED_REFUSALS and problem is None,
               ("PRO-01", "PRO-02"),
               f"POST {path} with body {name}: a documented 4xx {DOCUMENTED_REFUSALS}",
               lambda: f"{exchange.describe()} ({problem})")  # noqa: B023


# RFC 8259 lets a parser ignore a byte order mark, and PRO-01 does not name it: where `{}` is
# a whole request (a cancel, a heartbeat), a BOM before it may be taken.
_MAY_BE_TAKEN = frozenset({"i_structure_UTF-8_BOM_empty_object.json"})


def _not_strict(name: str, raw: bytes) -> bool:
    """A corpus file strict parsing must refuse: every n_ file, and i_ files strict JSON
    does not allow (lone surrogates, huge exponents, invalid UTF-8...)."""
    return name.startswith(("n_", "i_")) and name not in _MAY_BE_TAKEN and \
        not _strictly_valid(raw)


@check("PRO-01", "PRO-02")
def test_corpus_bodies_on_runs_and_executors(ctx: CheckContext) -> None:
    """Every JSONTestSuite body strict parsing refuses, sent whole to each JSON endpoint of
    runs, wallets and executors (as the credential each takes), gets a documented 4xx with
    the error shape, never a 5xx; and nothing moved: the call they were aimed at is then
    claimed, accepted and answered as usual, and its run completes."""
    ctx.require_destructive()
    w = world(ctx)
    run_id, _, call_id = w.waiting_call({"q": "hostile bodies"})
    role = w.executor()
    idle = w.session(w.agent([Step(text="idle")]), w.wallet(0))
    wallet = w.wallet(0)
    endpoints = (
        ("/v1/channels", "full"), ("/v1/wallets", "full"),
        (f"/v1/wallets/{wallet}/deposits", "full"), ("/v1/sessions", "full"),
        (f"/v1/sessions/{idle}/runs", "full"), (f"/v1/runs/{run_id}/input", "full"),
        (f"/v1/runs/{run_id}/cancel", "full"), ("/v1/executors", "full"),
        ("/v1/executor/heartbeat", role), (f"/v1/tool-calls/{call_id}/claims", role),
        (f"/v1/tool-calls/{call_id}/receipts", role),
        (f"/v1/tool-calls/{call_id}/detach", role), (f"/v1/tool-calls/{call_id}/cancel", "full"),
    )
    bodies = [(n, raw) for n, raw in sorted(corpus().items()) if _not_strict(n, raw)]
    for path, who in endpoints:
        _judge_refusals(ctx, path, who, bodies)
    answered = w.answer(call_id, {"status": "ok"}, "arck-after-hostile-bodies")
    expect(200 <= answered.status < 300, "PRO-01", "the call claimed, accepted and answered "
           "after the refused bodies", answered.describe)
    snapshot, _ = w.settle(run_id)
    expect(snapshot.get("end_reason") == "completed", "PRO-01", "its run completed",
           str(snapshot))
