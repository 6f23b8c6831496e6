"""The reference profile's run events as data, and the judgement of one run's events.

`conformance/data/run_events.json` lists every event type docs/runs.md and docs/executors.md
name, with the members the docs write next to it (tests/conformance/test_event_catalogue.py
keeps the two equal). `judge` reads a run's event list against it and against the order the
docs state; it returns findings instead of raising, so a check can say which run, which event
and how to replay. Nothing here knows an engine: only the docs' facts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, TypeGuard

__all__ = ["Catalogue", "EventSpec", "Finding", "conforms", "judge", "load", "parse_sse",
           "schema_problems"]

CREATED = "run.created"
ENDED = "run.ended"
# After `run.ended` only the settlement of a model call started before it may come: its
# answer (a cancelled run still settles its call) or a cost-pending reconciliation
# (docs/runs.md, Decisions "Run events"; Leases and recovery).
AFTER_END = frozenset({"model_call.finished", "model_call.reconciled"})
CALL_EVENTS = ("model_call.finished", "model_call.retry_scheduled", "model_call.given_up",
               "model_call.reconciled")
DECISION_EVENTS = (("local", "compaction.applied", "local"),
                   ("summary", "compaction.applied", "summary"),
                   ("summary_refused", "compaction.refused", None))


@dataclass(frozen=True)
class EventSpec:
    """One documented event type: its members as data (see the catalogue's `about`)."""

    name: str
    doc: str
    requirements: tuple[str, ...]
    members: Mapping[str, Any]
    optional: Mapping[str, Any] = field(default_factory=dict)
    cases: tuple[Mapping[str, Any], ...] = ()
    any_of: tuple[tuple[str, ...], ...] = ()
    produced_elsewhere: str | None = None


@dataclass(frozen=True)
class Catalogue:
    sources: tuple[str, ...]
    envelope: Mapping[str, Any]
    events: Mapping[str, EventSpec]
    not_events: Mapping[str, str]


@dataclass(frozen=True)
class Finding:
    """One thing a run's events got wrong: the IDs it names, what the docs say, what was
    seen."""

    requirements: tuple[str, ...]
    expected: str
    seen: str


@cache
def load() -> Catalogue:
    text = resources.files("arck.conformance").joinpath("data/run_events.json").read_text(
        "utf-8")
    raw = json.loads(text)
    events = {
        name: EventSpec(
            name=name, doc=spec["doc"], requirements=tuple(spec["requirements"]),
            members=spec["members"], optional=spec.get("optional", {}),
            cases=tuple(spec.get("cases", ())),
            any_of=tuple(tuple(group) for group in spec.get("any_of", ())),
            produced_elsewhere=spec.get("produced_elsewhere"),
        )
        for name, spec in raw["events"].items()
    }
    return Catalogue(tuple(raw["sources"]), raw["envelope"], events, raw["not_events"])


# -- members -------------------------------------------------------------------------------

_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
    "any": lambda v: True,
}


def conforms(value: Any, spec: Any) -> bool:
    """Whether `value` is what a member spec of the catalogue asks."""
    if isinstance(spec, str):
        return _TYPES[spec](value)
    if isinstance(spec, list):
        return any(conforms(value, one) for one in spec)
    if "const" in spec:
        return _same(value, spec["const"])
    if "enum" in spec:
        return any(_same(value, v) for v in spec["enum"])
    if "object" in spec:
        return isinstance(value, dict) and not _missing(value, spec["object"])
    if "array" in spec:
        return isinstance(value, list) and all(conforms(v, spec["array"]) for v in value)
    raise ValueError(f"unknown member spec {spec!r} in the run events catalogue")


def _same(value: Any, want: Any) -> bool:
    """Equal and of the same JSON kind (true is not 1)."""
    return type(value) is type(want) and value == want


def _missing(data: Mapping[str, Any], members: Mapping[str, Any]) -> list[str]:
    """The members absent from `data` or not as their spec says, each named with why."""
    wrong = []
    for name, spec in members.items():
        if name not in data:
            wrong.append(f"`{name}` missing")
        elif not conforms(data[name], spec):
            wrong.append(f"`{name}` = {_short(data[name])}, not {_describe(spec)}")
    return wrong


