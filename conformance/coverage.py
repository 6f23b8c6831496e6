"""Which checks cover which requirement, read from the checks' markers without running them."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import arck.conformance.checks as checks_package

CHECKS_DIR = Path(checks_package.__file__).parent


def check_modules() -> list[str]:
    return [
        f"{checks_package.__name__}.{m.name}"
        for m in pkgutil.iter_modules([str(CHECKS_DIR)])
        if m.name.startswith("test_")
    ]


def check_id(module: str, function: str) -> str:
    """A check's stable id, `budget/test_x`, from its module's (dotted or bare) name."""
    return f"{module.rsplit('.', 1)[-1].removeprefix('test_')}/{function}"


def requirement_ids(check: object) -> set[str]:
    """The IDs of a check function's `requirement` markers."""
    return {
        rid
        for mark in getattr(check, "pytestmark", [])
        if mark.name == "requirement"
        for rid in mark.args
    }


def coverage() -> dict[str, list[str]]:
    """Requirement ID → check ids (`module/function`)."""
    found: dict[str, list[str]] = {}
    for name in check_modules():
        module = importlib.import_module(name)
        for attr, fn in sorted(vars(module).items()):
            if not attr.startswith("test_"):
                continue
            for rid in sorted(requirement_ids(fn)):
                found.setdefault(rid, []).append(check_id(name, attr))
    return found
