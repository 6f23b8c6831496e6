"""The layering of ARCHITECTURE.md, enforced by reading every module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("reference", "simulator", "conformance", "reports")
# folder -> project folders it may import (by `import arck.<folder>`)
ALLOWED = {
    "reference": set(),
    "reports": set(),
    "simulator": set(),  # the reference only by dotted-path string
    "conformance": {"simulator", "reports"},
}


def _modules() -> list[tuple[str, Path]]:
    return [
        (folder, path)
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if "data" not in path.parts
    ]


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            names.append("<relative>")
    return names


@pytest.mark.parametrize(("folder", "path"), _modules(), ids=lambda v: str(v))
def test_imports_follow_the_layers(folder: str, path: Path) -> None:
    for name in _imports(path):
        assert name != "<relative>", f"{path}: use absolute `arck.` imports"
        top = name.split(".")[0]
        assert top not in FOLDERS, f"{path}: bare import {name!r}; import it as arck.{name}"
        if top == "arck" and name.count(".") >= 1:
            other = name.split(".")[1]
            if other in FOLDERS and other != folder:
                assert other in ALLOWED[folder], (
                    f"{path}: {folder}/ may not import arck.{other} (ARCHITECTURE.md)"
                )


def test_checks_never_import_the_engine() -> None:
    """The oracle stays independent: conformance names the engine only in dotted strings."""
    for path in sorted((ROOT / "conformance").rglob("*.py")):
        for name in _imports(path):
            assert not name.startswith("arck.reference"), f"{path} imports {name}"


def test_every_folder_is_reachable_through_the_namespace() -> None:
    for folder in FOLDERS:
        link = ROOT / "arck" / folder
        assert link.is_symlink()
        assert link.resolve() == (ROOT / folder).resolve()