def _describe(spec: Any) -> str:
    if isinstance(spec, str):
        return f"a JSON {spec}" if spec != "any" else "anything"
    if isinstance(spec, list):
        return " or ".join(_describe(s) for s in spec)
    if "const" in spec:
        return json.dumps(spec["const"])
    if "enum" in spec:
        return "one of " + ", ".join(json.dumps(v) for v in spec["enum"])
    if "object" in spec:
        return "an object with " + ", ".join(f"`{m}`" for m in spec["object"])
    return f"an array of {_describe(spec['array'])}"


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "…"


def _matches(data: Mapping[str, Any], case: Mapping[str, Any], after_end: bool) -> bool:
    where = case.get("where")
    if where is not None and (where == "after run.ended") != after_end:
        return False
    return all(name in data and conforms(data[name], want if isinstance(want, dict) else
                                         {"const": want})
               for name, want in case.get("when", {}).items())


def schema_problems(event: Mapping[str, Any], spec: EventSpec, *, after_end: bool) -> list[str]:
    """What in `event` (one item of the JSON list) the catalogue's entry does not allow."""
    data = event.get("data")
    if not isinstance(data, dict):
        return [f"`data` = {_short(data)}, not an object"]
    wrong = _missing(data, spec.members)
    wrong += [w for name, s in spec.optional.items() if name in data
              for w in _missing(data, {name: s})]
    if spec.any_of and not any(all(m in data for m in group) for group in spec.any_of):
        wrong.append("none of " + " / ".join("+".join(f"`{m}`" for m in g) for g in spec.any_of))
    for case in spec.cases:
        if not _matches(data, case, after_end):
            continue
        label = _case_label(case)
        wrong += [f"{w} ({label})" for w in _missing(data, case.get("members", {}))]
        wrong += [f"{w} ({label})" for name, s in case.get("optional", {}).items()
                  if name in data for w in _missing(data, {name: s})]
        for a, b in case.get("equal", ()):
            if a in data and b in data and data[a] != data[b]:
                wrong.append(f"`{a}` {_short(data[a])} ≠ `{b}` {_short(data[b])} ({label})")
    return wrong


def _case_label(case: Mapping[str, Any]) -> str:
    parts = [f"{k} {_short(v)}" for k, v in case.get("when", {}).items()]
    if "where" in case:
        parts.append(str(case["where"]))
    return "when " + ", ".join(parts)


# -- one run ---------------------------------------------------------------------------------


