"""A run that never reaches the state a check needs says why: the provider's own records of
its model calls go into the "not testable" message (a lost answer shows as one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import settings

from arck.conformance.context import CheckContext
from arck.conformance.errors import NotTestable
from arck.conformance.runworld import Agent, world
from arck.simulator.factory import build_target
from arck.simulator.provider import LostResponse, Step


def test_a_lost_model_call_is_named_when_a_run_never_waits_for_its_tools() -> None:
    target = build_target("reference")
    try:
        w = world(CheckContext(target, seed=1, settings=settings(database=None)))
        plain = w.agent

        def losing(steps: Sequence[Step], **kw: Any) -> Agent:
            first = steps[0].model_copy(update={"faults": [LostResponse()]})
            return plain([first, *steps[1:]], **kw)

        w.agent = losing  # type: ignore[method-assign]
        with pytest.raises(NotTestable) as seen:
            w.waiting_call({"q": "lost"})
        message = str(seen.value)
        assert "never waited for its 1 tool call(s)" in message
        assert "'lost_response'" in message, message
    finally:
        target.close()
