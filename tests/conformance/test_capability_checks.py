"""The CAP checks on what the mutant table cannot show: a core target that takes a tool set
naming a disabled operation is judged by what reaches the model, and the cases' oracle
agrees with the documented rules."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings

from arck.conformance import capability_cases as cases
from arck.conformance.checks.test_capabilities import (
    test_an_operation_not_enabled_never_reaches_a_model as not_enabled_check,
)
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure
from arck.simulator.factory import build_target
from arck.simulator.target import Target

SEARCH = settings(max_examples=4, database=None, deadline=None)


@pytest.fixture
def core_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """An in-process target (the reference, or a mutant) judged as a core target."""
    target = build_target(request.param)
    target.info = dataclasses.replace(target.info, profile="core")
    try:
        yield target
    finally:
        target.close()


@pytest.mark.parametrize("core_target", ["mutant:capability-disabled-offered"], indirect=True)
def test_a_core_target_offering_a_disabled_operation_fails_by_the_model_tools(
    core_target: Target,
) -> None:
    """The tool set is taken (allowed in core): the run's model request decides, and it
    holds the disabled tool."""
    ctx = CheckContext(core_target, seed=3, settings=SEARCH)
    with pytest.raises(CheckFailure) as failed:
        not_enabled_check(ctx, ["false", False])
    assert failed.value.requirements == ("CAP-02",)
    assert "never in a model's tools" in str(failed.value)
    assert "disabled_op" in str(failed.value)


@pytest.mark.parametrize("core_target", ["reference"], indirect=True)
def test_a_core_target_refusing_the_tool_set_passes(core_target: Target) -> None:
    ctx = CheckContext(core_target, seed=3, settings=SEARCH)
    not_enabled_check(ctx, ["false", True])  # raises on failure


@given(case=cases.broken(profile=True))
@settings(max_examples=200, database=None, deadline=None)
def test_every_broken_case_names_a_member_of_its_declaration(case: dict[str, Any]) -> None:
    """The pointer leads to the member that is wrong (or to where a required one is
    missing), so a refusal naming it is the right refusal."""
    place: Any = case["declaration"]
    *parents, last = case["pointer"].lstrip("/").split("/")
    for key in parents:
        place = place[key]
    assert isinstance(place, dict)
    if "missing" in case["what"] or case["what"].startswith("no "):
        assert last not in place
    else:
        assert last in place, case


@given(decl=cases.declarations(profile=False))
@settings(max_examples=200, database=None, deadline=None)
def test_core_declarations_use_nothing_the_profile_decides(decl: dict[str, Any]) -> None:
    """No risk level, no rate limit (its window syntax), `enabled` always given."""
    assert "risk" not in decl
    assert "rate_limit" not in decl.get("execution", {})
    assert decl["enabled"] is True


@given(case=cases.broken(profile=False))
@settings(max_examples=200, database=None, deadline=None)
def test_core_broken_cases_are_wrong_by_the_protocol_itself(case: dict[str, Any]) -> None:
    """A core target is only ever failed on CAP-01's own rules, never on a profile choice."""
    assert case["requirement"] == "CAP-01", case
