"""What checks share for one run: the target and the resources set up on it, made once.

Setup goes through the same public API the checks judge; when setup itself fails, a check
cannot judge anything, so it is "not testable" (which fails a run), never a pass.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import settings

from arck.conformance.errors import NotApplicable, NotTestable
from arck.simulator.target import Exchange, Target

TOOL_DESCRIPTION = "arck conformance sample tool"
TOOL_NAME = "arck.sample"
OPEN_SCHEMA: dict[str, Any] = {"type": "object"}


@dataclass(frozen=True)
class Version:
    """A published agent version with one tool, and what it was published with."""

    agent_version: str
    agent_id: str
    tool_set_id: str
    tool_name: str
    budget: int | None
    system_prompt: str
    input_schema: dict[str, Any]


@dataclass
class CheckContext:
    target: Target
    seed: int | None = None
    settings: settings = field(default_factory=settings)
    examples: int | None = None  # inputs the running property check has tried so far
    # Wall seconds a search may spend generating before it stops with what it tried (half of
    # --check-timeout; None: no bound), and whether the running check's search stopped so.
    search_seconds: float | None = None
    stopped_by_time: bool = False
    lane: str = ""  # the xdist worker's own part of every name, so workers never collide
    _binding: str | None = None
    _versions: dict[tuple[int | None, str], Version] = field(default_factory=dict)
    _counter: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def profile(self) -> str:
        return self.target.info.profile

    def name(self, what: str) -> str:
        """A name for something this run creates, with the target file's prefix."""
        return f"{self.target.info.name_prefix}{what}-{self.lane}{next(self._counter)}"

    @property
    def agent_id(self) -> str:
        return f"{self.target.info.name_prefix}agent"

    def require_destructive(self) -> None:
        if not self.target.info.destructive:
            raise NotApplicable(
                "fuzzing with malformed bodies is opt-in for live services: set "
                "safety.destructive = true in the target file"
            )

    def binding_id(self) -> str:
        if self._binding is None:
            exchange = self.target.create_binding(self.name("binding"))
            self._binding = self._id(exchange, "binding_id", "register an execution binding")
        return self._binding

    def tool(self, budget: int | None, schema: dict[str, Any] | None = None) -> dict[str, Any]:
        tool: dict[str, Any] = {
            "name": TOOL_NAME,
            "description": TOOL_DESCRIPTION,
            "binding_id": self.binding_id(),
            "input_schema": schema or OPEN_SCHEMA,
            "output_schema": OPEN_SCHEMA,
        }
        if budget is not None:
            tool["max_result_context_bytes"] = budget
        return tool

    def version(self, budget: int | None, schema: dict[str, Any] | None = None) -> Version:
        """A published version whose one tool has this budget (None: the default), cached."""
        key = (budget, repr(schema))
        if key not in self._versions:
            tool = self.tool(budget, schema)
            tool_set = self.target.publish_tool_set({"name": self.name("tools"), "tools": [tool]})
            tool_set_id = self._id(tool_set, "tool_set_id", f"publish a tool set (budget {budget})")
            prompt = f"arck conformance agent {self.name('prompt')}"
            body = {"tool_set_id": tool_set_id, "system_prompt": prompt}
            published = self.target.publish_agent_version(self.agent_id, body)
            version = self._id(published, "agent_version", "publish an agent version")
            self._versions[key] = Version(
                version, self.agent_id, tool_set_id, TOOL_NAME, budget, prompt, tool["input_schema"]
            )
        return self._versions[key]

    def dry_run(
        self,
        version: Version,
        result: Any,
        *,
        receipt_id: str = "arck-receipt-1",
        kind: str = "completed",
        role: str = "full",
        arguments: Any = None,
    ) -> Exchange:
        body = {
            "agent_version": version.agent_version,
            "tool_name": version.tool_name,
            "arguments": {} if arguments is None else arguments,
            "mock_receipts": [{"receipt_id": receipt_id, "kind": kind, "result": result}],
        }
        return self.target.dry_run(body, role=role)

    def raw_dry_run_body(self, version: Version, result: bytes) -> bytes:
        """A dry-run body around a result given as raw JSON text, which `json.dumps` could
        not write (NaN, lone surrogates, 4,301 digits, 513 levels, corpus files)."""
        head = json.dumps({"agent_version": version.agent_version,
                           "tool_name": version.tool_name, "arguments": {}})[:-1].encode()
        receipt = b'{"receipt_id":"arck-raw","kind":"completed","result":' + result + b"}"
        return head + b',"mock_receipts":[' + receipt + b"]}"

    def _id(self, exchange: Exchange, key: str, step: str) -> str:
        data = exchange.json_or_none()
        if not (200 <= exchange.status < 300) or not isinstance(data, dict):
            raise NotTestable(f"setup could not {step}: {exchange.describe()}", exchange=exchange)
        value = data.get(key)
        if not isinstance(value, str):
            raise NotTestable(f"setup could not {step}: no string {key!r} in {exchange.describe()}",
                              exchange=exchange)
        return value
