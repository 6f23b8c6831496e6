"""The requirement catalogue: one data file, versioned with the protocol revision.

The file also holds the protocol's prose (introduction, areas, sources, harness promises), so
docs/protocol.md is generated from it and the requirements and their text can never drift.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

Level = Literal["core", "recommended", "profile"]
LEVELS: tuple[Level, ...] = ("core", "recommended", "profile")


@dataclass(frozen=True)
class Requirement:
    id: str
    level: Level
    area: str
    text: str
    pending: str = ""  # what an uncovered requirement waits for


@dataclass(frozen=True)
class Source:
    """A source document, named by its short name (the originals are not in the repository)."""

    id: str
    covers: str


@dataclass(frozen=True)
class Area:
    """A group of requirements: its heading, the sources it rests on, the prose before its table."""

    id: str
    title: str
    sources: tuple[str, ...] = ()
    intro: str = ""


@dataclass(frozen=True)
class Promise:
    """What arck itself promises (H-01..): not a requirement on a target, never in the matrix."""

    id: str
    text: str


@dataclass(frozen=True)
class Protocol:
    """The prose around the requirements; `intro` stands before the source table."""

    title: str = ""
    previous: str = ""  # the revision before this one
    changes: tuple[str, ...] = ()  # what this revision changed since `previous`
    intro: str = ""
    conventions: str = ""
    sources: tuple[Source, ...] = ()


@dataclass(frozen=True)
class Catalogue:
    revision: str
    requirements: tuple[Requirement, ...]
    areas: tuple[Area, ...] = ()
    harness: tuple[Promise, ...] = ()
    protocol: Protocol = Protocol()

    def get(self, rid: str) -> Requirement:
        for r in self.requirements:
            if r.id == rid:
                return r
        raise KeyError(f"unknown requirement ID {rid!r}; see `arck requirements` for the list")

    def ids(self) -> list[str]:
        return [r.id for r in self.requirements]

    def in_area(self, area: str) -> list[Requirement]:
        return [r for r in self.requirements if r.area == area]

    def select(self, spec: str | None) -> set[str]:
        """IDs matched by a `--requirements` value: comma-separated areas or IDs."""
        if not spec:
            return set(self.ids())
        chosen: set[str] = set()
        for token in (t.strip().upper() for t in spec.split(",") if t.strip()):
            matched = {r.id for r in self.requirements if token in (r.id, r.area)}
            if not matched:
                raise ValueError(
                    f"--requirements: {token!r} is neither an area nor an ID "
                    f"(areas: {', '.join(sorted({r.area for r in self.requirements}))})"
                )
            chosen |= matched
        return chosen


_KEYS = {
    "protocol": {"title", "revision", "previous", "changes", "intro", "conventions"},
    "source": {"id", "covers"},
    "area": {"id", "title", "sources", "intro"},
    "requirement": {"id", "level", "area", "text", "pending"},
    "harness": {"id", "text"},
}


def _str(row: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = row.get(key, default)
    if not isinstance(value, str):
        raise ValueError(f"{where}: {key!r} must be a string, got {value!r}")
    return value


def _rows(data: dict[str, Any], table: str) -> list[dict[str, Any]]:
    """The rows of one `[[table]]`, refusing keys the catalogue does not know (typos)."""
    rows: list[dict[str, Any]] = data.get(table, [])
    for row in rows:
        unknown = set(row) - _KEYS[table]
        if unknown:
            where = row.get("id", table)
            raise ValueError(f"{where}: unknown key(s) {sorted(unknown)} in [[{table}]]")
    return rows


def _unique(ids: list[str], what: str) -> None:
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise ValueError(f"Duplicate {what}: {i}")
        seen.add(i)


def _requirements(rows: list[dict[str, Any]]) -> tuple[Requirement, ...]:
    seen: set[str] = set()
    items: list[Requirement] = []
    for row in rows:
        rid = _str(row, "id", "[[requirement]]")
        if rid in seen:
            raise ValueError(f"Duplicate requirement ID: {rid}")
        if row.get("level") not in LEVELS:
            raise ValueError(f"{rid}: level {row.get('level')!r} is not one of {LEVELS}")
        seen.add(rid)
        items.append(Requirement(rid, row["level"], _str(row, "area", rid),
                                 _str(row, "text", rid), _str(row, "pending", rid, "")))
    return tuple(items)


def _protocol(data: dict[str, Any]) -> Protocol:
    head = data["protocol"]
    sources = tuple(Source(_str(s, "id", "[[source]]"), _str(s, "covers", s.get("id", "")))
                    for s in _rows(data, "source"))
    _unique([s.id for s in sources], "source")
    changes = head.get("changes", [])
    if not all(isinstance(c, str) for c in changes):
        raise ValueError(f"[protocol]: 'changes' must be a list of strings, got {changes!r}")
    return Protocol(_str(head, "title", "[protocol]", ""), _str(head, "previous", "[protocol]", ""),
                    tuple(changes), _str(head, "intro", "[protocol]", ""),
                    _str(head, "conventions", "[protocol]", ""), sources)


def _areas(data: dict[str, Any], sources: set[str]) -> tuple[Area, ...]:
    areas: list[Area] = []
    for row in _rows(data, "area"):
        aid = _str(row, "id", "[[area]]")
        named = tuple(row.get("sources", []))
        for s in named:
            if s not in sources:
                raise ValueError(f"area {aid}: unknown source {s!r} (sources: {sorted(sources)})")
        areas.append(Area(aid, _str(row, "title", aid), named, _str(row, "intro", aid, "")))
    _unique([a.id for a in areas], "area")
    return tuple(areas)


def _check_areas(areas: tuple[Area, ...], requirements: tuple[Requirement, ...]) -> None:
    """Every requirement sits in a declared area named by its ID; no area is empty."""
    known = [a.id for a in areas]
    for r in requirements:
        if r.area not in known:
            raise ValueError(f"{r.id}: unknown area {r.area!r} (areas: {', '.join(known)})")
        if not r.id.startswith(f"{r.area}-"):
            raise ValueError(f"{r.id}: an ID in area {r.area} starts with {r.area}-")
    for a in known:
        if not any(r.area == a for r in requirements):
            raise ValueError(f"area {a} has no requirements")


def parse(text: str) -> Catalogue:
    data = tomllib.loads(text)
    unknown = set(data["protocol"]) - _KEYS["protocol"]
    if unknown:
        raise ValueError(f"[protocol]: unknown key(s) {sorted(unknown)}")
    requirements = _requirements(_rows(data, "requirement"))
    protocol = _protocol(data)
    areas = _areas(data, {s.id for s in protocol.sources})
    _check_areas(areas, requirements)
    harness = tuple(Promise(_str(h, "id", "[[harness]]"), _str(h, "text", h.get("id", "")))
                    for h in _rows(data, "harness"))
    _unique([h.id for h in harness], "harness promise")
    clash = {h.id for h in harness} & {r.id for r in requirements}
    if clash:
        raise ValueError(f"harness promise(s) {sorted(clash)} reuse requirement IDs")
    return Catalogue(_str(data["protocol"], "revision", "[protocol]"), requirements,
                     areas, harness, protocol)


@cache
def load() -> Catalogue:
    text = resources.files("arck.conformance").joinpath("requirements.toml").read_text("utf-8")
    return parse(text)
