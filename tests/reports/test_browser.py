"""The HTML report in a real, offline Chromium: matrix, failure links, filter, no network.

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

from arck.reports import Status, check_anchor, write_all

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
            context = browser.new_context(offline=True, viewport={"width": 1280, "height": 600})
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
            """el => { const r = el.getBoundingClientRect();
                       return r.top >= 0 && r.top < window.innerHeight && r.bottom > 0; }""",
        )
    )


def test_report_in_browser(page: Page, tmp_path: Path) -> None:
    report = make_report()
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

    # the failure entry: message, example, case file, replay command
    anchor = check_anchor(FAILING_CHECK)
    entry = page.locator(f"section#{anchor}")
    expect(entry).to_be_visible()
    expect(entry.locator("pre.message")).to_contain_text("expected 512 bytes, saw 600")
    expect(entry.locator("pre.example")).to_contain_text('"emoji"')
    expect(entry).to_contain_text(failing.case_file)
    expect(entry.locator("code.replay")).to_have_text(failing.replay)
    assert page.locator("script").count() == 1  # only the report's own inline script

    page.screenshot(path=tmp_path / "report.png", full_page=True)

    # the matrix link to the failing check targets and scrolls to its entry
    assert not _in_viewport(page, f"#{anchor}"), "viewport too tall to show the scroll"
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
