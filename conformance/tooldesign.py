"""The tool-design check (SPEC H-06): do a tool's cursors, ids and status survive its preview?

Tool authors run it on real-size sample results before publishing a tool. Each sample goes
through a target's own dry-run, and what the model would see is judged from the answer's
`context_preview` alone, against the oracle's canonical text: any target is a black box, and
the engine is never asked. Everything here is pure except `check_samples`, which drives the
target.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpointer

from arck.conformance import oracle
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotTestable, UsageError
from arck.conformance.judge import strict_json
from arck.simulator.target import Target

# BUD-22's status-like keys; watched at any depth, since deep ones are what authors miss.
WATCHED_KEYS = frozenset(
    ("id", "status", "state", "next_cursor", "cursor", "has_more", "total", "code", "error", "type")
)
DEFAULT_BUDGET = 16_384  # DEF-02, when the tool leaves the budget out
MIN_BUDGET, MAX_BUDGET = 1_024, 32_768
VISIBLE = ("kept_whole", "attached", "preserved", "in_head", "in_tail")
LOST, MISSING = "lost", "missing"
_INDEX = re.compile(r"0|[1-9][0-9]*")

Steps = tuple[str | int, ...]  # keys and indices from the root to a value


@dataclass(frozen=True)
class Sample:
    name: str
    value: Any


@dataclass(frozen=True)
class Field:
    """A watched place in one sample; `steps` is None when a named pointer is not there."""

    pointer: str
    steps: Steps | None
    value: Any = None
    named: bool = False  # given with --field

    @property
    def key(self) -> str | None:
        last = self.steps[-1] if self.steps else None
        return last if isinstance(last, str) else None

    @property
    def member(self) -> str:
        """`"key":value` as it stands in the canonical text (the bare value in an array)."""
        text = oracle.canonical_text(self.value)
        return text if self.key is None else f"{oracle.canonical_text(self.key)}:{text}"


@dataclass(frozen=True)
class Visibility:
    field: Field
    state: str  # one of VISIBLE, LOST or MISSING
    places: tuple[str, ...] = ()  # result, attachment, preserved_fields, head, tail
    bytes: int = 0  # canonical bytes it takes in the preview, summed over `places`
    note: str = ""
    location: str = ""  # its key in preserved_fields (a pointer or a dotted path)


@dataclass(frozen=True)
class SampleReport:
    name: str
    sample_bytes: int  # the oracle's canonical size of the sample
    budget: int
    original_bytes: Any  # as the target reported them
    retained_bytes: Any
    truncated: bool
    fields: tuple[Visibility, ...]
    notes: tuple[str, ...] = ()


# --- samples and watched fields -----------------------------------------------------------


def load_sample(path: Path) -> Sample:
    """A sample file holding one strict JSON value; anything else is a usage error."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"sample {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        value = strict_json(data)
        oracle.size(value)  # a value the canonical form cannot hold is no tool result either
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"sample {path}: not a strict JSON value ({exc})") from None
    return Sample(str(path), value)


def check_budget(budget: int | None) -> None:
    if budget is not None and not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise UsageError(
            f"--budget {budget}: max_result_context_bytes must be an integer from "
            f"{MIN_BUDGET:,} to {MAX_BUDGET:,} (DEF-02); leave it out for the 16,384 default"
        )


def pointer_parts(pointer: str) -> list[str]:
    """The unescaped reference tokens of an RFC 6901 pointer, or a usage error."""
    if pointer and not pointer.startswith("/"):
        hint = "/" + pointer.replace(".", "/")
        raise UsageError(f"--field {pointer!r}: not a JSON Pointer (RFC 6901); did you mean "
                         f"{hint!r}?")
    try:
        parts: list[str] = jsonpointer.JsonPointer(pointer).parts
    except jsonpointer.JsonPointerException as exc:
        raise UsageError(f"--field {pointer!r}: {exc} ('~' is written '~0' in a JSON "
                         "Pointer)") from None
    return parts


def locate(value: Any, parts: Sequence[str]) -> tuple[Steps, Any] | None:
    node, steps = value, []
    for part in parts:
        step: str | int
        if isinstance(node, dict) and part in node:
            step = part
        elif isinstance(node, list) and _INDEX.fullmatch(part) and int(part) < len(node):
            step = int(part)
        else:
            return None
        steps.append(step)
        node = node[step]
    return tuple(steps), node


def watched_fields(value: Any, named: Sequence[str] = (), defaults: bool = True) -> list[Field]:
    """The status-like scalars of a sample (any depth) and the named pointers, once each."""
    found: dict[Steps, Field] = {}
    if defaults:
        for path, child in oracle.walk(value):
            key = path[-1] if path else None
            if isinstance(key, str) and key in WATCHED_KEYS and not isinstance(child, dict | list):
                found[tuple(path)] = Field(oracle.pointer(path), tuple(path), child)
    missing = []
    for text in dict.fromkeys(named):
        hit = locate(value, pointer_parts(text))
        if hit is None:
            missing.append(Field(text, None, named=True))
        else:
            found[hit[0]] = Field(oracle.pointer(list(hit[0])), hit[0], hit[1], named=True)
    return [*found.values(), *missing]


