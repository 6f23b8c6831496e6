"""Events from a run; the progress display and the report writers consume the same stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arck.reports.model import CheckResult, RunReport


@dataclass(frozen=True)
class RunStarted:
    target: dict[str, Any]
    seed: int | None
    total: int


@dataclass(frozen=True)
class CheckFinished:
    result: CheckResult


@dataclass(frozen=True)
class BaselineJudged:
    """A baseline entry that fails the run: stale, or could not be judged."""

    message: str


@dataclass(frozen=True)
class ReplayJudged:
    """A replayed case failed again: the way it was found (`same`), or another (`how`)."""

    check: str
    same: bool
    how: str


@dataclass(frozen=True)
class RunFinished:
    report: RunReport
    report_dir: str | None


Event = RunStarted | CheckFinished | BaselineJudged | ReplayJudged | RunFinished


class hookspecs:
    """The hook other plugins (the CLI's display, for one) implement to receive events."""

    @staticmethod
    def pytest_arck_event(event: Event) -> None:
        """Called for every arck event, in order."""
