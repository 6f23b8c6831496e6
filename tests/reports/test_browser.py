"""The HTML report in a real, offline Chromium: layout at 1,280 px, the per-area picture,
failures before the matrix, failure links, filter, no network.

Needs a Chromium binary (`apt-get install chromium` gives /usr/bin/chromium; CHROMIUM overrides
the path). Without one the test skips, unless ARCK_REQUIRE_BROWSER=1 (as in `.ci/run`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import (
    ConsoleMessage,
    Error,
    Page,
    Request,
    Route,
    expect,
    sync_playwright,
)
from test_writers import make_report

from arck.reports import BAR_ORDER, RunReport, Status, area_counts, check_anchor, write_all

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Needed on a closed network: no GPU, no QUIC, and none of Chromium's own background fetches.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
FAILING_CHECK = "budget/test_projection_cut"
FAILING_REQ = "BUD-07"
MIN_PNG_BYTES = 20_000
VIEWPORT = {"width": 1280, "height": 900}
LONG_EXAMPLE = {"log": "x" * 3000, "curl": "curl " + "-H 'X: y' " * 300, "key": "k" * 500}


@pytest.fixture
def page() -> Iterator[Page]:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        reason = f"no Chromium at {CHROMIUM}: install it with `apt-get install chromium`"
        if os.environ.get("ARCK_REQUIRE_BROWSER") == "1":
            pytest.fail(f"ARCK_REQUIRE_BROWSER=1 but {reason} (or set CHROMIUM=/path/to/it)")
        pytest.skip(reason)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(offline=True, viewport=VIEWPORT)
            page = context.new_page()
            page.set_default_timeout(10_000)
            yield page
        finally:
            browser.close()


def _local(url: str) -> bool:
    """A file on this machine: `//host/x` in a file:// page becomes file://host/x (SMB, UNC)."""
    parts = urlsplit(url)
    return parts.scheme == "file" and parts.netloc == ""


def _in_viewport(page: Page, selector: str) -> bool:
    return bool(
        page.eval_on_selector(
            selector,
            # -1: a scrolled-to anchor can sit a fraction of a pixel above the top
            """el => { const r = el.getBoundingClientRect();
                       return r.top >= -1 && r.top < window.innerHeight && r.bottom > 0; }""",
        )
    )


def _long_report() -> RunReport:
    """The writers' report, with unbreakable example text, curl lines and requirement text."""
    report = make_report()
    failing = next(c for c in report.checks if c.check_id == FAILING_CHECK)
    failing.failures[1].example = LONG_EXAMPLE
    failing.failures[1].exchanges = [LONG_EXAMPLE["curl"]]
    report.requirements[0].text = "w" * 400
    report.requirements[0].reason = "budget/" + "test_" * 60
    return report