# --- where members sit in the canonical text ----------------------------------------------


def member_spans(value: Any, wanted: Sequence[Steps]) -> dict[Steps, tuple[int, int]]:
    """`[start, end)` of each wanted member (key included) in the value's canonical text.

    Only containers on the way to a wanted member are walked; other subtrees are measured
    whole with the canonical `json.dumps`, which sorts keys the same way.
    """
    targets = set(wanted)
    on_way = {steps[:i] for steps in targets for i in range(len(steps))}
    spans: dict[Steps, tuple[int, int]] = {}

    def visit(node: Any, steps: Steps, offset: int) -> int:
        if steps not in on_way or not isinstance(node, dict | list):
            return len(oracle.canonical_text(node))
        items = sorted(node.items()) if isinstance(node, dict) else enumerate(node)
        pos = offset + 1
        for n, (key, child) in enumerate(items):
            if n:
                pos += 1  # the comma
            start = pos
            if isinstance(node, dict):
                pos += len(oracle.canonical_text(key)) + 1
            pos += visit(child, (*steps, key), pos)
            if (*steps, key) in targets:
                spans[(*steps, key)] = (start, pos)
        return pos + 1 - offset

    total = visit(value, (), 0)
    if () in targets:
        spans[()] = (0, total)
    return spans


# --- judging one dry-run answer -----------------------------------------------------------


