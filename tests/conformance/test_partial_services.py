"""The whole suite against services that each lack one area or two (issue 17): every
requirement of a missing area is "not applicable", with the reason, never "not testable" or
"fail", and the run exits 0. Each service is the reference engine behind
`partialkit.Without`, served over HTTP in a subprocess, with a target file that declares what
it has."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clirun import Service, arck, free_port

from arck.conformance import catalogue

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Missing:
    """What a variant lacks, as the report must show it."""

    ids: tuple[str, ...]  # the areas or requirement IDs that must be not applicable
    why: str  # what the reason of each says
    # requirements of the missing area whose checks need none of it, so are judged anyway
    judged_anyway: tuple[str, ...] = ()
    # when a missing requirement is also judged by checks that need none of the area (RUN-03's
    # snapshot half, read after every write): the checks of the area, which must be not
    # applicable while the requirement passes on the others
    area_checks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Variant:
    lacks: str  # the partialkit area whose routes are gone ("nothing": all routes kept)
    provider: bool  # a [provider] section
    test_clock: bool  # capability test-clock (and the service's clock route)
    missing: tuple[Missing, ...]


# A restart is a step only an in-process target offers (docs/targets.md): every service here
# lacks it, and the one with the test clock shows it (a restart comes before any executor).
# Each service lacks what it can without hiding another's reason, so four areas go missing
# in three runs of the whole suite (each costs minutes of CPU over HTTP).
NO_RESTART = Missing(("RUN-02",), "restart", area_checks=("runs_durable/",))
VARIANTS = {
    "no runs": Variant("runs", provider=False, test_clock=False, missing=(
        Missing(("RUN", "CTX", "BIL", "EXE"), "simulated model provider"),)),
    # EXE-16 (runs waiting on tools hold no worker) needs runs only: no executor answers.
    # RUN-02's profile rule "no takeover without a restart" is judged in runs that need
    # neither (a refused summary call's run): only the restart checks are not applicable
    "no executor API, no restart": Variant("executors", provider=True, test_clock=True,
                                           missing=(
        Missing(("EXE",), "executor API", judged_anyway=("EXE-16",)), NO_RESTART)),
    # in real time the restart checks stop first for want of the clock
    "no test clock, no event stream": Variant("stream", provider=True, test_clock=False,
                                              missing=(
        Missing(("RUN-03",), "text/event-stream",
                area_checks=("runs_stream/", "runs_events/test_event_stream",
                             "runs_events/test_malformed_last_event_id")),
        Missing(("RUN-02",), "test-clock", area_checks=("runs_durable/",)))),
}


class Partial(Service):
    """`partialkit.py --lacks AREA` in a subprocess, and the target file that describes it."""

    def __init__(self, tmp: Path, variant: Variant) -> None:
        port, provider_port = free_port(), free_port()
        command = [sys.executable, str(HERE / "partialkit.py"), "--port", str(port),
                   "--lacks", variant.lacks]
        if variant.provider:
            command += ["--provider-url", f"http://127.0.0.1:{provider_port}/v1"]
        if variant.test_clock:
            command.append("--test-clock")
        super().__init__(command, port, tmp / "service.log")
        self.target_file = tmp / "target.toml"
        text = (f'[target]\nbase_url = "{self.url}"\nprofile = "reference"\n'
                f'capabilities = {json.dumps(["test-clock"] if variant.test_clock else [])}\n')
        if variant.provider:
            text += f'\n[provider]\nlisten = "127.0.0.1:{provider_port}"\n'
        self.target_file.write_text(text, "utf-8")


@dataclass
class Outcome:
    code: int
    output: str
    wall_s: float
    report: dict[str, Any]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory,
             request: pytest.FixtureRequest) -> Iterator[Runs]:
    """One `arck run` of the whole suite per variant, shared by the assertions below."""
    # pytest-xdist's `--dist load` may hand this file's tests to several workers: each then
    # runs only the variants asked of it (`loadfile`, the README's, keeps them on one).
    runs = Runs(tmp_path_factory, split=request.config.getoption("dist", "no") == "load")
    try:
        yield runs
    finally:
        runs.pool.shutdown(wait=True, cancel_futures=True)


class Runs:
    """The variants' runs, started together on as many threads as there are cores the first
    time one is asked for; when the variants' tests are `split` among processes, only the
    one asked for."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory, split: bool) -> None:
        self.tmp_path_factory = tmp_path_factory
        self.split = split
        # As many at once as there are cores: all four at once was no faster (the three with
        # a test clock are CPU-bound), only more contended.
        self.pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 2)
        self.futures: dict[str, Future[Outcome]] = {}

    def __getitem__(self, name: str) -> Outcome:
        # real time first: its run is the longest (a minute-long wait costs a minute)
        every = sorted(VARIANTS, key=lambda v: (VARIANTS[v].test_clock, v))
        wanted = [name] if self.split else every
        for each in wanted:
            if each not in self.futures:
                self.futures[each] = self.pool.submit(self.run, each)
        return self.futures[name].result()

    def run(self, name: str) -> Outcome:
        tmp = self.tmp_path_factory.mktemp(name.lower().replace(" ", "-"))
        service = Partial(tmp, VARIANTS[name])
        began = time.monotonic()
        try:
            finished = arck("run", "--config", str(service.target_file), "--profile", "quick",
                            "--max-examples", "1", "--report-dir", str(tmp / "report"))
        finally:
            service.stop()
        report = json.loads((tmp / "report" / "report.json").read_text("utf-8"))
        return Outcome(finished.returncode, finished.stdout + finished.stderr,
                       time.monotonic() - began, report)