def judge(events: Sequence[Any], end_reason: Any, catalogue: Catalogue | None = None
          ) -> list[Finding]:
    """Everything a run's event list (of an ended run whose snapshot says `end_reason`) gets
    wrong against the catalogue and the order docs/runs.md states:

    * each item is `{"id", "type", "at", "data"}` and ids count 1, 2, ... (Ids);
    * `run.created` first, once;
    * each documented type has its members, of their types (the catalogue);
    * exactly one `run.ended`, its `end_reason` the snapshot's; after it only the settlement
      of a model call started before it (`model_call.finished`, `model_call.reconciled`);
    * a run refused at admission (`admission.refused`) is never queued and calls no model;
      any other run records `run.queued` before its first `model_call.started` (RUN-01),
      and again between a `tool_plan.accepted` and the next `model_call.started` (the run
      waited for its batch: it is queued again when the batch is final, Receipts);
    * every model-call event names a call whose `model_call.started` came before it, a call
      finishes at most once, and every call started is settled (finished or reconciled);
      a retry's `retry.of` names a call refused before it;
    * a settlement's money adds up (Cost-pending calls): what the wallet paid is at most the
      charge, paid + released = the call's reservation, and a call the provider refused or
      never processed costs nothing;
    * a takeover names the worker that held the run (the latest `run.started` or
      `run.recovered`) and a lease that lapsed before it;
    * a claim names a call of a tool plan accepted before it (RUN-16: accepted before any
      dispatch); an acceptance or a detach names an earlier claim, and a detach's
      `accepted` says whether that claim's acceptance came before it;
    * a main call whose compaction decision is `local`, `summary`, `local+summary` or
      `summary_refused` comes after the `compaction.applied` / `compaction.refused` that
      made it, since the previous main call (Generations, Validation);
    * a main call's `coefficient` is `coefficient_real` / `coefficient_raw` (1 with no
      sample, when the sums are 0 and the calibrated estimate is the raw one).
    """
    catalogue = catalogue or load()
    found: list[Finding] = []
    profile = ("RUN-16",)

    def add(requirements: Iterable[str], expected: str, seen: str) -> None:
        found.append(Finding(tuple(requirements), expected, seen))

    shaped = [e for e in events if isinstance(e, dict)]
    bad = [i for i, e in enumerate(events)
           if not isinstance(e, dict) or _missing(e, catalogue.envelope)]
    if bad:
        add(profile, 'each event `{"id": integer, "type": string, "at": number, "data": '
            'object}` (docs/runs.md, Wire)', f"item {bad[0]}: {_short(events[bad[0]], 300)}")
    ids = [e.get("id") for e in shaped]
    if ids != list(range(1, len(shaped) + 1)):
        add(profile, f"event ids 1, 2, ..., {len(shaped)} in order (docs/runs.md: \"Event ids "
            "count 1, 2, ... per run\")", f"ids {_short(ids, 300)}")
    kinds = [str(e.get("type")) for e in shaped]
    if kinds[:1] != [CREATED] or kinds.count(CREATED) != 1:
        add(profile, f"`{CREATED}` first, once (docs/runs.md, Run events)",
            f"types {_short(kinds, 400)}")
    ended = [i for i, k in enumerate(kinds) if k == ENDED]
    if len(ended) != 1:
        add(profile, "exactly one `run.ended` event for the ended run", f"{len(ended)} in "
            f"types {_short(kinds, 400)}")
    end_at = ended[0] if ended else len(shaped)
    for i, event in enumerate(shaped):
        spec = catalogue.events.get(kinds[i])
        if spec is None:
            continue  # the docs forbid no other type
        wrong = schema_problems(event, spec, after_end=i > end_at)
        if wrong:
            add(spec.requirements, f"`{spec.name}` with the members of {spec.doc}",
                f"event {event.get('id')}: {'; '.join(wrong)}; data {_short(event.get('data'))}")
    if ended:
        data = shaped[end_at].get("data")
        reason = data.get("end_reason") if isinstance(data, dict) else None
        if reason != end_reason:
            add(profile, "`run.ended`'s `end_reason` equal to the snapshot's "
                f"{_short(end_reason)}", f"event {shaped[end_at].get('id')}: "
                f"{_short(reason)}")
        late = [(e.get("id"), kinds[i]) for i, e in enumerate(shaped)
                if i > end_at and kinds[i] not in AFTER_END]
        if late:
            add(profile, "after `run.ended` only `model_call.finished` or "
                "`model_call.reconciled` of a call started before it", f"{late[:5]}")
    found += _admission(shaped, kinds)
    found += _requeued(kinds)
    found += _calls(shaped, kinds, end_at)
    found += _money(shaped, kinds)
    found += _holders(shaped, kinds)
    found += _claims(shaped, kinds)
    found += _compactions(shaped, kinds)
    found += _coefficients(shaped, kinds)
    return found


def _coefficients(shaped: Sequence[Mapping[str, Any]], kinds: list[str]) -> list[Finding]:
    """A main call's `coefficient` is its own sums' ratio, `coefficient_real` /
    `coefficient_raw`, and 1 with no sample (`samples` 0, both sums 0); with no sample the
    calibrated estimate is the raw one (docs/runs.md, Decisions)."""
    found: list[Finding] = []
    for i, event in enumerate(shaped):
        data = _data(event)
        if kinds[i] != "model_call.started" or data.get("purpose") != "main":
            continue
        c, real, raw, samples = (data.get(k) for k in (
            "coefficient", "coefficient_real", "coefficient_raw", "samples"))
        if not (isinstance(c, int | float) and _whole(real) and _whole(raw)
                and _whole(samples)):
            continue  # the members' types are the catalogue's to judge
        where = f"event {event.get('id')}: {_short(data)}"
        ratio = real / raw if raw > 0 else 1.0
        if abs(c - ratio) > 1e-9 * max(1.0, abs(ratio)):
            found.append(Finding(("RUN-15", "RUN-16"), "`coefficient` = `coefficient_real` / "
                                 f"`coefficient_raw` ({real}/{raw}), 1 when the raw sum is 0",
                                 where))
        if samples == 0 and (real, raw) != (0, 0):
            found.append(Finding(("RUN-15", "RUN-16"), "no sample, no sums: "
                                 "`coefficient_real` and `coefficient_raw` 0", where))
        if samples == 0 and data.get("calibrated_estimate") != data.get("raw_estimate"):
            found.append(Finding(("RUN-15", "RUN-16"), "with no sample the calibrated estimate "
                                 "is the raw one", where))
    return found