def excerpt(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _dotted(steps: Steps) -> str:
    return ".".join(str(s) for s in steps)


@dataclass(frozen=True)
class _Projection:
    text: str  # the sample's canonical text
    head: str
    tail: str
    head_is_prefix: bool
    tail_is_suffix: bool
    preserved: dict[str, Any]


def _projection(
    text: str, projected: Any, multimodal: bool
) -> tuple[_Projection, list[str]]:
    notes = []
    box = projected.get("preview") if isinstance(projected, dict) else None
    head = box.get("head") if isinstance(box, dict) else None
    tail = box.get("tail") if isinstance(box, dict) else None
    if not isinstance(head, str) or not isinstance(tail, str):
        notes.append("the projection holds no preview.head and preview.tail strings (BUD-09)")
    head = head if isinstance(head, str) else ""
    tail = tail if isinstance(tail, str) else ""
    kept = projected.get("preserved_fields") if isinstance(projected, dict) else None
    is_prefix, is_suffix = text.startswith(head), text.endswith(tail)
    if multimodal:
        # Only the text part is cut, in a layout the protocol leaves open (BUD-19, BUD-21):
        # positions in the sample's own text say nothing, so members are searched for.
        is_prefix = is_suffix = False
        notes.append("multimodal result: fields of the text part were looked for in head and "
                     "tail by text search, which repeats can fool")
    elif not (is_prefix and is_suffix):
        notes.append("preview.head/tail are not a prefix/suffix of the sample's canonical text "
                     "(BUD-09): fields were looked for by text search, which repeats can fool")
    state = _Projection(text, head, tail, is_prefix, is_suffix,
                        kept if isinstance(kept, dict) else {})
    return state, notes


def _in_projection(f: Field, span: tuple[int, int], p: _Projection) -> Visibility:
    assert f.steps is not None
    places: list[str] = []
    used, note, kept_as = 0, "", ""
    for location in dict.fromkeys((f.pointer, _dotted(f.steps))):
        if location not in p.preserved:
            continue
        got = p.preserved[location]
        if oracle.canonically_equal(got, f.value):
            places.append("preserved_fields")
            kept_as = location
            used += oracle.size(location) + 1 + oracle.size(got)
        else:
            shown = excerpt(oracle.canonical_text(got))
            note = f"preserved_fields[{location!r}] holds {shown}, not the original value"
    member = f.member
    in_head = span[1] <= len(p.head) if p.head_is_prefix else member in p.head
    in_tail = span[0] >= len(p.text) - len(p.tail) if p.tail_is_suffix else member in p.tail
    places += ["head"] * in_head + ["tail"] * in_tail
    # Inside head or tail the member is text within a JSON string: its quotes and
    # backslashes are escaped again, and those bytes count too (BUD-03).
    used += (oracle.size(member) - 2) * (in_head + in_tail)
    state = ("preserved" if kept_as else "in_head" if in_head else "in_tail" if in_tail
             else LOST)
    if state == LOST and not note:
        note = "cut out with the middle of the text"
    return Visibility(f, state, tuple(places), used, note, kept_as)


def _invented(value: Any, preserved: dict[str, Any], judged: set[str]) -> list[str]:
    """Preserved entries not copied from the sample, beyond those `judged` per field already:
    a value the sample does not hold would mislead the model (BUD-11)."""
    notes = []
    for location, got in preserved.items():
        found, there = oracle.resolve_location(value, location)
        if not found:
            notes.append(f"preserved_fields[{location!r}] names no place in the sample (BUD-11)")
        elif location not in judged and not oracle.canonically_equal(there, got):
            notes.append(f"preserved_fields[{location!r}] differs from the sample (BUD-11)")
    return notes


def _attached(f: Field, sample: Any, projected: Any) -> Visibility | None:
    """A field inside a non-text block the projection kept byte-identical (BUD-19)."""
    assert f.steps is not None
    if len(f.steps) < 3 or f.steps[0] != "content" or not isinstance(f.steps[1], int):
        return None
    block = sample["content"][f.steps[1]]
    if block["type"] == "text" or not oracle.find_value(projected, block):
        return None
    note = "in a non-text block kept byte-identical, outside the text budget (BUD-19)"
    return Visibility(f, "attached", ("attachment",), 0, note)


def _kept_whole(f: Field, projected: Any) -> Visibility:
    assert f.steps is not None
    hit = locate(projected, [str(s) for s in f.steps])
    if hit is not None and oracle.canonically_equal(hit[1], f.value):
        return Visibility(f, "kept_whole", ("result",), len(f.member.encode("utf-8")))
    return Visibility(f, LOST, note="truncated=false, but the previewed result lacks this value")


def analyse(
    sample: Sample, fields: Sequence[Field], preview: dict[str, Any], budget: int
) -> SampleReport:
    """Visibility of each watched field, from a dry-run's `context_preview` alone.

    `budget` is the one asked for; the answer's own `max_result_context_bytes` wins if given.
    Fields come back in the order they stand in the canonical text, missing ones last.
    """
    text = oracle.canonical_text(sample.value)
    stated = preview.get("max_result_context_bytes")
    if isinstance(stated, int) and not isinstance(stated, bool) and stated > 0:
        budget = stated
    truncated = preview.get("truncated") is not False
    projected = preview.get("result")
    spans = member_spans(sample.value, [f.steps for f in fields if f.steps is not None])
    multimodal = oracle.is_multimodal(sample.value)
    projection, notes = _projection(text, projected, multimodal) if truncated else (None, [])
    judged = []
    for f in fields:
        if f.steps is None:
            judged.append(Visibility(f, MISSING, note="no value at this pointer in this sample"))
        elif projection is not None:
            attached = _attached(f, sample.value, projected) if multimodal else None
            judged.append(attached or _in_projection(f, spans[f.steps], projection))
        else:
            judged.append(_kept_whole(f, projected))
    judged.sort(key=lambda v: spans[v.field.steps][0] if v.field.steps is not None else len(text))
    if projection is not None:
        seen = {k for f in fields if f.steps is not None for k in (f.pointer, _dotted(f.steps))}
        notes += _invented(sample.value, projection.preserved, seen)
    size = len(text.encode("utf-8"))
    original = preview.get("original_bytes")
    if original != size:
        notes.append(f"the target measured original_bytes={original!r}; the canonical size "
                     f"is {size} (BUD-01)")
    return SampleReport(sample.name, size, budget, original, preview.get("retained_bytes"),
                        truncated, tuple(judged), tuple(notes))


# --- the target ---------------------------------------------------------------------------


def check_samples(
    target: Target, samples: Sequence[Sample], budget: int | None, fields: Sequence[Sequence[Field]]
) -> list[SampleReport]:
    """Publish one tool with `budget` (None: left out) and dry-run each sample through it.

    Raises NotTestable when setup or a dry-run does not answer 2xx with a context_preview.
    """
    ctx = CheckContext(target)
    version = ctx.version(budget)
    reports = []
    for sample, watched in zip(samples, fields, strict=True):
        exchange = ctx.dry_run(version, sample.value, receipt_id=ctx.name("check-tool-receipt"))
        if not 200 <= exchange.status < 300:
            raise NotTestable(f"the dry-run of {sample.name} did not answer 2xx: "
                              f"{exchange.describe()}", exchange=exchange)
        try:
            data = strict_json(exchange.body)
        except ValueError as exc:
            raise NotTestable(f"the dry-run of {sample.name} answered no strict JSON ({exc}): "
                              f"{exchange.describe()}", exchange=exchange) from None
        preview = data.get("context_preview") if isinstance(data, dict) else None
        if not isinstance(preview, dict):
            raise NotTestable(f"the dry-run of {sample.name} answered no context_preview for a "
                              f"completed receipt (DRY-01): {exchange.describe()}",
                              exchange=exchange)
        reports.append(analyse(sample, watched, preview, budget or DEFAULT_BUDGET))
    return reports

