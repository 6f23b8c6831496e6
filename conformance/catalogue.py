"""The requirement catalogue: one data file, versioned with the protocol revision."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

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
class Catalogue:
    revision: str
    requirements: tuple[Requirement, ...]

    def get(self, rid: str) -> Requirement:
        for r in self.requirements:
            if r.id == rid:
                return r
        raise KeyError(f"unknown requirement ID {rid!r}; see `arck requirements` for the list")

    def ids(self) -> list[str]:
        return [r.id for r in self.requirements]

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


def parse(text: str) -> Catalogue:
    data = tomllib.loads(text)
    seen: set[str] = set()
    items: list[Requirement] = []
    for row in data["requirement"]:
        rid = row["id"]
        if rid in seen:
            raise ValueError(f"Duplicate requirement ID: {rid}")
        if row["level"] not in LEVELS:
            raise ValueError(f"{rid}: level {row['level']!r} is not one of {LEVELS}")
        seen.add(rid)
        items.append(
            Requirement(rid, row["level"], row["area"], row["text"], row.get("pending", ""))
        )
    return Catalogue(data["protocol"]["revision"], tuple(items))


@cache
def load() -> Catalogue:
    text = resources.files("arck.conformance").joinpath("requirements.toml").read_text("utf-8")
    return parse(text)