def _data(event: Mapping[str, Any]) -> Mapping[str, Any]:
    data = event.get("data")
    return data if isinstance(data, dict) else {}


def _admission(shaped: Sequence[Mapping[str, Any]], kinds: list[str]) -> list[Finding]:
    started = kinds.index("model_call.started") if "model_call.started" in kinds else None
    if "admission.refused" in kinds:
        # never queued, so never taken by a worker: nothing but its creation, the refusal and
        # its end (docs/runs.md, Admission and Run events)
        other = [k for k in kinds if k not in ("run.created", "admission.refused", "run.ended")]
        if other:
            return [Finding(("RUN-16",), "a run refused at admission never queued, taken or "
                            "calling a model: only `run.created`, `admission.refused` and "
                            "`run.ended` (docs/runs.md, Admission)",
                            f"also {_short(other, 200)} in types {_short(kinds, 400)}")]
        return []
    if started is not None and "run.queued" not in kinds[:started]:
        return [Finding(("RUN-16",), "`run.queued` before the first `model_call.started` "
                        "(a run is queued before a worker claims it)",
                        f"types {_short(kinds, 400)}")]
    return []


def _requeued(kinds: list[str]) -> list[Finding]:
    """A model call after a tool plan was accepted comes after a `run.queued` that follows the
    plan: the run waited for its batch and was queued again."""
    for i, kind in enumerate(kinds):
        if kind != "tool_plan.accepted":
            continue
        later = kinds[i + 1:]
        if "model_call.started" in later:
            before_next = later[:later.index("model_call.started")]
            if "run.queued" not in before_next:
                return [Finding(("RUN-16",), "`run.queued` between a `tool_plan.accepted` and "
                                "the next `model_call.started` (docs/runs.md, Receipts: the "
                                "run is queued again once its batch is final)",
                                f"types {_short(kinds, 400)}")]
    return []


def _calls(shaped: Sequence[Mapping[str, Any]], kinds: list[str], end_at: int
           ) -> list[Finding]:
    found: list[Finding] = []
    model = ("RUN-16", "RUN-15")
    started: set[Any] = set()
    finished: set[Any] = set()
    reconciled: set[Any] = set()
    refused: set[Any] = set()
    for i, event in enumerate(shaped):
        data = _data(event)
        call = data.get("call_id")
        if kinds[i] == "model_call.started":
            if i > end_at:
                found.append(Finding(model, "no model call started after `run.ended`",
                                     f"event {event.get('id')}: {_short(data)}"))
            retry = data.get("retry")
            if isinstance(retry, dict) and retry.get("of") not in refused:
                found.append(Finding(model, "a retry's `retry.of` naming a model call refused "
                                     "before it (docs/runs.md, Refused calls)",
                                     f"event {event.get('id')}: retry {_short(retry)}; "
                                     f"refused before: {sorted(map(str, refused))}"))
            started.add(call)
        elif kinds[i] in CALL_EVENTS:
            if call not in started:
                found.append(Finding(model, f"`{kinds[i]}` naming a model call whose "
                                     "`model_call.started` came before it",
                                     f"event {event.get('id')}: call_id {_short(call)}"))
            if kinds[i] == "model_call.finished":
                if call in finished:
                    found.append(Finding(model, "one `model_call.finished` per model call",
                                         f"event {event.get('id')}: {_short(call)} again"))
                finished.add(call)
                if data.get("outcome") == "refused":
                    refused.add(call)
            elif kinds[i] == "model_call.reconciled":
                reconciled.add(call)
    unsettled = sorted(map(str, started - finished - reconciled))
    if unsettled:
        found.append(Finding(model, "each model call started settled in the events: its "
                             "`model_call.finished` (with its usage or why it has none) or "
                             "`model_call.reconciled`", f"no settlement for {unsettled[:5]}"))
    return found


