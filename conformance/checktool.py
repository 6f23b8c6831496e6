"""`arck check-tool` behind the thin typer command: inputs, the target, the verdict, the views.

Inputs are checked before any target is built, so a typo costs no request. The JSON document
and the terminal tables show the same `Outcome`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

import arck
from arck.conformance import catalogue, oracle
from arck.conformance.errors import UsageError
from arck.conformance.outcomes import EXIT_FAILED, EXIT_OK
from arck.conformance.tooldesign import (
    LOST,
    MISSING,
    VISIBLE,
    WATCHED_KEYS,
    SampleReport,
    Visibility,
    check_budget,
    check_samples,
    excerpt,
    load_sample,
    pointer_parts,
    watched_fields,
)
from arck.simulator.factory import build_target, verify_credentials
from arck.simulator.target import TargetInfo

GROUP_OVER = 3  # more fields than this under one array pattern share a table row
STYLE = {**dict.fromkeys(VISIBLE, "green"), LOST: "bold red", MISSING: "yellow"}


@dataclass(frozen=True)
class Outcome:
    target: TargetInfo
    budget: int | None  # as asked; None: left out, so the default applies
    samples: tuple[SampleReport, ...]

    def judged(self, *states: str) -> list[tuple[SampleReport, Visibility]]:
        return [(s, v) for s in self.samples for v in s.fields if v.state in states]

    def lost(self, *, gating: bool) -> list[tuple[SampleReport, Visibility]]:
        return [(s, v) for s, v in self.judged(LOST) if gates(v) is gating]

    @property
    def exit_code(self) -> int:
        return EXIT_FAILED if self.lost(gating=True) else EXIT_OK

    @property
    def verdict(self) -> str:
        if self.lost(gating=True):
            return "lost"
        return "visible" if self.judged(*VISIBLE) else "nothing_watched"


def gates(v: Visibility) -> bool:
    """Whether losing this field fails the check: a field of the result itself, or one named.

    Fields of list items (`/results/7/id`) are reported, but a long list always loses the
    items in its middle; what the model needs to go on is the result's own cursor and
    status, and the product's tools by id (BUD-20). `--field` makes an item field count.
    """
    steps = v.field.steps or ()
    return v.field.named or not any(isinstance(step, int) for step in steps)


def run(
    paths: Sequence[Path],
    *,
    target_spec: str | None,
    config: Path | None,
    budget: int | None,
    named: Sequence[str] = (),
    defaults: bool = True,
) -> Outcome:
    """Check the inputs, then dry-run every sample through the target (default: reference)."""
    check_budget(budget)
    for pointer in named:
        pointer_parts(pointer)
    if not defaults and not named:
        raise UsageError("--no-default-fields needs at least one --field POINTER to watch")
    samples = [load_sample(path) for path in paths]
    fields = [watched_fields(s.value, named, defaults) for s in samples]
    for pointer in named:
        if all(any(f.pointer == pointer and f.steps is None for f in fs) for fs in fields):
            raise UsageError(f"--field {pointer!r} points at nothing in any sample")
    target = build_target(target_spec or (None if config else "reference"), config)
    try:
        verify_credentials(target)
        reports = check_samples(target, samples, budget, fields)
    finally:
        target.close()
    return Outcome(target.info, budget, tuple(reports))


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def _number(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else repr(value)


def _used(s: SampleReport) -> int:
    return sum(v.bytes for v in s.fields)


def message(outcome: Outcome) -> str:
    """The one-line verdict, with the advice that fixes a loss."""
    watched = outcome.judged(*VISIBLE, LOST)
    lost = outcome.lost(gating=True)
    items_lost = outcome.lost(gating=False)
    missing = outcome.judged(MISSING)
    samples = _plural(len(outcome.samples), "sample")
    if not watched:
        text = (f"NOTHING WATCHED: no member named {', '.join(sorted(WATCHED_KEYS))} in "
                f"{samples}; name the fields to watch with --field /json/pointer")
    elif lost:
        places = Counter(f"{Path(s.name).name} {_pattern(v)}" for s, v in lost)
        shown = [p if n == 1 else f"{p} ×{n}" for p, n in places.items()]
        where = ", ".join(shown[:3])
        more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
        verb = "is" if len(lost) == 1 else "are"
        text = (f"LOST: {len(lost)} of {_plural(len(watched), 'watched field')} in {samples} "
                f"{verb} not visible in the preview ({where}{more}). Keep cursors, ids and "
                "status shallow and short, near the start or end of the result "
                "(docs/check-tool.md)")
    else:
        share = max(_used(s) / s.budget for s in outcome.samples)
        visible = len(watched) - len(items_lost)
        every = "all " if visible > 1 and not items_lost else ""
        text = (f"VISIBLE: {every}{_plural(visible, 'watched field')} in {samples} visible in "
                f"the preview, using at most {share:.1%} of a budget")
    if items_lost:
        text += (f"; {_plural(len(items_lost), 'list-item field')} not visible (reported only: "
                 "name one with --field to gate on it)")
    if missing:
        text += f"; {len(missing)} named field(s) missing from a sample"
    return text


# --- JSON ---------------------------------------------------------------------------------


def document(outcome: Outcome) -> dict[str, Any]:
    """The machine-readable result (`--json`, `--report`)."""
    info = outcome.target
    return {
        "check": "arck check-tool",
        "arck": arck.__version__,
        "protocol_revision": catalogue.load().revision,
        "target": {"name": info.name, "kind": info.kind, "location": info.location,
                   "profile": info.profile},
        "budget": outcome.budget,
        "verdict": outcome.verdict,
        "message": message(outcome),
        "exit_code": outcome.exit_code,
        "counts": {state: len(outcome.judged(state)) for state in (*VISIBLE, LOST, MISSING)},
        "lost_gating": len(outcome.lost(gating=True)),
        "samples": [_sample_document(s) for s in outcome.samples],
    }


def _sample_document(s: SampleReport) -> dict[str, Any]:
    return {
        "file": s.name,
        "sample_bytes": s.sample_bytes,
        "budget": s.budget,
        "original_bytes": s.original_bytes,
        "retained_bytes": s.retained_bytes,
        "truncated": s.truncated,
        "visible_bytes": _used(s),
        "visible_share": round(_used(s) / s.budget, 5),
        "notes": list(s.notes),
        "fields": [
            {
                "pointer": v.field.pointer,
                "named": v.field.named,
                "state": v.state,
                "gates": gates(v),
                "places": list(v.places),
                "preserved_as": v.location or None,
                "bytes": v.bytes,
                "budget_share": round(v.bytes / s.budget, 5),
                "member": None if v.field.steps is None else excerpt(v.field.member, 120),
                "note": v.note,
            }
            for v in s.fields
        ],
    }


# --- the terminal -------------------------------------------------------------------------


def _pattern(v: Visibility) -> str:
    """The pointer with array indices as `*`: item fields of a long list share one row."""
    steps = v.field.steps
    if steps is None:
        return v.field.pointer
    return oracle.pointer(["*" if isinstance(s, int) else s for s in steps])


def _detail(v: Visibility) -> str:
    """The member as the model sees it, where else it shows, and why it is not there."""
    parts = [excerpt(v.field.member, 40)] if v.places else []
    if v.location and v.location != v.field.pointer:
        parts.append(f"kept as {v.location!r}")
    also = [p for p in v.places if p in ("head", "tail") and v.state == "preserved"]
    if also:
        parts.append(f"also in the {' and '.join(also)}")
    return "; ".join([*parts, v.note] if v.note else parts)


def _rows(s: SampleReport) -> list[tuple[str, Text, int, str]]:
    groups: dict[str, list[Visibility]] = defaultdict(list)
    for v in s.fields:
        groups[_pattern(v)].append(v)
    rows = []
    for pattern, members in groups.items():
        if len(members) <= GROUP_OVER:
            for v in members:
                rows.append((v.field.pointer, Text(v.state, STYLE[v.state]), v.bytes, _detail(v)))
        else:
            states = Text(", ").join(Text(f"{n} {state}", STYLE[state]) for state, n
                                     in Counter(v.state for v in members).items())
            used = sum(v.bytes for v in members)
            rows.append((f"{pattern} ({len(members)} fields)", states, used, "items of a list"))
    return rows


def render(outcome: Outcome, console: Console) -> None:
    """One block per sample, then the verdict. User text is never read as markup."""
    for s in outcome.samples:
        shape = "projected to" if s.truncated else "kept whole:"
        console.print(Text.assemble(
            (s.name, "bold"),
            f": {s.sample_bytes:,} bytes, {shape} {_number(s.retained_bytes)} at budget "
            f"{s.budget:,}; watched fields use {_used(s):,} bytes ({_used(s) / s.budget:.1%})",
        ))
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("field", overflow="fold")
        table.add_column("state")
        table.add_column("bytes", justify="right")
        table.add_column("budget", justify="right")
        table.add_column("where / why", overflow="fold")
        for name, state, used, detail in _rows(s):
            shown = (f"{used:,}", f"{used / s.budget:.2%}") if used else ("-", "-")
            table.add_row(Text(name), state, *shown, Text(detail))
        console.print(table)
        for note in s.notes:
            console.print(Text(f"  note: {note}", "dim"))
        console.print()
    console.print(Text(f"judged against protocol revision {catalogue.load().revision} "
                       "(preserved fields per BUD-22 on reference-profile targets)", "dim"))
    style = {"lost": "bold red", "visible": "bold green"}.get(outcome.verdict, "yellow")
    console.print(Text(message(outcome), style))
