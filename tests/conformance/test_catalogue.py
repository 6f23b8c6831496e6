"""The catalogue as the protocol's one source: its validation, docs/protocol.md, the CLI forms."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clirun import arck

from arck.conformance import catalogue
from arck.conformance.protocol_doc import REGENERATE, render

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "protocol.md"
SPEC = Path(__file__).resolve().parents[3] / "shared" / "SPEC.md"

BASE = """[protocol]
revision = "x"
[[source]]
id = "S-A"
covers = "a"
[[area]]
id = "BUD"
title = "budgets"
sources = ["S-A"]
"""


def _req(rid: str = "BUD-01", area: str = "BUD") -> str:
    return f'[[requirement]]\nid = "{rid}"\nlevel = "core"\narea = "{area}"\ntext = "x"\n'


def test_a_minimal_catalogue_loads() -> None:
    cat = catalogue.parse(BASE + _req() + '[[harness]]\nid = "H-01"\ntext = "h"\n')
    assert cat.ids() == ["BUD-01"]
    assert cat.areas == (catalogue.Area("BUD", "budgets", ("S-A",)),)
    assert [h.id for h in cat.harness] == ["H-01"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BASE + _req("DRY-01", "DRY"), "DRY-01: unknown area 'DRY'"),
        (BASE + _req("DRY-01", "BUD"), "DRY-01: an ID in area BUD starts with BUD-"),
        (BASE.replace('["S-A"]', '["S-X"]') + _req(), "area BUD: unknown source 'S-X'"),
        (BASE.replace('title = "budgets"', 'titel = "budgets"') + _req(), r"unknown key.*titel"),
        (BASE + _req() + '[[area]]\nid = "DEF"\ntitle = "d"\n', "area DEF has no requirements"),
        (BASE + _req() + '[[area]]\nid = "BUD"\ntitle = "again"\n', "Duplicate area: BUD"),
        (BASE + _req() + '[[harness]]\nid = "BUD-01"\ntext = "h"\n', "reuse requirement IDs"),
        (BASE.replace('revision = "x"', 'revision = "x"\nchanges = [1]') + _req(), "changes"),
    ],
)
def test_catalogue_refuses(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        catalogue.parse(text)


def test_harness_promises_are_not_requirements() -> None:
    cat = catalogue.load()
    assert [h.id for h in cat.harness] == [f"H-0{i}" for i in range(1, 7)]
    assert not [rid for rid in cat.ids() if rid.startswith("H-")]
    with pytest.raises(KeyError):
        cat.get("H-06")


def test_every_area_is_described() -> None:
    cat = catalogue.load()
    assert [a.id for a in cat.areas] == ["BUD", "DEF", "DRY", "CAP", "EXE", "RUN", "CTX", "BIL",
                                         "AUTH", "PRO"]
    assert all(a.title for a in cat.areas)
    assert "canonical compact JSON" in cat.areas[0].intro
    assert cat.protocol.changes, "a revision says what it changed"


def test_protocol_doc_is_generated_from_the_catalogue() -> None:
    expected = render(catalogue.load())
    assert DOC.read_bytes() == expected.encode("utf-8"), (
        f"docs/protocol.md differs from the catalogue (conformance/requirements.toml); "
        f"regenerate it: {REGENERATE}"
    )


def _cells(row: str) -> list[str]:
    """A Markdown table row's cells, split as GFM does: on every `|` not escaped."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def test_rendered_tables_keep_every_requirement_in_one_row() -> None:
    cat = catalogue.load()
    text = render(cat)
    rows = [_cells(line) for line in text.splitlines() if re.match(r"\| [A-Z]+-\d+ \|", line)]
    requirement_rows = [r for r in rows if not r[0].startswith("H-")]
    assert [r[0] for r in requirement_rows] == cat.ids()
    for (rid, level, cell), r in zip(requirement_rows, cat.requirements, strict=True):
        assert (rid, level, cell.replace("\\|", "|")) == (r.id, r.level, r.text)
    assert "`<n>ms\\|s\\|m\\|h\\|d`" in text  # CAP-14's pipes, escaped


def test_cli_prints_the_protocol_and_the_revision() -> None:
    cat = catalogue.load()
    markdown = arck("requirements", "--markdown")
    assert markdown.returncode == 0, markdown.stderr
    assert markdown.stdout == render(cat)
    plain = arck("requirements")
    assert plain.returncode == 0, plain.stderr
    assert f"protocol revision {cat.revision}" in plain.stdout
    listed = json.loads(arck("requirements", "--json").stdout)
    assert listed["revision"] == cat.revision
    assert [r["id"] for r in listed["requirements"]] == cat.ids()
    both = arck("requirements", "--json", "--markdown")
    assert both.returncode == 2
    assert "alternatives" in both.stdout


def _squash(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.skipif(not SPEC.exists(), reason="SPEC.md is not beside the repository "
                    "(a user's clone): the catalogue is the protocol's only copy")
def test_areas_sources_and_promises_match_spec() -> None:
    cat = catalogue.load()
    spec = SPEC.read_text("utf-8")
    sections = re.findall(r"^## (\d+)\. (\S+) — (.*?)(?: \(([^)]*)\))?\n\n(.*?)(?=^\| ID)",
                          spec, re.M | re.S)
    areas = [(int(n), aid, title, tuple(s.split(", ")) if s else (), _squash(intro))
             for n, aid, title, s, intro in sections if aid != "H"]
    assert areas == [(n, a.id, a.title, a.sources, _squash(a.intro))
                     for n, a in enumerate(cat.areas, 1)]
    promises = re.findall(r"^\| (H-\d+) \| (.*) \|$", spec, re.M)
    assert promises == [(h.id, h.text) for h in cat.harness]
    sources = re.findall(r"^\| (S-[A-Z]+) \| .* \| (.*) \|$", spec, re.M)
    assert sources == [(s.id, s.covers) for s in cat.protocol.sources]