def _money(shaped: Sequence[Mapping[str, Any]], kinds: list[str]) -> list[Finding]:
    """The figures of `model_call.finished` and `model_call.reconciled` against each other and
    against the call's reservation (docs/runs.md, Billing and Cost-pending calls)."""
    found: list[Finding] = []
    billing = ("RUN-16", "BIL-03")
    reserved: dict[Any, int] = {}
    for i, event in enumerate(shaped):
        data = _data(event)
        call = data.get("call_id")
        if kinds[i] == "model_call.started" and _whole(data.get("reservation")):
            reserved[call] = data["reservation"]
        if kinds[i] not in ("model_call.finished", "model_call.reconciled"):
            continue
        charge, collected, released = (data.get(k) for k in ("charge", "collected", "released"))
        where = f"event {event.get('id')} ({kinds[i]}): {_short(data)}"
        if _whole(charge) and _whole(collected) and not 0 <= collected <= charge:
            found.append(Finding(billing, "`collected` between 0 and `charge` (the wallet pays "
                                 "at most the call's cost)", where))
        if _whole(collected) and _whole(released) and call in reserved \
                and collected + released != reserved[call]:
            found.append(Finding(billing, f"`collected` + `released` = the call's reservation "
                                 f"{reserved[call]} (its model_call.started)", where))
        if kinds[i] == "model_call.reconciled" and \
                data.get("verdict") in ("refused", "not_processed") and \
                (charge not in (None, 0) or collected not in (None, 0)):
            found.append(Finding(billing, "a call the provider refused or never processed "
                                 "costs nothing: `charge` and `collected` 0 (the reservation "
                                 "released)", where))
    return found


def wallet_findings(events: Sequence[Any], wallet: Mapping[str, Any]) -> list[Finding]:
    """The wallet of a run that alone used it, against the run's own money events: `charged`
    is the sum of `collected`, and `reserved` is what the started calls reserved less what
    their settlements collected or released (a cost-pending call's reservation still held).
    An engine whose settlement moves one figure and reports another agrees with itself in
    the events and only the wallet shows it (docs/runs.md, Billing; BIL-04)."""
    shaped = [e for e in events if isinstance(e, dict)]
    reserved = collected = settled = 0
    for event in shaped:
        data = _data(event)
        if event.get("type") == "model_call.started" and _whole(data.get("reservation")):
            reserved += data["reservation"]
        if event.get("type") in ("model_call.finished", "model_call.reconciled"):
            paid, freed = data.get("collected"), data.get("released")
            collected += paid if _whole(paid) else 0
            settled += (paid if _whole(paid) else 0) + (freed if _whole(freed) else 0)
    found: list[Finding] = []
    where = f"wallet {_short(dict(wallet), 300)}"
    if wallet.get("charged") != collected:
        found.append(Finding(("BIL-04", "RUN-16"), f"the wallet's `charged` {collected}: the "
                             "sum of `collected` in the run's settlements", where))
    if wallet.get("reserved") != reserved - settled:
        found.append(Finding(("BIL-04", "RUN-16"), f"the wallet's `reserved` {reserved - settled}"
                             f": {reserved} reserved by the run's calls, less {settled} "
                             "collected or released by their settlements", where))
    return found