def test_report_in_browser(page: Page, tmp_path: Path) -> None:
    report = _long_report()
    statuses = {r.status for r in report.requirements}
    assert {Status.PASS, Status.FAIL, Status.WARN, Status.NOT_COVERED} <= statuses
    failing = next(c for c in report.checks if c.check_id == FAILING_CHECK)
    assert failing.status == Status.FAIL
    assert failing.message
    assert failing.example
    assert failing.case_file
    assert failing.replay
    html = write_all(report, tmp_path / "report")["html"]

    errors: list[str] = []
    outside: list[str] = []

    def on_console(msg: ConsoleMessage) -> None:
        if msg.type == "error":
            errors.append(f"console: {msg.text}")

    def on_page_error(exc: Error) -> None:
        errors.append(f"pageerror: {exc}")

    def on_route(route: Route) -> None:
        if _local(route.request.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    def on_request(request: Request) -> None:  # sees requests a route would not
        if not _local(request.url):
            outside.append(request.url)

    page.on("console", on_console)
    page.on("pageerror", on_page_error)
    page.on("request", on_request)
    page.route("**/*", on_route)
    page.goto(html.as_uri(), wait_until="load")

    # no sideways scrolling at 1,280 px: long text wraps or scrolls inside its own box
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]
    page.locator("details.exchanges summary").last.click()  # open the long curl line too
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]

    # the picture of the run: one stacked bar per area, its counts readable, with a legend
    shown = page.locator("#areas .bar").evaluate_all(
        """bars => bars.map(b => [b.dataset.area, Array.from(b.querySelectorAll('.seg'))
                 .map(s => [s.dataset.status, Number(s.textContent)])])"""
    )
    want = [[area, [[s, n] for s, n in counts.items() if n]] for area, counts in
            area_counts(report)]
    assert shown == want
    assert [area for area, _ in want] == ["budget", "context", "dry-run", "executor", "auth"]
    for seg in page.locator("#areas .seg").all():
        expect(seg).to_be_visible()
        box = seg.bounding_box()
        assert box is not None
        assert box["width"] >= 20  # room for its number
    expect(page.locator(".legend li")).to_have_count(len(BAR_ORDER))

    # failures come first: right after the header, before the matrix
    order = page.evaluate(
        """() => ['header', '#failures', '#matrix'].map(
                s => document.querySelector(s).getBoundingClientRect().top + window.scrollY)"""
    )
    assert order == sorted(order)
    first_section = page.evaluate(
        "document.querySelector('header').nextElementSibling.id"
    )
    assert first_section == "failures"

    # the matrix: one row per requirement, in report order
    matrix = page.locator("#matrix")
    expect(matrix).to_be_visible()
    rows = page.locator("#matrix tbody tr")
    expect(rows).to_have_count(len(report.requirements))
    assert rows.evaluate_all("trs => trs.map(tr => tr.id)") == [
        f"req-{r.id}" for r in report.requirements
    ]
    for r in report.requirements:
        expect(page.locator(f"#req-{r.id}")).to_have_attribute("data-status", r.status.value)
        # what the ID means is on the page, not only in a tooltip
        expect(page.locator(f"#req-{r.id} td.req-text")).to_have_text(r.text)
        expect(page.locator(f"#req-{r.id} td.req-text")).to_be_visible()

    # the failure entry: each distinct failure with message, input kind, example, case file,
    # replay command
    anchor = check_anchor(FAILING_CHECK)
    entry = page.locator(f"section#{anchor}")
    expect(entry).to_be_visible()
    expect(entry.locator("div.failure")).to_have_count(len(failing.failures))
    expect(entry.locator("pre.message").first).to_contain_text("expected 512 bytes, saw 600")
    expect(entry.locator("pre.example").first).to_contain_text('"emoji"')
    expect(entry).to_contain_text(failing.case_file)
    expect(entry.locator("code.replay").first).to_have_text(failing.replay)
    for i, failure in enumerate(failing.failures):
        shown_failure = entry.locator("div.failure").nth(i)
        expect(shown_failure.locator("p.input")).to_contain_text(failure.input_kind)
        expect(shown_failure.locator("code.replay")).to_have_text(failure.replay or "")
        expect(shown_failure.locator("pre.example")).to_be_visible()
    assert page.locator("script").count() == 1  # only the report's own inline script

    page.screenshot(path=tmp_path / "report.png", full_page=True)

    # the matrix link to the failing check targets and scrolls (back up) to its entry
    page.locator(f"#req-{FAILING_REQ}").scroll_into_view_if_needed()
    page.evaluate(f"document.getElementById('req-{FAILING_REQ}').scrollIntoView()")
    assert not _in_viewport(page, f"#{anchor}"), "the entry must be out of view before the click"
    page.locator(f"#req-{FAILING_REQ} a[href='#{anchor}']").click()
    page.wait_for_function(f"location.hash === '#{anchor}'")
    assert page.evaluate("document.querySelector(':target')?.id") == anchor
    expect(entry).to_be_in_viewport()
    assert _in_viewport(page, f"#{anchor}")

    # the status filter keeps only failing rows
    page.select_option("#status-filter", "fail")
    for r in report.requirements:
        row = page.locator(f"#req-{r.id}")
        if r.status == Status.FAIL:
            expect(row).to_be_visible()
        else:
            expect(row).to_be_hidden()
    expect(page.locator("#matrix tbody tr:visible")).to_have_count(
        sum(r.status == Status.FAIL for r in report.requirements)
    )

    assert errors == []
    assert outside == [], f"the report is not self-contained, it fetched {outside}"

    shot = tmp_path / "report.png"
    copy = shutil.copy(shot, html.parent / "report.png")
    data = Path(copy).read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > MIN_PNG_BYTES, f"screenshot only {len(data)} bytes"
