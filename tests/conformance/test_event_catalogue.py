"""The run events catalogue (conformance/data/run_events.json) is the docs' list, and no type
of it goes unchecked.

(a) Every backticked `word.word` name in docs/runs.md and docs/executors.md is an event type
of the catalogue, or one of its `not_events` (a store column, a grant member; file names are
left out), and the catalogue has no type the docs do not name; the members the docs write
beside a type (`{"a", "b"}`, `: `a`, `b``, `(with `a`, `b`)`) are all in its entry.
(b) Every type of the catalogue is produced by a scenario of the events checks
(`SCENARIOS` of conformance/checks/test_runs_events.py, each judged there, each check
present), or names the check that produces it and that check's source names the type.
(c) The judgement itself (conformance/runevents.py) on hand-made event lists.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from arck.conformance import runevents
from arck.conformance.checks import test_runs_events as checks

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"`([a-z_]+\.[a-z_]+)`")
FILES = (".py", ".md", ".toml", ".json")
# The members written beside a type: `{"a", "b": "value" | ...}` right after it (a quoted
# name that is a value, after `:` or `|`, is left out); `: `a`, `b`` and `(with `a`, `b`)`.
BRACES = re.compile(r"`([a-z_]+\.[a-z_]+)`\s*`\{([^}]*)\}")
KEY = re.compile(r'(?<![:|] )(?<![:|])"([a-z_]+)"')
LISTED = re.compile(r"`([a-z_]+\.[a-z_]+)`\)?(?::|\s*\(with)\s*((?:`[a-z_]+`(?:,\s*)?)+)")


def _docs() -> str:
    catalogue = runevents.load()
    return "\n".join((ROOT / source).read_text("utf-8") for source in catalogue.sources)


def _named(text: str) -> set[str]:
    return {n for n in NAME.findall(text) if not n.endswith(FILES)}


def _members(text: str) -> list[tuple[str, str]]:
    """(type, member) for every member the docs write beside a type."""
    found = [(kind, key) for kind, inside in BRACES.findall(text)
             for key in KEY.findall(inside)]
    found += [(kind, key) for kind, names in LISTED.findall(text)
              for key in re.findall(r"`([a-z_]+)`", names)]
    return found


def _known(spec: runevents.EventSpec) -> set[str]:
    names = set(spec.members) | set(spec.optional)
    for case in spec.cases:
        names |= set(case.get("members", {})) | set(case.get("optional", {}))
    return names


def test_every_event_type_the_docs_name_is_in_the_catalogue() -> None:
    catalogue = runevents.load()
    named = _named(_docs())
    events = named - set(catalogue.not_events)
    assert sorted(events - set(catalogue.events)) == [], "named in the docs, not catalogued"
    assert sorted(set(catalogue.events) - events) == [], "catalogued, named in no doc"
    assert sorted(set(catalogue.not_events) - named) == [], "stale not_events entries"


def test_the_members_the_docs_write_are_catalogued() -> None:
    catalogue = runevents.load()
    found = _members(_docs())
    assert len(found) >= 30, found  # the patterns still match the docs' writing
    missing = sorted({(kind, key) for kind, key in found
                      if kind in catalogue.events and key not in _known(catalogue.events[kind])})
    assert missing == [], "members the docs write beside a type, not in its entry"


def test_every_catalogued_event_type_is_produced_by_a_check() -> None:
    catalogue = runevents.load()
    produced = {kind for group in checks.SCENARIOS.values() for s in group
                for kind in s.produces}
    assert produced <= set(catalogue.events), sorted(produced - set(catalogue.events))
    elsewhere = {name: spec.produced_elsewhere for name, spec in catalogue.events.items()
                 if spec.produced_elsewhere}
    unproduced = sorted(set(catalogue.events) - produced - set(elsewhere))
    assert unproduced == [], "event types no check produces"
    for kind, where in elsewhere.items():
        path, _, _function = where.partition("::")
        source = (ROOT / path).read_text("utf-8")
        assert kind in source, f"{kind}: said to be produced by {where}, which never names it"


def test_every_events_scenario_is_judged_by_its_check() -> None:
    source = inspect.getsource(checks)
    for check, scenarios in checks.SCENARIOS.items():
        function = getattr(checks, check, None)
        assert callable(function), f"SCENARIOS names no check {check}"
        assert "RUN-16" in str(function.pytestmark), check
        for scenario in scenarios:
            assert f'_judge(w, "{scenario.name}"' in source, scenario.name


# -- (c) the judgement ---------------------------------------------------------------------


def _event(n: int, kind: str, **data: Any) -> dict[str, Any]:
    return {"id": n, "type": kind, "at": 1767225600.0 + n, "data": data}


def _completed() -> list[dict[str, Any]]:
    started = {"call_id": "mc-1", "purpose": "main", "channel_id": "ch-1", "raw_estimate": 70,
               "calibrated_estimate": 70, "coefficient": 1.0, "coefficient_real": 0,
               "coefficient_raw": 0, "samples": 0, "effective_budget": 98_000,
               "reservation": 232_000, "compaction": {"decision": "none", "reason": "below 70%",
                                                      "estimate_before": 70,
                                                      "ratio_before": "1/1400"}}
    return [
        _event(1, "run.created", session_id="ses-1"), _event(2, "run.queued"),
        _event(3, "model_call.started", **started),
        _event(4, "model_call.finished", call_id="mc-1", outcome="answered",
               usage={"prompt_tokens": 96}, charge=67, collected=67, released=231_933),
        _event(5, "run.ended", end_reason="completed"),
    ]


def test_a_well_formed_run_has_no_findings() -> None:
    assert runevents.judge(_completed(), "completed") == []


@pytest.mark.parametrize(("change", "words"), [
    (lambda e: e.pop(4), "exactly one `run.ended`"),
    (lambda e: e.insert(1, e.pop(0)), "`run.created` first"),
    (lambda e: e.pop(1), "`run.queued` before"),
    (lambda e: e[4]["data"].update(end_reason="cancelled"), "snapshot's"),
    (lambda e: e[2]["data"].pop("reservation"), "`reservation` missing"),
    (lambda e: e[2]["data"].update(raw_estimate=70.0), "`raw_estimate` = 70.0"),
    (lambda e: e[3].update(id=7), "event ids 1, 2"),
    (lambda e: e.append(_event(6, "tool_call.claimed", call_id="tc-1", claim_id="cl-1",
                               executor_id="exe-1", lease_until=1.0)), "after `run.ended`"),
    (lambda e: e[3]["data"].update(call_id="mc-9"), "whose `model_call.started`"),
    (lambda e: e[2]["data"]["compaction"].update(decision="local"), "compaction.applied"),
    (lambda e: e[2]["data"].update(coefficient=0.0), "`coefficient` = `coefficient_real`"),
    (lambda e: e[2]["data"].update(coefficient_real=5, coefficient_raw=4, coefficient=1.25),
     "no sample, no sums"),
    (lambda e: e[2]["data"].update(calibrated_estimate=71), "calibrated estimate is the raw"),
    (lambda e: e[2]["data"].update(samples=2, coefficient_real=3, coefficient_raw=4,
                                   coefficient=0.7), "(3/4)"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_the_judgement_finds_each_defect(change: Any, words: str) -> None:
    events = _completed()
    change(events)
    found = runevents.judge([{**e, "id": n} for n, e in enumerate(events, 1)]
                            if words != "event ids 1, 2" else events, "completed")
    assert any(words in f.expected or words in f.seen for f in found), found


def test_members_by_case_and_place() -> None:
    spec = runevents.load().events["receipt.stored"]
    data: dict[str, Any] = {"kind": "submission", "protected": True, "original_bytes": 11,
                            "retained_bytes": 11}
    kept: dict[str, Any] = {"id": 1, "type": "receipt.stored", "at": 1.0, "data": data}
    assert runevents.schema_problems(kept, spec, after_end=False) == []
    cut = {**kept, "data": {**data, "retained_bytes": 10}}
    assert runevents.schema_problems(cut, spec, after_end=False)
    unflagged = {**kept, "data": {"kind": "submission", "original_bytes": 1,
                                  "retained_bytes": 1}}
    assert runevents.schema_problems(unflagged, spec, after_end=False)
    reconciled = runevents.load().events["model_call.reconciled"]
    late = {"id": 2, "type": "model_call.reconciled", "at": 2.0,
            "data": {"call_id": "mc-1", "verdict": "processed", "provider_request": "r"}}
    assert runevents.schema_problems(late, reconciled, after_end=True)  # charge, ...
    assert runevents.schema_problems(late, reconciled, after_end=False)  # resent
    assert not runevents.conforms(True, "integer")
    assert runevents.conforms(None, ["number", "null"])


def test_sse_messages_are_parsed() -> None:
    body = (b": keep-alive\n\nid: 1\nevent: run.queued\ndata: {\"id\":1}\n\n"
            b"id: 2\r\nevent: run.ended\r\ndata: {}\r\n\r\nid: 3\n")
    messages, rest = runevents.parse_sse(body)
    assert messages == [{"id": "1", "event": "run.queued", "data": '{"id":1}'},
                        {"id": "2", "event": "run.ended", "data": "{}"}]
    assert rest == "id: 3\n"


def test_a_model_call_after_a_batch_needs_the_run_queued_again() -> None:
    """Between a tool plan's acceptance and the next model call the run was queued again:
    the judgement finds the missing `run.queued` (a requeue that records no event)."""
    events = _completed()[:4]
    plan = [_event(5, "tool_plan.accepted", call_ids=["tc-1"]),
            _event(6, "model_call.started", **{**events[2]["data"], "call_id": "mc-2"})]
    found = runevents.judge(events + plan, "completed")
    assert any("between a `tool_plan.accepted`" in f.expected for f in found), found
    requeued = [*events, plan[0], _event(6, "run.queued"), {**plan[1], "id": 7}]
    assert not any("between a `tool_plan.accepted`" in f.expected
                   for f in runevents.judge(requeued, "completed"))
