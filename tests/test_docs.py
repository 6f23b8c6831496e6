"""README.md and docs/*.md link only to what a clone holds: every relative link (and its anchor)
resolves inside the repository, and nothing sends the reader to the protocol's working copy
outside it (`../shared/SPEC.md`): docs/protocol.md is the protocol."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OUTSIDE = ("../shared", "SPEC.md")
MARKDOWN = MarkdownIt("commonmark").enable("table")


def _links(text: str) -> list[str]:
    """Link and image targets, as a renderer sees them (code blocks and spans excluded)."""
    found = []
    for block in MARKDOWN.parse(text):
        for token in block.children or []:
            target = token.attrGet("href") if token.type == "link_open" else token.attrGet("src")
            if token.type in ("link_open", "image") and isinstance(target, str):
                found.append(target)
    return found


def _anchors(text: str) -> set[str]:
    """Explicit `<a id>` anchors and GitHub's heading slugs."""
    anchors = set(re.findall(r'<a (?:id|name)="([^"]+)"', text))
    tokens = MARKDOWN.parse(text)
    for opening, inline in pairwise(tokens):
        if opening.type == "heading_open":
            words = "".join(c.content for c in inline.children or []
                            if c.type in ("text", "code_inline"))
            anchors.add(re.sub(r"[^\w\- ]", "", words.strip().lower()).replace(" ", "-"))
    return anchors


def problems(page: Path, text: str) -> list[str]:
    """What is wrong with a page's links, one line each."""
    found = [f"mentions {word!r}" for word in OUTSIDE if word in text]
    for link in _links(text):
        parts = urlsplit(link)
        if parts.scheme or parts.netloc:
            continue  # an absolute URL: not a file of the repository
        target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if not target.is_relative_to(ROOT):
            found.append(f"{link}: outside the repository")
        elif not target.exists():
            found.append(f"{link}: no such file")
        elif parts.fragment and target.suffix == ".md" and (
            parts.fragment not in _anchors(target.read_text("utf-8"))
        ):
            found.append(f"{link}: no anchor #{parts.fragment} in {target.name}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_inside_the_repository(page: Path) -> None:
    assert problems(page, page.read_text("utf-8")) == []


def test_the_protocol_is_linked_from_the_readme() -> None:
    assert "docs/protocol.md" in _links((ROOT / "README.md").read_text("utf-8"))


def test_broken_and_outside_links_are_found() -> None:
    page = ROOT / "docs" / "example.md"
    text = ("[spec](../../shared/SPEC.md) [gone](missing.md) [anchor](protocol.md#nope) "
            "[ok](protocol.md#bud) [heading](profile.md#wire-profile-pro) [web](https://x.org/a.md)"
            "\n\n```\n[in code](missing-too.md)\n```\n")
    assert problems(page, text) == [
        "mentions '../shared'",
        "mentions 'SPEC.md'",
        "../../shared/SPEC.md: outside the repository",
        "missing.md: no such file",
        "protocol.md#nope: no anchor #nope in protocol.md",
    ]


def test_package_names_the_catalogue_revision() -> None:
    """The served OpenAPI `info.version` and `arck --version` say the revision the checks use."""
    import arck
    from arck.conformance import catalogue

    assert catalogue.load().revision == arck.PROTOCOL_REVISION
