"""The `arck` command line: serve the reference, run the suite, list requirements, replay."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from rich.console import Console
from rich.table import Table

import arck
from arck.conformance import baseline as baseline_mod
from arck.conformance import catalogue, protocol_doc
from arck.conformance.coverage import CHECKS_DIR, coverage
from arck.conformance.display import Display
from arck.conformance.events import CheckFinished, ReplayJudged
from arck.conformance.outcomes import EXIT_USAGE
from arck.conformance.scenario_cli import scenario_app
from arck.simulator.errors import UsageError
from arck.simulator.factory import DEV_TOKENS, MUTANT_CATALOGUE, REFERENCE_APP, load_object

app = typer.Typer(
    name="arck",
    help="Agent Runtime Conformance Kit: check an agent runtime against the protocol.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(highlight=False)


class SearchProfile(StrEnum):
    quick = "quick"
    ci = "ci"
    thorough = "thorough"


def _version(value: bool) -> None:
    if value:
        console.print(f"arck {arck.__version__} (protocol {arck.PROTOCOL_REVISION})")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show version.")
    ] = False,
) -> None:
    """Agent Runtime Conformance Kit."""


def pytest_args(
    *,
    target: str | None,
    config: Path | None,
    requirements: str | None,
    seed: int | None,
    max_examples: int | None,
    profile: str,
    checks: str | None = None,
    strict: bool,
    report_dir: Path | None,
    case: Path | None = None,
    check_timeout: float | None = None,
    baseline: Path | None = None,
    workers: str = "1",
    more_failures_seconds: float | None = None,
    shrink: bool = True,
) -> list[str]:
    """The pytest command line that `arck run` and `arck replay` drive."""
    args = [
        str(CHECKS_DIR),
        "--rootdir",
        str(CHECKS_DIR),
        "-c",
        str(CHECKS_DIR / "pytest.ini"),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:terminal",
        # Checks raise CheckFailure, never bare asserts: skip the rewriting pass (seconds a run).
        "--assert=plain",
        "--arck-profile",
        profile,
    ]
    options: list[tuple[str, object]] = [
        ("--arck-target", target),
        ("--arck-config", config),
        ("--arck-requirements", requirements),
        ("--arck-checks", checks),
        ("--arck-seed", seed),
        ("--arck-max-examples", max_examples),
        ("--arck-report-dir", report_dir),
        ("--arck-case", case),
        ("--arck-check-timeout", check_timeout),
        ("--arck-baseline", baseline),
        ("--arck-more-failures-seconds", more_failures_seconds),
    ]
    for flag, value in options:
        if value is not None:
            args += [flag, str(value)]
    if strict:
        args.append("--arck-strict")
    if not shrink:
        args.append("--arck-no-shrink")
    if workers != "1":
        args += ["-n", workers, "--dist", "load"]
    return args


def parse_workers(value: str) -> str:
    """`--workers`: a count of processes, or `auto` for one per CPU core."""
    value = value.strip().lower()
    if value == "auto" or (value.isdigit() and int(value) >= 1):
        return value if value == "auto" else str(int(value))
    raise typer.BadParameter(f"expected a number of processes (1 or more) or 'auto', got {value!r}")


def _drive(args: list[str], *extra: object) -> int:
    code = pytest.main(args, plugins=[Display(), *extra])
    return int(code) if int(code) in (0, 1, 2) else EXIT_USAGE


@app.command()
def run(
    target: Annotated[
        str | None,
        typer.Option(help="reference | mutant:NAME | URL | app:pkg.mod:factory | adapter:…"),
    ] = None,
    config: Annotated[Path | None, typer.Option(help="Target file (TOML).")] = None,
    requirements: Annotated[
        str | None, typer.Option(help="Only these areas or IDs, e.g. BUD,DRY-06.")
    ] = None,
    checks: Annotated[
        str | None,
        typer.Option(help="Only these checks, by id or prefix as reports name them, e.g. "
                     "runs_edges/,budget/test_budget_is_used."),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for every random choice.")] = None,
    max_examples: Annotated[int | None, typer.Option(help="Examples per property check.")] = None,
    profile: Annotated[SearchProfile, typer.Option(help="Search effort.")] = SearchProfile.ci,
    strict: Annotated[bool, typer.Option(help="Recommended failures fail the run too.")] = False,
    report_dir: Annotated[Path, typer.Option(help="Where reports go.")] = Path("arck-reports"),
    check_timeout: Annotated[
        float | None, typer.Option(help="Seconds before a hung check is not testable.")
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(help="Expected failures (from `arck baseline`); new or stale ones fail."),
    ] = None,
    workers: Annotated[
        str,
        typer.Option(
            help="Processes to spread checks over (pytest-xdist): a number, or auto for one "
            "per core. Each builds its own target; a rate cap is shared among them.",
            parser=parse_workers,
        ),
    ] = "1",
    more_failures_seconds: Annotated[
        float,
        typer.Option(
            min=0,
            help="After a check's first failure, how many seconds hypothesis goes on looking "
            "for other distinct failures (0: stop at the first). Raise it for a slow "
            "service; every failure found, and the first, replays exactly either way.",
        ),
    ] = 10.0,
    shrink: Annotated[
        bool,
        typer.Option(
            help="Minimise each failing input before reporting it. --no-shrink stops a check "
            "at its first failing input, kept as found: a faster verdict (a gate that needs "
            "only pass or fail), larger case files that replay the same way.",
        ),
    ] = True,
) -> None:
    """Run the conformance suite; exit 0 conformant, 1 not, 2 usage error or unreachable."""
    if target is None and config is None:
        console.print("arck run: give --target or --config (see arck run --help)")
        raise typer.Exit(EXIT_USAGE)
    args = pytest_args(
        target=target,
        config=config,
        requirements=requirements,
        checks=checks,
        seed=seed,
        max_examples=max_examples,
        profile=profile.value,
        strict=strict,
        report_dir=report_dir,
        check_timeout=check_timeout,
        baseline=baseline,
        workers=workers,
        more_failures_seconds=more_failures_seconds,
        shrink=shrink,
    )
    raise typer.Exit(_drive(args))


class ByWhat(StrEnum):
    id = "id"
    check = "check"


@app.command("baseline")
def make_baseline(
    report_dir: Annotated[Path, typer.Argument(help="A report directory of `arck run`.")],
    out: Annotated[
        Path | None,
        typer.Option(help="The baseline file to write [default: arck-baseline.json, or the "
                     "--prune file itself]."),
    ] = None,
    by: Annotated[
        ByWhat, typer.Option(help="One entry per requirement ID, or per ID and check.")
    ] = ByWhat.check,
    prune: Annotated[
        Path | None,
        typer.Option(help="Instead: drop from this baseline the entries that REPORT_DIR's run "
                     "(made with --baseline) judged stale."),
    ] = None,
) -> None:
    """Record a report's failures, with their counterexamples, as a baseline file."""
    if prune is not None:
        made, notes = baseline_mod.prune(baseline_mod.load(prune), report_dir)
        out = out or prune
    else:
        made, notes = baseline_mod.from_report(report_dir, by.value)
        out = out or Path("arck-baseline.json")
    for note in notes:
        console.print(f"arck baseline: {note}", markup=False)
    out.write_text(baseline_mod.dump(made), "utf-8")
    console.print(f"{len(made.entries)} entries written to {out}; "
                  f"use it as arck run --baseline {out}", markup=False)


