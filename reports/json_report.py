"""The JSON report for machines: `RunReport.to_dict()` plus `schema_version`.

The output is always valid UTF-8 and valid JSON (RFC 8259) whatever the inputs held: lone
surrogates are written as `\\udXXX` escapes (Python reads the same string back), non-finite
floats as strings (see `jsonable`). `report.schema.json` next to this module describes it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, cast

from arck.reports._text import jsonable, write_bytes
from arck.reports.model import RunReport

SCHEMA_VERSION = 1


def render_json(report: RunReport) -> str:
    """The JSON document for `report`: sorted keys, indented, non-ASCII kept as is."""
    data = jsonable(report.to_dict())
    data["schema_version"] = SCHEMA_VERSION
    text = json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True, allow_nan=False)
    # Surrogates only occur inside string literals, where `\udXXX` is a valid JSON escape.
    return text.encode("utf-8", "backslashreplace").decode("utf-8") + "\n"


def write_json(report: RunReport, path: Path) -> None:
    """Write `render_json(report)` to `path`."""
    write_bytes(path, render_json(report).encode("utf-8"))


@cache
def _schema_text() -> str:
    return resources.files("arck.reports").joinpath("report.schema.json").read_text("utf-8")


def report_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the report; a fresh copy on every call."""
    return cast(dict[str, Any], json.loads(_schema_text()))
