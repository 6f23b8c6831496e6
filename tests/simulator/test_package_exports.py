"""The simulator packages' public surfaces (the provider, the executor): each module says
what it exports, and each package re-exports what a harness or a check needs."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

import arck.simulator.executor
import arck.simulator.provider

PACKAGES = (arck.simulator.provider, arck.simulator.executor)
MODULES = [(package.__name__, path) for package in PACKAGES
           for path in sorted(Path(str(package.__file__)).parent.glob("[!_]*.py"))]


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


@pytest.mark.parametrize(("package", "path"), MODULES,
                         ids=[f"{p.rsplit('.', 1)[-1]}/{m.name}" for p, m in MODULES])
def test_each_module_exports_exactly_its_public_names(package: str, path: Path) -> None:
    module = importlib.import_module(f"{package}.{path.stem}")
    assert set(module.__all__) == _public_names(path)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_the_package_exports_resolve(package: ModuleType) -> None:
    assert all(hasattr(package, name) for name in package.__all__)
    assert len(set(package.__all__)) == len(package.__all__)