class _Exchanges:
    """Collects the HTTP exchanges of replayed checks, to print as curl lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.judged: ReplayJudged | None = None

    def pytest_arck_event(self, event: Any) -> None:
        if isinstance(event, CheckFinished):
            self.lines += event.result.exchanges
        elif isinstance(event, ReplayJudged):
            self.judged = event


@app.command()
def replay(
    case: Annotated[Path, typer.Argument(help="A case file from a report's cases/ folder.")],
    target: Annotated[str | None, typer.Option(help="The target to replay against.")] = None,
    config: Annotated[Path | None, typer.Option(help="Target file (TOML).")] = None,
) -> None:
    """Re-run one stored failing case: prints FIXED or STILL FAILING.

    A scenario file (`.yaml`, as a failing stateful check writes beside its case file) is
    run as `arck scenario run` runs it: FIXED when every expectation holds.
    """
    if case.suffix in (".yaml", ".yml"):
        raise typer.Exit(_replay_scenario(case, target, config))
    try:
        data = json.loads(case.read_text("utf-8"))
        check_name = data["check"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        console.print(f"arck replay: {case} is not an arck case file ({exc})")
        raise typer.Exit(EXIT_USAGE) from None
    args = pytest_args(
        target=target or ("reference" if config is None else None),
        config=config,
        requirements=None,
        seed=data.get("seed"),
        max_examples=None,
        profile="quick",
        strict=True,
        report_dir=None,
        case=case,
    )
    exchanges = _Exchanges()
    code = _drive(args, exchanges)
    if exchanges.lines:
        console.print("reproduction (the failing input's HTTP exchanges):", markup=False)
        for line in exchanges.lines:
            console.print(line, markup=False, soft_wrap=True)
    verdict = {0: "FIXED", 1: "STILL FAILING"}.get(code, "NOT JUDGED")
    how = ""
    if code == 1 and exchanges.judged is not None:
        how = f", {exchanges.judged.how}"
    elif code == 1:  # no failure was judged: the check stopped before it (not testable)
        verdict = "NOT JUDGED"
    console.print(f"{verdict}: {check_name} ({', '.join(data.get('requirements', []))}){how}",
                  markup=False)
    raise typer.Exit(code)


def _replay_scenario(path: Path, target: str | None, config: Path | None) -> int:
    """`arck replay SCENARIO.yaml`: run it, print what did not hold and the verdict."""
    from arck.simulator.errors import TargetUnreachable
    from arck.simulator.factory import build_target
    from arck.simulator.scenario.loader import load_scenario
    from arck.simulator.scenario.runner import run_scenario

    try:
        scenario = load_scenario(path)
        built = build_target(target if target or config else "reference", config)
    except UsageError as exc:
        console.print(f"arck replay: {exc}", markup=False)
        return EXIT_USAGE
    try:
        outcome = run_scenario(scenario, built, 0)
    except (UsageError, TargetUnreachable) as exc:
        console.print(f"arck replay: {exc}", markup=False)
        return EXIT_USAGE
    finally:
        built.close()
    for judgement in outcome.verdict.judgements:
        if not judgement.held:
            console.print(f"not held: {judgement.what}: expected {judgement.expected}; saw "
                          f"{judgement.seen}", markup=False, soft_wrap=True)
    verdict = "FIXED" if outcome.verdict.held else "STILL FAILING"
    console.print(f"{verdict}: scenario {scenario.name} on {built.info.location}", markup=False)
    return 0 if outcome.verdict.held else 1


@app.command("check-tool")
def check_tool(
    samples: Annotated[
        list[Path],
        typer.Argument(metavar="SAMPLE", help="Real-size sample results: JSON files."),
    ],
    target: Annotated[
        str | None, typer.Option(help="reference (default) | mutant:NAME | URL | app:… | adapter:…")
    ] = None,
    config: Annotated[Path | None, typer.Option(help="Target file (TOML).")] = None,
    budget: Annotated[
        int | None, typer.Option(help="The tool's max_result_context_bytes (default: 16,384).")
    ] = None,
    field: Annotated[
        list[str] | None, typer.Option(help="Also watch this JSON Pointer (repeatable).")
    ] = None,
    default_fields: Annotated[
        bool, typer.Option(help="Watch id, status, cursor and the like at any depth.")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead.")] = False,
    report: Annotated[Path | None, typer.Option(help="Also write the JSON to this file.")] = None,
) -> None:
    """Show whether cursors, ids and status stay visible in dry-run previews (H-06).

    Exit 0 every gating field visible, 1 one lost (the result's own or a --field), 2 usage
    error or the target did not answer.
    """
    from arck.conformance import checktool
    from arck.conformance.errors import NotTestable, TargetUnreachable

    try:
        outcome = checktool.run(samples, target_spec=target, config=config, budget=budget,
                                named=field or (), defaults=default_fields)
    except (UsageError, NotTestable, TargetUnreachable) as exc:
        kind = "target unreachable: " if isinstance(exc, TargetUnreachable) else ""
        typer.echo(f"arck check-tool: {kind}{exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    text = json.dumps(checktool.document(outcome), indent=1, ensure_ascii=False)
    if report is not None:
        try:
            report.write_text(text + "\n", "utf-8")
        except OSError as exc:
            typer.echo(f"arck check-tool: --report {report}: {exc.strerror or exc}", err=True)
            raise typer.Exit(EXIT_USAGE) from None
    if as_json:
        typer.echo(text)
    else:
        checktool.render(outcome, console)
    raise typer.Exit(outcome.exit_code)


@app.command()
def requirements(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    markdown: Annotated[
        bool,
        typer.Option("--markdown", help="Print the protocol as Markdown (docs/protocol.md)."),
    ] = False,
    unicode: Annotated[
        bool, typer.Option("--unicode", help="Print the reference's Unicode version.")
    ] = False,
) -> None:
    """The protocol's requirements (docs/protocol.md) and which checks cover each one."""
    if unicode:
        version = load_object("arck.reference.projection:unicode_version")()
        console.print(f"reference grapheme segmentation: Unicode {version}")
        return
    cat = catalogue.load()
    if markdown:
        if as_json:
            console.print("arck requirements: --json and --markdown are alternatives")
            raise typer.Exit(EXIT_USAGE)
        typer.echo(protocol_doc.render(cat), nl=False)
        return
    covered = coverage()
    if as_json:
        rows = [
            {"id": r.id, "level": r.level, "area": r.area, "text": r.text,
             "checks": covered.get(r.id, []), "pending": r.pending}
            for r in cat.requirements
        ]
        typer.echo(json.dumps({"revision": cat.revision, "requirements": rows}, indent=1))
        return
    table = Table(title=f"protocol revision {cat.revision}")
    for column in ("ID", "level", "checks"):
        table.add_column(column)
    for r in cat.requirements:
        checks = covered.get(r.id)
        table.add_row(r.id, r.level, ", ".join(checks) if checks else "[dim]not covered[/]")
    console.print(table)
    n = sum(1 for r in cat.requirements if r.id in covered)
    console.print(f"{n} of {len(cat.requirements)} requirements covered")


@app.command()
def mutants() -> None:
    """The known-bad variants of the reference (`--target mutant:NAME`)."""
    table = Table()
    for column in ("name", "breaks", "what it does wrong"):
        table.add_column(column)
    for name, mutant in sorted(load_object(MUTANT_CATALOGUE).items()):
        table.add_row(name, ", ".join(mutant.breaks), mutant.description)
    console.print(table)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8780,
    database: Annotated[
        str,
        typer.Option(
            "--db", "--database",
            help="SQLite file (a restart continues its runs), or :memory:.",
        ),
    ] = "arck-reference.sqlite3",
    target: Annotated[
        str, typer.Option(help="What to serve: reference or mutant:NAME.")
    ] = "reference",
    provider_url: Annotated[
        str | None,
        typer.Option(help="Base URL of the OpenAI-compatible model provider runs call, e.g. "
                          "http://127.0.0.1:8900/v1 (arck simulate provider prints it)."),
    ] = None,
    test_clock: Annotated[
        bool,
        typer.Option(help="Run on a virtual clock that moves only on POST "
                          "/v1/test-control/clock {\"advance_seconds\": N} (capability "
                          "test-clock). Tests only."),
    ] = False,
    lease_seconds: Annotated[
        float,
        typer.Option(help="How long a worker's claim on a run lasts unless renewed; a run "
                          "whose worker died is taken over after it (RUN-02)."),
    ] = 15.0,
    executor_secret: Annotated[
        str | None,
        typer.Option(envvar="ARCK_EXECUTOR_SECRET",
                     help="Secret executor tokens are derived from (at least 16 characters); "
                          "default: a fixed development secret. Changing it revokes every "
                          "executor token issued under the old one."),
    ] = None,
    crash_at_commit: Annotated[
        int | None,
        typer.Option(help="Tests only: the process kills itself (SIGKILL) inside its N-th "
                          "write transaction, its changes written but not committed, to "
                          "test restarts on the same --db (reference/crashpoint.py)."),
    ] = None,
) -> None:
    """Serve the reference engine (or a mutant) over HTTP for a manual or external run."""
    import uvicorn

    from arck.simulator.provider.server import listen

    problem = _serve_problem(port, database, provider_url, lease_seconds)
    if problem is None and crash_at_commit is not None and crash_at_commit < 1:
        problem = f"--crash-at-commit must be 1 or more, not {crash_at_commit}"
    if problem is not None:
        console.print(f"arck serve: {problem}")
        raise typer.Exit(EXIT_USAGE)
    wiring: dict[str, Any] = {}
    if provider_url is not None:
        wiring["provider_url"] = provider_url.rstrip("/")
    if test_clock:
        wiring["test_clock"] = True
    if lease_seconds != 15.0:
        wiring["lease_seconds"] = lease_seconds
    if executor_secret is not None:
        if len(executor_secret) < 16:
            console.print("arck serve: --executor-secret (ARCK_EXECUTOR_SECRET) must have at "
                          "least 16 characters")
            raise typer.Exit(EXIT_USAGE)
        wiring["executor_secret"] = executor_secret
    if target == "reference":
        application = load_object(REFERENCE_APP)(database=database, **wiring)
    elif target.startswith("mutant:"):
        build = load_object("arck.reference.mutants:build_app")
        try:
            application = build(target[7:], **wiring) if wiring else build(target[7:])
        except KeyError as exc:
            console.print(f"arck serve: {exc.args[0]}")
            raise typer.Exit(EXIT_USAGE) from None
    else:
        console.print("arck serve: --target is reference or mutant:NAME")
        raise typer.Exit(EXIT_USAGE)
    if crash_at_commit is not None:
        load_object("arck.reference.crashpoint:arm")(
            application.state.engine.store, crash_at_commit)
    try:
        sock = listen(host, port)
    except OSError as exc:
        console.print(f"arck serve: cannot listen on {host}:{port}: {exc}")
        raise typer.Exit(EXIT_USAGE) from None
    console.print(f"arck reference engine on http://{host}:{port} (database {database})")
    if provider_url is not None:
        console.print(f"model provider: {wiring['provider_url']}")
    if test_clock:
        console.print("test clock: time moves only on POST /v1/test-control/clock")
    console.print("executor tokens: derived from " + (
        "ARCK_EXECUTOR_SECRET" if executor_secret is not None
        else "the development secret (tests only; set ARCK_EXECUTOR_SECRET)"))
    console.print("development credentials (tests only):")
    for role, token in DEV_TOKENS.items():
        console.print(f"  {role:<14} Bearer {token}")
    console.print(f"check it: arck run --target http://{host}:{port}")
    config = uvicorn.Config(application, log_level="warning", loop="asyncio")
    uvicorn.Server(config).run(sockets=[sock])


