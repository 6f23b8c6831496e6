"""A YAML file read into a pydantic model, every error naming its field path and line.

Scenario files and the provider's script files share it: `FILE:LINE: field.path: what is
wrong`, a key given twice refused, a malformed file a usage error (exit 2), never a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from arck.simulator.errors import UsageError

__all__ = ["parse_model"]

M = TypeVar("M", bound=BaseModel)

Path_ = tuple[int | str, ...]


def _lines(node: yaml.Node, path: Path_, found: dict[Path_, int], where: str,
           error: type[UsageError]) -> None:
    """Record the line of every value, and refuse a key given twice in one mapping."""
    found[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        keys: set[Any] = set()
        for key, value in node.value:
            if key.value in keys:
                raise error(
                    f"{where}:{key.start_mark.line + 1}: {_spell((*path, key.value))}: "
                    "given twice"
                )
            keys.add(key.value)
            _lines(value, (*path, key.value), found, where, error)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _lines(item, (*path, index), found, where, error)


def _spell(location: Sequence[int | str]) -> str:
    spelled = ""
    for part in location:
        spelled += f"[{part}]" if isinstance(part, int) else ("." if spelled else "") + part
    return spelled or "(document)"


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


def parse_model(text: str, where: str, model: type[M], error: type[UsageError],
                mapping: str) -> M:
    """`model` from YAML text, or `error`: `FILE:LINE: field.path: what is wrong` per problem
    (`mapping` says what the document must be when it is no mapping)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise error(f"{where}{line}: not valid YAML: {problem}") from None
    if not isinstance(data, dict) or node is None:
        raise error(f"{where}: {mapping}")
    lines: dict[Path_, int] = {}
    _lines(node, (), lines, where, error)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for problem in exc.errors():
            message = problem["msg"].removeprefix("Value error, ")
            location: Sequence[int | str] = problem["loc"]
            if not location:
                location, message = _message_path(message)
            shown, at = _locate(location, lines)
            problems.append(f"{where}:{at or 1}: {shown}: {message}")
        raise error("\n".join(problems)) from None
