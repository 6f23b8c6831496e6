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


def coverage() -> dict[str, list[str]]:
    """Requirement ID → check ids (`module/function`)."""
    found: dict[str, list[str]] = {}
    for name in check_modules():
        module = importlib.import_module(name)
        short = name.rsplit(".", 1)[-1].removeprefix("test_")
        for attr, fn in sorted(vars(module).items()):
            if not attr.startswith("test_"):
                continue
            for mark in getattr(fn, "pytestmark", []):
                if mark.name == "requirement":
                    for rid in mark.args:
                        found.setdefault(rid, []).append(f"{short}/{attr}")
    return found
