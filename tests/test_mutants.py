"""The check × mutant table (SPEC H-04): the suite catches every known-bad variant.

Each mutant is run through `arck run` (a child forked from a warm server, `forkrun.py`: the same
command line and exit code as a subprocess, without two hundred cold imports), on the
requirements it claims to break, narrowed with `--checks` to the checks recorded as catching it
where `mutant_checks.json` names checks covering all of them (each must still fail): each
requirement must fail (warn, for a recommended one), never "not
testable" (a mutant that breaks setup proves nothing about a check). A mutant runs first with
`--no-shrink` (most of a table's time was shrinking what it had already caught), and again
by default only when that leaves one of its requirements unfailed. Every check of the suite
must be failed by at least one mutant, and the reference itself must pass. The runs are slow,
so one session fixture starts all the runs the selected tests need at once, in parallel, and
the tests read them.

The test command runs a fixed part of the catalogue: the fewest mutants that between them
fail every check the record names, and any mutant not recorded yet, so every check is shown to
fail on each run (a third of the catalogue, a third of the time). `ARCK_MUTANT_TABLE=full
pytest tests/test_mutants.py` runs every mutant (benchmarks/README.md has its last figures):
run it when a check or a mutant changes, and before a release.

`ARCK_RECORD_MUTANT_CHECKS=1 pytest tests/test_mutants.py [-k NAME]` runs the mutants selected
(from the whole catalogue) on every check of their requirements instead, and records which
checks fail on each.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from forkrun import arck as forked_arck

from arck.conformance import catalogue
from arck.conformance.coverage import coverage
from arck.reference.mutants import CATALOGUE, Mutant, build_app

REFERENCE = "reference"
SEED, EXAMPLES, CHECK_TIMEOUT = "1", "40", "300"
CHECKS_FILE = Path(__file__).with_name("mutant_checks.json")  # mutant → the checks it fails
RECORD = bool(os.environ.get("ARCK_RECORD_MUTANT_CHECKS"))
RECORD_HOW = "ARCK_RECORD_MUTANT_CHECKS=1 pytest tests/test_mutants.py -k"


def _recorded() -> dict[str, list[str]]:
    if not CHECKS_FILE.exists():
        return {}
    found: dict[str, list[str]] = json.loads(CHECKS_FILE.read_text("utf-8"))
    return found


CAUGHT_BY = _recorded()
FULL_TABLE = RECORD or os.environ.get("ARCK_MUTANT_TABLE") == "full"


def _covering() -> list[str]:
    """The test command's table: the fewest mutants that between them fail every recorded
    check (a greedy cover of `mutant_checks.json`, those with fewer checks to run first on a
    tie), and every mutant not recorded yet. Deterministic: the same table on every run."""
    uncovered = {check for checks in CAUGHT_BY.values() for check in checks}
    chosen = sorted(name for name in CATALOGUE if name not in CAUGHT_BY)
    while uncovered:
        best = max(sorted(CAUGHT_BY), key=lambda name: (
            len(uncovered & set(CAUGHT_BY[name])), -len(CAUGHT_BY[name])))
        chosen.append(best)
        uncovered -= set(CAUGHT_BY[best])
    return sorted(name for name in chosen if name in CATALOGUE)


# Every mutant with ARCK_MUTANT_TABLE=full (and when recording): benchmarks/README.md.
TABLE = sorted(CATALOGUE) if FULL_TABLE else _covering()


@functools.cache
def _coverage() -> dict[str, list[str]]:
    return coverage()


def _narrowed(name: str) -> list[str]:
    """The checks recorded as catching mutant `name`, when they cover every requirement it
    breaks (else [], every check of its requirements: a record must never hide one)."""
    recorded = [] if RECORD else CAUGHT_BY.get(name, [])
    covered = {rid for rid, checks in _coverage().items() if set(checks) & set(recorded)}
    return recorded if recorded and set(CATALOGUE[name].breaks) <= covered else []
TIMEOUT_S = 900
FAILED = ("fail", "warn")  # a recommended requirement fails as a warning


@dataclass(frozen=True)
class Run:
    """One `arck run`: its exit code, its console output and its report.json (if written)."""

    returncode: int
    output: str
    report: dict[str, Any] | None

    def failed_checks(self) -> list[str]:
        checks = self.report["checks"] if self.report else []
        return [c["check_id"] for c in checks if c["status"] in FAILED]

    def catches(self, breaks: tuple[str, ...], checks: list[str]) -> bool:
        """Every requirement in `breaks` failed (or warned), and every check in `checks`."""
        rows = self.report["requirements"] if self.report else []
        failed = {row["id"] for row in rows if row["status"] in FAILED}
        return set(breaks) <= failed and set(checks) <= set(self.failed_checks())

    def describe(self, requirement: str) -> str:
        checks = self.report["checks"] if self.report else []
        lines = [
            f"  {c['check_id']}: {c['status']} {c['message'][:400]}"
            for c in checks
            if requirement in c["requirements"]
        ]
        return "\n".join(lines) or self.output[-3000:]


def _arck_run(target: str, args: list[str], report_dir: Path) -> Run:
    """`arck run` on `target`: the README's main job as a subprocess, exactly as a user types
    it; a mutant's run forked from the warm server."""
    args = ["run", "--target", target, *args, "--report-dir", str(report_dir)]
    if target == REFERENCE:
        done = subprocess.run(
            [sys.executable, "-m", "arck.conformance.cli", *args], capture_output=True,
            text=True, check=False, timeout=TIMEOUT_S, cwd=report_dir.parent,
            env={**os.environ, "CI": "true"},
        )
        returncode, output = done.returncode, done.stdout + done.stderr
    else:
        log = report_dir.parent / f"{report_dir.name}.log"
        finished = forked_arck(args, report_dir.parent, log, TIMEOUT_S)
        returncode, output = finished.returncode, finished.output
    path = report_dir / "report.json"
    report = json.loads(path.read_text("utf-8")) if path.exists() else None
    return Run(returncode, output, report)


