"""The terminal consumer of run events: a progress bar on a terminal, plain lines in CI logs."""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from arck.conformance.events import BaselineJudged, CheckFinished, Event, RunFinished, RunStarted
from arck.reports.model import CheckResult, Status

STYLE = {
    Status.PASS: "green",
    Status.FAIL: "bold red",
    Status.WARN: "yellow",
    Status.NOT_APPLICABLE: "dim",
    Status.NOT_TESTABLE: "bold magenta",
    Status.NOT_COVERED: "dim",
    Status.KNOWN_FAILURE: "dark_orange",
}

# Whose an error is, as a terminal line says it (reports/model.py PROBLEM_ORIGINS in full).
ORIGINS = {"target": "from the target", "arck": "in arck (please report it)"}


class Display:
    """Implements the `pytest_arck_event` hook."""

    def __init__(self, console: Console | None = None, interactive: bool | None = None) -> None:
        self.console = console or Console(highlight=False, soft_wrap=True)
        if interactive is None:
            interactive = sys.stdout.isatty() and not os.environ.get("CI")
        self.interactive = interactive
        self.progress: Progress | None = None
        self.task: Any = None

    def pytest_arck_event(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._started(event)
        elif isinstance(event, CheckFinished):
            self._finished(event)
        elif isinstance(event, BaselineJudged):
            self.console.print(f"[bold red]BASELINE[/] {event.message}", markup=True)
        elif isinstance(event, RunFinished):
            self._done(event)

    def _started(self, event: RunStarted) -> None:
        t = event.target
        self.console.print(
            f"arck: {event.total} checks against {t.get('name')} ({t.get('kind')}, "
            f"profile {t.get('profile')}), seed {event.seed}"
        )
        if self.interactive:
            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("checking", total=event.total)

    def _finished(self, event: CheckFinished) -> None:
        r = event.result
        if self.progress is not None:
            self.progress.update(self.task, advance=1, description=r.check_id)
        if r.status in (Status.FAIL, Status.NOT_TESTABLE, Status.WARN):
            style = STYLE[r.status]
            # Every distinct failure, each with its own replay line; a not-testable check has
            # none and shows its message.
            shown = [(f.message, f.replay) for f in r.failures] or [(r.message, r.replay)]
            for n, (message, replay) in enumerate(shown, 1):
                which = f" ({n} of {len(shown)})" if len(shown) > 1 else ""
                self.console.print(
                    f"[{style}]{r.status.value.upper()}[/] {escape(r.check_id)}{which} "
                    f"[{escape(', '.join(r.requirements))}]: {escape(message[:500])}",
                    markup=True,
                )
                if replay:
                    self.console.print(f"  replay: {replay}", markup=False)
            self._errors(r)

    def _errors(self, r: CheckResult) -> None:
        """Each error that kept the check from judging: whose it is, where arck raised it,
        the request it is about (the headline above already names a lone one)."""
        for n, problem in enumerate(r.errors, 1):
            origin = ORIGINS.get(problem.origin, problem.origin)
            if len(r.errors) > 1 or r.failures:
                self.console.print(f"  error {n} of {len(r.errors)}, {origin}: {problem.type}: "
                                   f"{problem.message[:500]}", markup=False)
            else:
                self.console.print(f"  {origin}: {problem.type}", markup=False)
            if problem.where:
                self.console.print(f"    raised at {problem.where}", markup=False)
            for line in (problem.request or "").splitlines()[:2]:
                self.console.print(f"    {line[:300]}", markup=False)

    def _done(self, event: RunFinished) -> None:
        if self.progress is not None:
            self.progress.stop()
        report = event.report
        summary = report.summary()
        table = Table(title="requirements", show_edge=False)
        for status in Status:
            table.add_column(status.value, justify="right", style=STYLE[status])
        table.add_row(*(str(summary["requirements"].get(s.value, 0)) for s in Status))
        self.console.print(table)
        checks = ", ".join(f"{n} {k}" for k, n in sorted(summary["checks"].items()))
        self.console.print(f"checks: {checks}")
        provider = {k: n for k, n in report.faults.items() if not k.startswith("executor:")}
        executor = {k.removeprefix("executor:"): n for k, n in report.faults.items()
                    if k.startswith("executor:")}
        for who, fired in (("provider", provider), ("executor", executor)):
            if fired:
                shown = ", ".join(f"{kind} {n}" for kind, n in fired.items())
                self.console.print(f"{who} faults fired: {shown}")
        if event.report_dir:
            self.console.print(f"reports: {event.report_dir}/report.html, report.json, junit.xml")
        verdict = {0: "[green]conformant[/]", 1: "[bold red]not conformant[/]"}.get(
            report.exit_code, "[bold red]not judged[/]"
        )
        self.console.print(f"{verdict} (exit {report.exit_code})", markup=True)