def _holders(shaped: Sequence[Mapping[str, Any]], kinds: list[str]) -> list[Finding]:
    """`run.recovered` against the run's own record of who held it (Leases and recovery)."""
    found: list[Finding] = []
    holder: Any = None
    for i, event in enumerate(shaped):
        data = _data(event)
        if kinds[i] == "run.recovered":
            where = f"event {event.get('id')}: {_short(data)}"
            if data.get("previous_worker") != holder:
                found.append(Finding(("RUN-16",), "`run.recovered`'s `previous_worker` the "
                                     f"worker that held the run ({_short(holder)}, from the "
                                     "latest run.started or run.recovered)", where))
            lapsed, at = data.get("lease_expired_at"), event.get("at")
            if isinstance(lapsed, int | float) and isinstance(at, int | float) and lapsed > at:
                found.append(Finding(("RUN-16",), "`lease_expired_at` no later than the "
                                     f"takeover itself (at {at})", where))
        if kinds[i] in ("run.started", "run.recovered"):
            holder = data.get("worker")
    return found


def _whole(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _claims(shaped: Sequence[Mapping[str, Any]], kinds: list[str]) -> list[Finding]:
    """A claim of a call of an accepted plan; an acceptance or a detach naming a claim made
    before it; a detach's `accepted` saying whether that claim's acceptance came first."""
    found: list[Finding] = []
    planned: set[Any] = set()
    claims: set[Any] = set()
    confirmed: set[Any] = set()
    for i, event in enumerate(shaped):
        data = _data(event)
        where = f"event {event.get('id')}: {_short(data)}"
        claim = data.get("claim_id")
        if kinds[i] == "tool_plan.accepted" and isinstance(data.get("call_ids"), list):
            planned.update(data["call_ids"])
        elif kinds[i] == "tool_call.claimed":
            claims.add(claim)
            if data.get("call_id") not in planned:
                found.append(Finding(("RUN-16",), "a tool call claimed only after the "
                                     "`tool_plan.accepted` listing it (RUN-16: formally "
                                     "accepted before any dispatch)", f"{where}; accepted "
                                     f"before: {sorted(map(str, planned))}"))
        elif kinds[i] in ("tool_call.accepted", "tool_call.detached") and claim not in claims:
            found.append(Finding(("RUN-16",), f"`{kinds[i]}` naming a claim of an earlier "
                                 "`tool_call.claimed`", where))
        if kinds[i] == "tool_call.accepted":
            confirmed.add(claim)
        elif kinds[i] == "tool_call.detached" and isinstance(data.get("accepted"), bool) \
                and data["accepted"] != (claim in confirmed):
            found.append(Finding(("RUN-16",), "`tool_call.detached`'s `accepted` true exactly "
                                 f"when the claim's `tool_call.accepted` came before it "
                                 f"({claim in confirmed} here)", where))
    return found


def _compactions(shaped: Sequence[Mapping[str, Any]], kinds: list[str]) -> list[Finding]:
    found: list[Finding] = []
    since: list[tuple[str, Any]] = []  # (type, kind) since the previous main call
    for i, event in enumerate(shaped):
        data = _data(event)
        if kinds[i] in ("compaction.applied", "compaction.refused"):
            since.append((kinds[i], data.get("kind")))
        if kinds[i] != "model_call.started" or data.get("purpose") != "main":
            continue
        compaction = data.get("compaction")
        decision = compaction.get("decision") if isinstance(compaction, dict) else None
        parts = str(decision).split("+") if isinstance(decision, str) else []
        for part, kind, applied in DECISION_EVENTS:
            if part in parts and (kind, applied) not in since:
                found.append(Finding(("RUN-16", "RUN-15"), f"a `{kind}`"
                                     + (f" of kind `{applied}`" if applied else "")
                                     + f" before the main call whose decision is "
                                     f"`{decision}` (docs/runs.md, Compaction)",
                                     f"event {event.get('id')}; since the previous main "
                                     f"call: {since or 'nothing'}"))
        since = []
    return found


# -- the event stream ----------------------------------------------------------------------


def parse_sse(body: bytes) -> tuple[list[dict[str, str]], str]:
    """The messages of an SSE body (each its `id`, `event` and `data` fields; comments and
    an unfinished last block left out), and what was left unparsed (an unfinished block)."""
    text = body.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    *blocks, rest = text.split("\n\n")
    messages = []
    for block in blocks:
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            fields[name] = fields[name] + "\n" + value if name == "data" and name in fields \
                else value
        if fields:
            messages.append(fields)
    return messages, rest
