"""`arck scenario list|run`: replayable scenarios (docs/scenarios.md), a sub-app of `arck`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from arck.conformance.outcomes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from arck.simulator.errors import TargetUnreachable, UsageError
from arck.simulator.factory import build_target
from arck.simulator.scenario.loader import SCENARIOS_DIR, list_scenarios, load_scenario
from arck.simulator.scenario.runner import run_scenario

__all__ = ["scenario_app"]

scenario_app = typer.Typer(
    help="Replayable scenarios: a story of runs against the simulated provider, judged.",
    no_args_is_help=True,
)
console = Console(highlight=False)


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True) if not isinstance(
        value, str) else value
    return text if len(text) <= 120 else text[:117] + "..."


@scenario_app.command("list")
def list_command(
    folder: Annotated[
        Path | None, typer.Argument(help="Folder of scenario files (default: scenarios/).")
    ] = None,
) -> None:
    """Each scenario of a folder: its name, the trap it shows, its file."""
    try:
        found = list_scenarios(folder or SCENARIOS_DIR)
    except UsageError as exc:
        console.print(f"arck scenario list: {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    table = Table()
    for column in ("name", "trap", "file"):
        table.add_column(column, overflow="fold")
    broken = 0
    for path, scenario in found:
        if isinstance(scenario, UsageError):
            broken += 1
            table.add_row("[red]invalid[/]", escape(str(scenario)), str(path))
        else:
            trap = scenario.description.split(". ")[0].removeprefix("The trap: ")
            table.add_row(scenario.name, escape(trap), str(path))
    console.print(table)
    console.print(f"{len(found)} scenario files" + (f", {broken} invalid" if broken else ""))
    if broken:
        raise typer.Exit(EXIT_USAGE)


@scenario_app.command("run")
def run_command(
    file: Annotated[Path, typer.Argument(help="The scenario file (YAML).")],
    target: Annotated[
        str | None,
        typer.Option(help="reference, mutant:NAME (targets with a simulated provider)."),
    ] = None,
    config: Annotated[Path | None, typer.Option(help="Target file (TOML).")] = None,
    seed: Annotated[int, typer.Option(help="Seed for names and generated results.")] = 0,
    trace: Annotated[
        Path | None, typer.Option(help="Write the JSONL trace here.")
    ] = None,
) -> None:
    """Run one scenario and judge it: exit 0 if every expectation holds, 1 if one does not.

    Exit 2 when it cannot be run: a bad file, a target without a simulated provider, or a
    step the target lacks.
    """
    try:
        scenario = load_scenario(file)
        built = build_target(target if target or config else "reference", config)
    except UsageError as exc:
        console.print(f"arck scenario run: {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    try:
        outcome = run_scenario(scenario, built, seed)
    except (UsageError, TargetUnreachable) as exc:
        console.print(f"arck scenario run: {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    finally:
        built.close()
    if trace is not None:
        outcome.trace.write(trace)
    table = Table(title=f"{scenario.name} on {built.info.location} (seed {seed})")
    for column in ("", "expectation", "expected", "seen"):
        table.add_column(column, overflow="fold")
    for judgement in outcome.verdict.judgements:
        mark = "[green]held[/]" if judgement.held else "[red]NOT HELD[/]"
        table.add_row(mark, escape(judgement.what), escape(_short(judgement.expected)),
                      escape(_short(judgement.seen)))
    console.print(table)
    failed = [j for j in outcome.verdict.judgements if not j.held]
    if trace is not None:
        console.print(f"trace: {trace}")
    if not failed:
        console.print(f"PASSED: {len(outcome.verdict.judgements)} expectations held")
        raise typer.Exit(EXIT_OK)
    replay = f"arck scenario run {file} --target {built.info.location} --seed {seed}"
    replay += f" --config {config}" if config is not None else ""
    console.print(f"FAILED: {len(failed)} of {len(outcome.verdict.judgements)} expectations "
                  "not held")
    # One line, never wrapped, so it can be copied as it is.
    console.print(f"replay: {escape(replay)} --trace {escape(scenario.name)}.trace.jsonl",
                  soft_wrap=True)
    raise typer.Exit(EXIT_FAILED)