class Runs:
    """All the runs a session needs, started together on as many workers as there are cores."""

    def __init__(self, root: Path, names: list[str]) -> None:
        self.root = root
        self.pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 2)
        self.futures: dict[str, Future[Run]] = {}
        for name in names:
            self.start(name)

    def start(self, name: str) -> Future[Run]:
        if name not in self.futures:
            self.futures[name] = self.pool.submit(self._run, name, self.root / name)
        return self.futures[name]

    @staticmethod
    def _run(name: str, report_dir: Path) -> Run:
        if name == REFERENCE:  # the README's main job, as CI runs it (profile ci, seed 0)
            return _arck_run(REFERENCE, ["--workers", "auto"], report_dir)
        mutant = CATALOGUE[name]
        # A check that finds a mutant's failure then shrinks it; on a loaded 2-core runner that
        # can pass the default 120 s per check (calibrated-value-as-sample did), which would
        # be "not testable" instead of the failure it found.
        args = ["--requirements", ",".join(mutant.breaks), "--seed", SEED,
                "--max-examples", EXAMPLES, "--check-timeout", CHECK_TIMEOUT]
        narrowed = _narrowed(name)
        if narrowed:
            args += ["--checks", ",".join(narrowed)]
        # First each check stops at its first failure, unminimised (a shrinking search starts
        # from that same input and keeps its kind of failure, so a requirement failed here
        # fails in a default run too). A requirement left unfailed may be a second distinct
        # failure: then the search for more, still unshrunk, then the default run.
        passes: tuple[list[str], ...] = (
            ["--no-shrink", "--more-failures-seconds", "0"], ["--no-shrink"], [])
        for n, extra in enumerate(passes):
            found = _arck_run(f"mutant:{name}", [*args, *extra],
                              report_dir.with_name(f"{name}-{n}") if n else report_dir)
            if found.catches(mutant.breaks, narrowed):
                break
        return found

    def get(self, name: str) -> Run:
        return self.start(name).result()

    def table(self) -> dict[str, list[str]]:
        """Check id → the mutants of the table that fail it."""
        found: dict[str, list[str]] = {}
        for name in TABLE:
            for check_id in self.get(name).failed_checks():
                found.setdefault(check_id, []).append(name)
        return found

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        if RECORD:  # the file keeps the mutants this session did not run
            recorded = _recorded()
            for name, future in self.futures.items():
                if name != REFERENCE and future.done() and not future.cancelled():
                    recorded[name] = sorted(future.result().failed_checks())
            CHECKS_FILE.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n",
                                   "utf-8")


def _needed(items: list[pytest.Item]) -> list[str]:
    """The runs the selected tests of this module read, longest first."""
    wanted: set[str] = set()
    for item in items:
        if not isinstance(item, pytest.Function) or item.module.__name__ != __name__:
            continue
        name = item.originalname
        if name == "test_mutant_is_caught":
            wanted.add(str(item.callspec.params["name"]))
        elif name == "test_every_check_fails_on_some_mutant":
            wanted.update(TABLE)
        elif name in ("test_reference_passes_the_main_job",
                      "test_every_fault_kind_fires_in_the_main_job"):
            wanted.add(REFERENCE)
    return sorted(wanted, key=_expected_cost, reverse=True)


def _expected_cost(name: str) -> tuple[int, str]:
    """Longest first, so two workers finish together: the reference, then property checks."""
    if name == REFERENCE:
        return 2, name
    return int(any(rid.startswith("BUD") for rid in CATALOGUE[name].breaks)), name


@pytest.fixture(scope="session")
def runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runs]:
    started = Runs(tmp_path_factory.mktemp("mutants"), _needed(request.session.items))
    yield started
    started.close()