def _of(missing: tuple[str, ...], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cat = catalogue.load()
    areas = {r.id: r.area for r in cat.requirements}
    return [r for r in rows if r["id"] in missing or areas.get(r["id"]) in missing]


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_missing_area_is_not_applicable_never_not_testable(
    outcomes: Runs, name: str
) -> None:
    outcome = outcomes[name]
    print(f"{name}: exit {outcome.code} in {outcome.wall_s:.0f} s")
    rows = outcome.report["requirements"]
    judged = [r for r in rows if r["status"] in ("not_testable", "fail")]
    assert not judged, f"{name}: " + "; ".join(
        f"{r['id']} {r['status']}: {r['reason']}" for r in judged) + "\n" + outcome.output
    assert outcome.code == 0, outcome.output
    checks = {c["check_id"]: c for c in outcome.report["checks"]}
    for missing in VARIANTS[name].missing:
        _judge_missing(name, missing, rows, checks)
    assert any(r["status"] == "pass" for r in rows), f"{name}: nothing else was judged"


def _judge_missing(name: str, variant: Missing, rows: list[dict[str, Any]],
                   checks: dict[str, dict[str, Any]]) -> None:
    missing = [r for r in _of(variant.ids, rows)
               if r["checks"] and r["id"] not in variant.judged_anyway]
    assert missing, f"{name}: no requirement of the missing area is covered"
    for row in missing:
        of_area = [c for c in row["checks"] if c.startswith(variant.area_checks)] \
            if variant.area_checks else row["checks"]
        assert of_area, (name, row)
        others = [c for c in row["checks"] if c not in of_area]
        if not others:
            assert row["status"] == "not_applicable", (name, row)
            assert variant.why in row["reason"], (name, row)
        elif all(checks[c]["status"] == "not_applicable" for c in others):
            assert row["status"] == "not_applicable", (name, row)  # for another missing area
        else:
            assert row["status"] == "pass", (name, row)
        for check_id in of_area:
            assert checks[check_id]["status"] == "not_applicable", (name, checks[check_id])
            assert checks[check_id]["message"], (name, check_id)
            if variant.area_checks:
                assert variant.why in checks[check_id]["message"], (name, checks[check_id])
    by_id = {r["id"]: r for r in rows}
    for req_id in variant.judged_anyway:
        assert by_id[req_id]["status"] == "pass", (name, by_id[req_id])
