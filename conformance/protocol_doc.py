"""docs/protocol.md, rendered from the catalogue so the page and the checks share one source."""

from __future__ import annotations

from arck.conformance.catalogue import Area, Catalogue

REGENERATE = ".venv/bin/arck requirements --markdown > docs/protocol.md"


def _cell(text: str) -> str:
    """A table cell: a bare `|` would end the cell, even inside a code span (GFM)."""
    return text.replace("|", "\\|")


def _revision(cat: Catalogue) -> str:
    p = cat.protocol
    if not p.changes:
        return f"Revision **{cat.revision}**."
    return f"Revision **{cat.revision}** (changes since {p.previous}: {'; '.join(p.changes)})."


def _area(number: int, area: Area, cat: Catalogue) -> list[str]:
    sources = f" ({', '.join(area.sources)})" if area.sources else ""
    parts = [f'## <a id="{area.id.lower()}"></a>{number}. {area.id} — {area.title}{sources}']
    if area.intro:
        parts.append(area.intro.strip("\n"))
    rows = [f"| {r.id} | {r.level} | {_cell(r.text)} |" for r in cat.in_area(area.id)]
    parts.append("\n".join(["| ID | level | requirement |", "|---|---|---|", *rows]))
    return parts


def render(cat: Catalogue) -> str:
    """The whole page: introduction, sources, one section per area, the harness promises."""
    p = cat.protocol
    parts = [
        f"<!-- Generated from conformance/requirements.toml; edit that file, then run\n"
        f"     {REGENERATE} -->",
        f"# {p.title or 'The protocol'}",
        _revision(cat),
    ]
    if p.intro:
        parts.append(p.intro.strip("\n"))
    if p.sources:
        rows = [f"| {s.id} | {_cell(s.covers)} |" for s in p.sources]
        parts.append("\n".join(["| short | covers |", "|---|---|", *rows]))
    if p.conventions:
        parts.append(p.conventions.strip("\n"))
    parts.append("---")
    for number, area in enumerate(cat.areas, 1):
        parts.extend(_area(number, area, cat))
    if cat.harness:
        number = len(cat.areas) + 1
        parts.append(f'## <a id="harness"></a>{number}. H — what the harness itself promises')
        parts.append("Promises arck makes about itself, not requirements on a target: they have\n"
                     "no level and are not in the requirement matrix.")
        rows = [f"| {h.id} | {_cell(h.text)} |" for h in cat.harness]
        parts.append("\n".join(["| ID | promise |", "|---|---|", *rows]))
    return "\n\n".join(parts) + "\n"