def _serve_problem(
    port: int, database: str, provider_url: str | None, lease_seconds: float
) -> str | None:
    """What is wrong with `arck serve`'s flags, in a sentence; None when they are usable."""
    import math
    import sqlite3
    from urllib.parse import urlsplit

    if not 1 <= port <= 65535:
        return f"--port must be 1..65535, not {port}"
    if not (math.isfinite(lease_seconds) and 0.1 <= lease_seconds <= 86_400):
        return f"--lease-seconds must be 0.1..86400, not {lease_seconds}"
    if provider_url is not None:
        parts = urlsplit(provider_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return (f"--provider-url must be an http(s) URL with a host, such as "
                    f"http://127.0.0.1:8900/v1, not {provider_url!r}")
        if parts.query or parts.fragment:
            return f"--provider-url takes no query or fragment: {provider_url!r}"
        try:
            parts.port  # noqa: B018 (raises on a bad port)
        except ValueError as exc:
            return f"--provider-url: {exc}"
    if database != ":memory:":
        path = Path(database)
        if path.is_dir():
            return f"--db {database}: is a directory; give a SQLite file"
        if not path.parent.is_dir():
            return f"--db {database}: the folder {str(path.parent)!r} does not exist"
        if path.exists():
            # Read-write, as the engine opens it: a process killed inside a write leaves a
            # hot journal, which only a connection that may write can roll back (a read-only
            # one refuses the file, "attempt to write a readonly database", every time).
            try:
                db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True)
                try:
                    db.execute("PRAGMA schema_version").fetchone()
                    # A damaged page would only show when a request reaches it: look now.
                    found = [str(row[0]) for row in db.execute("PRAGMA quick_check(5)")]
                finally:
                    db.close()
            except sqlite3.Error as exc:
                return f"--db {database}: not a usable SQLite database ({exc})"
            if found != ["ok"]:
                return (f"--db {database}: the database is damaged (PRAGMA quick_check: "
                        f"{'; '.join(found)}); restore it from a backup, or give a new file")
    return None


