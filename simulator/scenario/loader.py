"""Reading scenario files: YAML to `Scenario`, errors naming the field path and its line.

Also the published JSON Schema (generated from the models) and the list of a folder's
scenarios. A malformed file is a usage error (exit 2), never a traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from arck.simulator.errors import UsageError
from arck.simulator.scenario.model import Scenario

__all__ = [
    "SCENARIOS_DIR",
    "SCHEMA_PATH",
    "ScenarioError",
    "list_scenarios",
    "load_scenario",
    "parse_scenario",
    "schema",
    "schema_text",
    "written_scenario",
]

# The repository's scenarios/ folder (simulator/ and scenarios/ are siblings).
SCENARIOS_DIR = Path(__file__).resolve().parents[2] / "scenarios"
SCHEMA_PATH = SCENARIOS_DIR / "scenario.schema.json"

Path_ = tuple[int | str, ...]


class ScenarioError(UsageError):
    """A scenario file that cannot be read or does not validate (exit 2)."""


def schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file, as published in scenarios/scenario.schema.json."""
    generated = Scenario.model_json_schema()
    # `side_effect` is the provider's Python-only member: a file cannot hold one.
    generated["$defs"]["Step"]["properties"].pop("side_effect", None)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **generated}


def schema_text() -> str:
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"


def _lines(node: yaml.Node, path: Path_, found: dict[Path_, int], where: str) -> None:
    """Record the line of every value, and refuse a key given twice in one mapping."""
    found[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        keys: set[Any] = set()
        for key, value in node.value:
            if key.value in keys:
                raise ScenarioError(
                    f"{where}:{key.start_mark.line + 1}: {_spell((*path, key.value))}: "
                    "given twice"
                )
            keys.add(key.value)
            _lines(value, (*path, key.value), found, where)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _lines(item, (*path, index), found, where)


def _spell(location: Sequence[int | str]) -> str:
    spelled = ""
    for part in location:
        spelled += f"[{part}]" if isinstance(part, int) else ("." if spelled else "") + part
    return spelled or "(scenario)"


def _locate(location: Sequence[int | str], lines: dict[Path_, int]) -> tuple[str, int | None]:
    """The field path to show for a pydantic error location, and its line in the file.

    Union tags are not fields: an action's tag repeats its key (`receipt.receipt`) and a
    fault's is its kind (`faults[0].slow`); both are left out of the path shown.
    """
    path: Path_ = ()
    shown: list[int | str] = []
    for index, part in enumerate(location):
        if (*path, part) in lines:
            path = (*path, part)
        elif index and location[index - 1] == part:
            continue  # an action's tag, then its key
        elif index >= 2 and location[index - 2] == "faults":
            continue  # a fault's kind
        shown.append(part)
    return _spell(shown), lines.get(path)


_MESSAGE_PATH = re.compile(r"^([a-z_]+(?:\[\d+\]|\.[A-Za-z0-9_-]+)*): (.*)$", re.S)


def _message_path(message: str) -> tuple[Path_, str]:
    """A model-level error spells its own path at the start of its message."""
    found = _MESSAGE_PATH.match(message)
    if found is None:
        return (), message
    parts = re.findall(r"\[(\d+)\]|([A-Za-z0-9_-]+)", found.group(1))
    return tuple(int(i) if i else name for i, name in parts), found.group(2)


def parse_scenario(text: str, where: str = "<scenario>") -> Scenario:
    """A scenario from YAML text, or ScenarioError: `FILE:LINE: field.path: what is wrong`."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError(f"{where}{line}: not valid YAML: {problem}") from None
    if not isinstance(data, dict) or node is None:
        raise ScenarioError(f"{where}: a scenario is a YAML mapping (name, description, ...)")
    lines: dict[Path_, int] = {}
    _lines(node, (), lines, where)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            message = error["msg"].removeprefix("Value error, ")
            location: Sequence[int | str] = error["loc"]
            if not location:
                location, message = _message_path(message)
            shown, at = _locate(location, lines)
            problems.append(f"{where}:{at or 1}: {shown}: {message}")
        raise ScenarioError("\n".join(problems)) from None


class _Plain(yaml.SafeDumper):
    """Writes repeated steps out in full (no `&id001` anchors in a file people read)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def written_scenario(doc: dict[str, Any]) -> str | None:
    """`doc` as a scenario file's text (a failing stateful check writes its program so), or
    None when it does not validate: a writer's gap must not hide the failure it reports."""
    text = yaml.dump(doc, Dumper=_Plain, sort_keys=False, allow_unicode=True, width=100)
    try:
        parse_scenario(text)
    except ScenarioError:
        return None
    return text


def load_scenario(path: Path) -> Scenario:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path}: cannot read it: {exc}") from None
    return parse_scenario(text, str(path))


def list_scenarios(folder: Path) -> list[tuple[Path, Scenario | ScenarioError]]:
    """Every `*.yaml` / `*.yml` file of a folder, sorted, each read or with its error."""
    if not folder.is_dir():
        raise ScenarioError(f"{folder}: not a folder")
    found: list[tuple[Path, Scenario | ScenarioError]] = []
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        try:
            found.append((path, load_scenario(path)))
        except ScenarioError as exc:
            found.append((path, exc))
    return found
