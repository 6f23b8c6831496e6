"""The import checks (CAP-02, 03, 04, 15) where the mutant table cannot look: a core target is
held to the core only, and a target that imports nothing is "not applicable"."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from arck.conformance import openapi_cases as cases
from arck.conformance.checks import test_capability_openapi as checks
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure, NotApplicable
from arck.simulator.factory import build_target
from arck.simulator.target import Exchange, Target

SEARCH = settings(max_examples=3, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))


@pytest.fixture
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    made = build_target(getattr(request, "param", "reference"))
    try:
        yield made
    finally:
        made.close()


def _core(target: Target) -> CheckContext:
    target.info = dataclasses.replace(target.info, profile="core")
    return CheckContext(target, seed=5, settings=SEARCH)


def test_the_tools_schemas_are_judged_under_the_profile_only(target: Target) -> None:
    """A tool whose input differs from the profile's (here: the expectation's) fails CAP-15
    under the profile and passes the core, which judges hints and tools only."""
    case = checks._classic("get", {})
    case["operations"][0]["input_schema"] = {"type": "object"}
    check = checks.test_an_import_reads_hints_from_declarations_only
    with pytest.raises(CheckFailure) as failed:
        check.arck_replay(CheckContext(target, seed=5, settings=SEARCH), case)
    assert failed.value.requirements == ("CAP-15",)
    check.arck_replay(_core(target), case)


@pytest.mark.parametrize("target", ["mutant:openapi-get-readonly"], indirect=True)
def test_a_core_target_reading_readonly_from_the_method_fails_cap_03(target: Target) -> None:
    with pytest.raises(CheckFailure) as failed:
        checks.test_an_import_reads_hints_from_declarations_only.arck_replay(
            _core(target), checks._classic("get", {}))
    assert failed.value.requirements == ("CAP-03",)
    assert "GET /orders/{id}" in str(failed.value)


def test_a_core_target_skips_what_only_the_profile_refuses(target: Target) -> None:
    """A dangling `$ref` is the profile's to refuse: a core target that takes it passes."""
    case = {"document": checks._classic("get", {})["document"], "requirement": "CAP-15",
            "what": "a $ref (nowhere)", "member": "$ref", "paths": []}
    checks.test_a_broken_document_is_refused_naming_where.arck_replay(_core(target), case)


def test_an_importer_answering_404_is_not_applicable(target: Target,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def absent(name: str, document: Any, role: str = "full") -> Exchange:
        return Exchange("POST", "http://t.invalid/v1/openapi-imports", None, 404,
                        b'{"error":{"code":"not_found","message":"no such route","path":""}}')

    monkeypatch.setattr(target, "import_openapi", absent)
    with pytest.raises(NotApplicable, match="imports no OpenAPI documents"):
        checks.test_an_import_reads_hints_from_declarations_only.arck_replay(
            CheckContext(target, seed=5, settings=SEARCH), checks._classic("get", {}))


@given(case=cases.import_cases(profile=True))
@settings(max_examples=100, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
def test_every_drawn_reference_names_something_in_its_document(case: dict[str, Any]) -> None:
    """The cases write `$ref`s by hand (escaped, percent-encoded): each one names a member of
    the document, so a refusal of a drawn document is the target's fault."""
    from urllib.parse import unquote

    def refs(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            if isinstance(value.get("$ref"), str):
                yield value["$ref"]
            for member in value.values():
                yield from refs(member)
        elif isinstance(value, list):
            for member in value:
                yield from refs(member)

    document = case["document"]
    for ref in refs(document):
        here: Any = document
        for token in unquote(ref.removeprefix("#/")).split("/"):
            here = here[token.replace("~1", "/").replace("~0", "~")]
        assert here is not None
