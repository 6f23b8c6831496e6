"""The mutant catalogue (SPEC H-04): known-bad variants of the reference, one defect each.

Each mutant is the reference engine with one seam replaced, runnable as
`arck run --target mutant:NAME`. `breaks` lists the requirements it violates that the suite
must catch; tests/test_mutants.py runs every mutant and proves each one is caught, and that
every check of the suite catches at least one mutant. Factories are named by dotted path and
imported only when a mutant is built, so listing the catalogue stays cheap.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

__all__ = ["CATALOGUE", "Mutant", "build_app"]


@dataclass(frozen=True)
class Mutant:
    """A known-bad variant: what it does wrong, what that breaks, and how to build it."""

    name: str
    description: str
    breaks: tuple[str, ...]
    factory: str  # "arck.reference.mutants.module:function", returning an ASGI app


_M = "arck.reference.mutants."
_ENTRIES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    # sizes and the decision to project
    (
        "chars-not-bytes",
        "sizes counted in characters, not UTF-8 bytes",
        ("BUD-01", "BUD-04"),
        "budget:chars_not_bytes",
    ),
    (
        "ensure-ascii-sizes",
        "sizes measured on ensure_ascii JSON (non-ASCII as \\uXXXX)",
        ("BUD-01", "BUD-04"),
        "budget:ensure_ascii_sizes",
    ),
    (
        "orjson-sizes",
        "sizes measured with orjson, which spells floats differently (1e-7)",
        ("BUD-01",),
        "budget:orjson_sizes",
    ),
    (
        "spaced-json-sizes",
        "sizes measured on json.dumps with ', ' and ': ' separators",
        ("BUD-01",),
        "budget:spaced_json_sizes",
    ),
    (
        "envelope-measured",
        "original_bytes is the size of the whole mock receipt, not its result",
        ("BUD-01", "BUD-02"),
        "budget:envelope_measured",
    ),
    (
        "token-budget",
        "the budget read as tokens of four bytes: results up to 4x are kept",
        ("BUD-04", "BUD-07"),
        "budget:token_budget",
    ),
    (
        "truncate-at-budget",
        "off by one: a result of exactly the budget is projected",
        ("BUD-04", "BUD-06"),
        "budget:truncate_at_budget",
    ),
    (
        "never-project",
        "over-budget results are kept whole, truncated=false",
        ("BUD-07",),
        "budget:never_project",
    ),
    # cuts
    (
        "marker-not-counted",
        "only the preview strings count: wrapper, marker, preserved fields not",
        ("BUD-03",),
        "cuts:marker_not_counted",
    ),
    (
        "escapes-not-counted",
        "a quote or backslash of the preview counted as 1 byte, not 2",
        ("BUD-03",),
        "cuts:escapes_not_counted",
    ),
    (
        "utf8-byte-cut",
        "cuts UTF-8 bytes and decodes with errors='replace' (U+FFFD)",
        ("BUD-08",),
        "cuts:utf8_byte_cut",
    ),
    (
        "utf16-cut",
        "cuts UTF-16 code units, splitting surrogate pairs",
        ("BUD-08",),
        "cuts:utf16_cut",
    ),
    (
        "grapheme-split",
        "cuts between code points, ignoring grapheme clusters",
        ("BUD-10",),
        "cuts:grapheme_split",
    ),
    (
        "escape-split",
        "cuts inside JSON escapes of the canonical text (\\n, \\u0000)",
        ("BUD-10",),
        "cuts:escape_split",
    ),
    (
        "spaced-preview",
        "head and tail cut from json.dumps with spaces, not the canonical text",
        ("BUD-09",),
        "cuts:spaced_preview",
    ),
    (
        "wasteful-cut",
        "head and tail use only half of the bytes available",
        ("BUD-13",),
        "cuts:wasteful_cut",
    ),
    (
        "random-projection",
        "head and tail split at random: not deterministic",
        ("BUD-14",),
        "cuts:random_projection",
    ),
    # contents of the projection
    (
        "preserved-altered",
        'preserved values stored as their JSON text (\'"ok"\' for "ok")',
        ("BUD-11", "BUD-22"),
        "shapes:preserved_altered",
    ),
    (
        "preserved-invented",
        "adds /status: 'truncated' when the result has no top-level status",
        ("BUD-11", "BUD-22"),
        "shapes:preserved_invented",
    ),
    ("no-preserved", "no preserved_fields at all", ("BUD-12", "BUD-22"), "shapes:no_preserved"),
    (
        "preserved-too-deep",
        "status-like fields preserved from any depth, not only <= 3",
        ("BUD-22",),
        "shapes:preserved_too_deep",
    ),
    (
        "preserved-list-items",
        "list items' fields are preserved-field candidates (/items/0/id), as before 2026-12",
        ("BUD-22",),
        "shapes:preserved_list_items",
    ),
    (
        "preserved-uncapped",
        "preserved_fields not held to a quarter of the budget",
        ("BUD-22",),
        "shapes:preserved_uncapped",
    ),
    (
        "preserved-in-order",
        "preserved_fields filled in order, stopping at the first candidate that does not fit",
        ("BUD-22",),
        "shapes:preserved_in_order",
    ),
    (
        "truncation-text-part",
        "truncation.original_bytes of a multimodal result leaves the attachments out",
        ("BUD-21",),
        "shapes:truncation_text_part",
    ),
    (
        "image-counted",
        "multimodal results not recognised: image/audio/file blocks are cut",
        ("BUD-19", "BUD-21"),
        "shapes:image_counted",
    ),
    (
        "attachments-reordered",
        "attachments listed in reverse order",
        ("BUD-21",),
        "shapes:attachments_reordered",
    ),
    (
        "limits-unchecked",
        "results deeper than 512 levels are accepted",
        ("BUD-23",),
        "shapes:limits_unchecked",
    ),
    # definitions
    ("budget-1023", "a budget of 1,023 bytes is accepted", ("DEF-02",), "definitions:budget_1023"),
    (
        "budget-32769",
        "a budget of 32,769 bytes is accepted",
        ("DEF-02",),
        "definitions:budget_32769",
    ),
    (
        "lax-int",
        'budgets given as "16384", 16384.0 or true are coerced and accepted',
        ("DEF-02", "PRO-01"),
        "definitions:lax_int",
    ),
    (
        "default-8192",
        "a tool without a budget gets 8,192 bytes, not 16,384",
        ("DEF-02",),
        "definitions:default_8192",
    ),
    (
        "removed-fields-accepted",
        "max_result_tokens / max_result_bytes silently ignored",
        ("DEF-03",),
        "definitions:removed_fields_accepted",
    ),
    (
        "description-optional",
        "a tool without a description is published",
        ("DEF-01",),
        "definitions:description_optional",
    ),
    (
        "mutable-tool-set",
        "PUT replaces a published tool set",
        ("DEF-04",),
        "definitions:mutable_tool_set",
    ),
    (
        "unknown-binding-accepted",
        "binding_id is never checked against registered bindings",
        ("DEF-06",),
        "definitions:unknown_binding_accepted",
    ),
    # dry-run
    (
        "preview-any-kind",
        "the first mock receipt of any kind is previewed, not only completed",
        ("DRY-02", "DRY-07"),
        "dryrun:preview_any_kind",
    ),
    (
        "last-completed",
        "the last completed mock receipt is previewed, not the first",
        ("DRY-07",),
        "dryrun:last_completed",
    ),
    (
        "execution-verified-true",
        "dry-run answers execution_verified: true",
        ("DRY-01",),
        "dryrun:execution_verified_true",
    ),
    (
        "arguments-unchecked",
        "arguments are not validated against the tool's input_schema",
        ("DRY-05",),
        "dryrun:arguments_unchecked",
    ),
    # access and status order
    (
        "no-permission-check-on-dry-run",
        "dry-run needs no permission at all",
        ("DRY-06", "PRO-02"),
        "access:no_permission_check_on_dry_run",
    ),
    (
        "no-scope-check",
        "the caller's agent scope is never checked",
        ("DRY-06",),
        "access:no_scope_check",
    ),
    (
        "cross-tenant-preview",
        "dry-run previews another tenant's agent version",
        ("AUTH-03",),
        "access:cross_tenant_preview",
    ),
    (
        "anonymous-reads",
        "GET requests without credentials are answered",
        ("AUTH-01",),
        "access:anonymous_reads",
    ),
    (
        "validation-before-permission",
        "dry-run bodies validated (422) before permission (403)",
        ("PRO-02",),
        "access:validation_before_permission",
    ),
    (
        "unknown-version-422",
        "an unknown agent version is 422, not 404",
        ("DRY-05", "PRO-02"),
        "access:unknown_version_422",
    ),
    # wire profile
    (
        "nan-to-null",
        "lenient bodies: NaN and ±Infinity become null",
        ("BUD-05", "PRO-01"),
        "wire:nan_to_null",
    ),
    (
        "surrogates-replaced",
        "escaped lone surrogates silently replaced by U+FFFD",
        ("BUD-05", "PRO-01"),
        "wire:surrogates_replaced",
    ),
    (
        "duplicate-keys-accepted",
        "duplicate object keys accepted, the last one wins",
        ("PRO-01",),
        "wire:duplicate_keys_accepted",
    ),
    (
        "lenient-utf8",
        "invalid UTF-8 decoded with errors='replace' instead of refused",
        ("BUD-05", "PRO-01"),
        "wire:lenient_utf8",
    ),
    (
        "crash-on-corpus",
        "an unguarded json.loads pre-check: deeply nested bodies give 500",
        ("PRO-01", "PRO-02"),
        "wire:crash_on_corpus",
    ),
    (
        "fastapi-error-shape",
        'errors are FastAPI\'s {"detail": ...}, not {"error": {...}}',
        ("PRO-03",),
        "wire:fastapi_error_shape",
    ),
    (
        "no-allow-header",
        "405 on a published tool set or version without the Allow: GET header",
        ("PRO-02",),
        "wire:no_allow_header",
    ),
    (
        "openapi-lies",
        "the OpenAPI document types binding_id as an integer",
        ("PRO-03",),
        "wire:openapi_lies",
    ),
)

CATALOGUE: dict[str, Mutant] = {
    name: Mutant(name, description, breaks, _M + factory)
    for name, description, breaks, factory in _ENTRIES
}


def build_app(name: str) -> Any:
    """The ASGI app of mutant `name`; KeyError naming the known mutants for an unknown one."""
    mutant = CATALOGUE.get(name)
    if mutant is None:
        raise KeyError(f"unknown mutant {name!r}; known: {', '.join(sorted(CATALOGUE))}")
    module_name, _, attribute = mutant.factory.partition(":")
    return getattr(importlib.import_module(module_name), attribute)()