def _level(rid: str) -> str:
    return catalogue.load().get(rid).level


# -- the catalogue itself ------------------------------------------------------------------------


def test_catalogue_is_well_formed() -> None:
    known = set(catalogue.load().ids())
    assert len(CATALOGUE) >= 30
    assert "chars-not-bytes" in CATALOGUE  # tests/conformance/test_cli.py uses it
    for name, mutant in CATALOGUE.items():
        assert mutant.name == name
        assert mutant.breaks, name
        assert set(mutant.breaks) <= known, (name, set(mutant.breaks) - known)
        assert mutant.factory.startswith("arck.reference.mutants."), name
        assert mutant.description, name
        assert "\n" not in mutant.description, name


@pytest.mark.parametrize("mutant", CATALOGUE.values(), ids=lambda m: m.name)
def test_every_mutant_builds(mutant: Mutant) -> None:
    app = build_app(mutant.name)
    assert any(getattr(route, "path", "") == "/v1/tools/dry-run" for route in app.routes)


def test_unknown_mutant_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="chars-not-bytes"):
        build_app("no-such-mutant")


# -- the check × mutant table --------------------------------------------------------------------


@pytest.mark.parametrize("name", TABLE)
def test_mutant_is_caught(name: str, runs: Runs) -> None:
    mutant = CATALOGUE[name]
    run = runs.get(name)
    assert run.report is not None, f"{name}: no report.json\n{run.output[-3000:]}"
    statuses = {row["id"]: row["status"] for row in run.report["requirements"]}
    for rid in mutant.breaks:
        want = "warn" if _level(rid) == "recommended" else "fail"
        assert statuses[rid] == want, (
            f"mutant {name} ({mutant.description}): {rid} is {statuses[rid]!r}, "
            f"expected {want!r}\n{run.describe(rid)}"
        )
    core_broken = any(_level(rid) != "recommended" for rid in mutant.breaks)
    assert run.returncode == (1 if core_broken else 0), run.output[-3000:]
    silent = sorted(set(_narrowed(name)) - set(run.failed_checks()))
    assert not silent, (
        f"mutant {name}: recorded checks that no longer fail on it: {silent}; record them "
        f"again: {RECORD_HOW} '{name}'\n{run.output[-3000:]}")


def test_recorded_checks_are_the_suites() -> None:
    """The record names mutants of the catalogue and checks of the suite (a mutant it does not
    name runs on every check of its requirements)."""
    known = {check for ids in coverage().values() for check in ids}
    stale = sorted(name for name in CAUGHT_BY if name not in CATALOGUE)
    assert not stale, f"recorded mutants the catalogue no longer has: {stale}"
    empty = sorted(name for name, checks in CAUGHT_BY.items() if not checks)
    assert not empty, f"mutants recorded with no catching check: {empty}"
    unknown = sorted({c for checks in CAUGHT_BY.values() for c in checks} - known)
    assert not unknown, f"recorded checks the suite no longer has: {unknown}; record again: " \
        f"{RECORD_HOW} NAME"


def test_every_check_fails_on_some_mutant(runs: Runs) -> None:
    checks = sorted({check for ids in coverage().values() for check in ids})
    table = runs.table()
    uncaught = [check for check in checks if not table.get(check)]
    rows = "\n".join(f"  {check:<60} {', '.join(table.get(check, [])) or '-'}" for check in checks)
    print(f"check × mutant table:\n{rows}")  # shown with -s or -rP
    assert not uncaught, f"checks no mutant fails: {uncaught} (a new check: record the mutants " \
        f"that fail it, {RECORD_HOW} 'NAME')\ncheck × mutant table:\n{rows}"


def test_reference_passes_the_main_job(runs: Runs) -> None:
    run = runs.get(REFERENCE)
    assert run.returncode == 0, run.output[-3000:]
    assert run.report is not None
    failing = [
        row["id"] for row in run.report["requirements"]
        if row["status"] in ("fail", "not_testable") and row["level"] != "recommended"
    ]
    assert not failing, run.output[-3000:]


def test_every_fault_kind_fires_in_the_main_job(runs: Runs) -> None:
    """Every fault kind of the simulated provider and executor fires at least once in the
    main job (profile ci): one that never fires leaves what depends on it unchecked there."""
    from arck.simulator.executor import FAULT_KINDS as EXECUTOR_FAULTS
    from arck.simulator.provider.script import FAULT_KINDS as PROVIDER_FAULTS

    run = runs.get(REFERENCE)
    assert run.report is not None, run.output[-3000:]
    fired = run.report["faults"]
    expected = [*PROVIDER_FAULTS, *(f"executor:{kind}" for kind in EXECUTOR_FAULTS)]
    silent = [kind for kind in expected if fired.get(kind, 0) < 1]
    assert not silent, f"fault kinds that never fired in the main job: {silent}; fired: {fired}"
