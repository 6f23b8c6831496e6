"""Reading scenario files: YAML to `Scenario`, errors naming the field path and its line.

Also the published JSON Schema (generated from the models) and the list of a folder's
scenarios. A malformed file is a usage error (exit 2), never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from arck.simulator.errors import UsageError
from arck.simulator.scenario.model import Scenario
from arck.simulator.yamlmodel import parse_model

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


def parse_scenario(text: str, where: str = "<scenario>") -> Scenario:
    """A scenario from YAML text, or ScenarioError: `FILE:LINE: field.path: what is wrong`."""
    return parse_model(text, where, Scenario, ScenarioError,
                       "a scenario is a YAML mapping (name, description, ...)")


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