simulate = typer.Typer(help="Simulators an engine under test calls.", no_args_is_help=True)
app.add_typer(simulate, name="simulate")
app.add_typer(scenario_app, name="scenario")


@simulate.command("provider")
def simulate_provider(
    port: Annotated[int, typer.Option(help="Port (0: any free one).")],
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    seed: Annotated[int, typer.Option(help="Seed for the default answers' words.")] = 0,
    script: Annotated[Path | None, typer.Option(
        help="Script file (YAML/JSON): scripts, models, context_windows (docs/provider.md).",
    )] = None,
) -> None:
    """Serve the simulated model provider (OpenAI chat completions, docs/provider.md)."""
    from arck.simulator.clock import RealClock
    from arck.simulator.provider import SimulatedProvider, serve
    from arck.simulator.provider.scriptfile import load_script_file

    provider = SimulatedProvider(clock=RealClock(), seed=seed)
    scripted = ""
    if script is not None:
        loaded = load_script_file(script)  # a UsageError: the message, exit 2
        loaded.install(provider)
        scripted = (f"; {script}: {len(loaded.scripts)} script(s), "
                    f"{len(loaded.models)} model script(s)")

    def announce(url: str) -> None:
        typer.echo(f"arck simulated provider on {url} (seed {seed}{scripted})")
        typer.echo(f"point an engine's OpenAI base URL at it; lookups: {url}/arck/requests")

    try:
        serve(provider, host, port, announce)
    except OSError as exc:
        console.print(f"arck simulate provider: cannot listen on {host}:{port}: {exc}")
        raise typer.Exit(EXIT_USAGE) from None


def main() -> None:
    try:
        app()
    except UsageError as exc:  # a message naming a file: never wrapped inside a path
        console.print(f"arck: {exc}", markup=False, soft_wrap=True)
        raise SystemExit(EXIT_USAGE) from None




if __name__ == "__main__":
    main()
