"""Write every report format into one directory: what `arck run --report-dir` calls."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

from arck.reports.html import write_html
from arck.reports.json_report import write_json
from arck.reports.junit import write_junit
from arck.reports.model import RunReport

Writer = Callable[[RunReport, Path], None]

# format name -> (file name, writer)
REPORT_FILES: Mapping[str, tuple[str, Writer]] = MappingProxyType(
    {
        "junit": ("junit.xml", write_junit),
        "json": ("report.json", write_json),
        "html": ("report.html", write_html),
    }
)


def write_all(report: RunReport, directory: Path) -> dict[str, Path]:
    """Write junit.xml, report.json and report.html into `directory` (created if missing).

    Returns the written paths by format name ("junit", "json", "html").
    """
    directory.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for fmt, (name, write) in REPORT_FILES.items():
        write(report, directory / name)
        written[fmt] = directory / name
    return written
