"""The provider's script file: what `arck simulate provider --script FILE` answers.

A provider started outside Python (for an engine, or an agent framework, pointed at it) is
scripted by a YAML (or JSON) file, its steps the same `Step` data as a scenario's `script`
(docs/provider.md, Scripts; faults included):

    scripts:          # a conversation whose system prompt holds [arck-script:NAME]
      refund-1:
        - tool_calls: [{name: lookup_order, arguments: {id: A-7}}]
        - text: Refunded.
    models:           # every untagged request for that model, as one conversation
      sim-1:
        - tool_calls: [{name: get_weather, arguments: {city: Paris}}]
        - {text: Sunny., faults: [{kind: slow, seconds: 2}]}
    context_windows:  # a model's real window, in tokens (400 context_length_exceeded above)
      sim-small: 400

Errors name the file, the line and the field path; nothing is served from a file that does
not validate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from arck.simulator.errors import UsageError
from arck.simulator.provider.provider import SimulatedProvider
from arck.simulator.provider.script import SCRIPT_NAME, Step
from arck.simulator.yamlmodel import parse_model

__all__ = ["ScriptFile", "ScriptFileError", "load_script_file"]


class ScriptFileError(UsageError):
    """A script file that cannot be read or does not validate (exit 2)."""


class ScriptFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    scripts: dict[Annotated[str, Field(pattern="^" + SCRIPT_NAME + "$")], list[Step]] = Field(
        default_factory=dict, description="steps of a conversation tagged [arck-script:NAME]")
    models: dict[Annotated[str, Field(min_length=1)], list[Step]] = Field(
        default_factory=dict, description="steps every untagged request for the model follows")
    context_windows: dict[Annotated[str, Field(min_length=1)],
                          Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict, description="a model's real window: prompt + max_tokens")

    def install(self, provider: SimulatedProvider) -> None:
        """Register every script and window on `provider`."""
        for name, steps in self.scripts.items():
            provider.add_script(name, steps)
        for model, steps in self.models.items():
            provider.add_model_script(model, steps)
        for model, tokens in self.context_windows.items():
            provider.set_context_window(model, tokens)


def load_script_file(path: Path) -> ScriptFile:
    """The file read and validated, or ScriptFileError: `FILE:LINE: field.path: problem`."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScriptFileError(f"{path}: cannot read it: {exc}") from None
    return parse_model(text, str(path), ScriptFile, ScriptFileError,
                       "a script file is a YAML mapping (scripts, models, context_windows)")
