"""The executor package's public surface: each module says what it exports, and the package
re-exports what checks need."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import arck.simulator.executor as package

MODULES = sorted(Path(package.__file__).parent.glob("[!_]*.py"))


def _public_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_each_module_exports_exactly_its_public_names(path: Path) -> None:
    module = importlib.import_module(f"arck.simulator.executor.{path.stem}")
    assert set(module.__all__) == _public_names(path)


def test_the_package_exports_resolve() -> None:
    assert all(hasattr(package, name) for name in package.__all__)
    assert len(set(package.__all__)) == len(package.__all__)
