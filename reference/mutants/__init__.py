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
        "cut-gives-up",
        "a head cut with no allowed cut in its first window gives up with an empty head",
        ("BUD-21",),
        "cuts:cut_gives_up",
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
    # the store migration of token budgets (DEF-07)
    (
        "migration-tokens-to-bytes",
        "stored token budgets migrate to tokens x 4 bytes (clamped), not the 16,384 default",
        ("DEF-07",),
        "migrations:tokens_to_bytes",
    ),
    (
        "migration-every-start",
        "the one-time budget migration runs at every start and resets every tool's budget, "
        "those published since too",
        ("DEF-07",),
        "migrations:every_start",
    ),
    (
        "migration-reprojects-history",
        "the budget migration re-projects the committed execution history at the new budget",
        ("DEF-07",),
        "migrations:reprojects_history",
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
        "interactive-pages-public",
        "FastAPI's /docs and /redoc pages answer without a credential",
        ("AUTH-01",),
        "access:interactive_pages_public",
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
        "unrouted-before-credentials",
        "a missing route (404) or method (405) answers before the credential is checked (401)",
        ("PRO-02",),
        "wire:unrouted_before_credentials",
    ),
    (
        "version-validated-first",
        "a new version's body is validated (422) before its tool set is looked up (404)",
        ("PRO-02",),
        "wire:version_validated_first",
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
    # decisions of the wire profile (docs/profile.md, "Which check holds each decision")
    (
        "openapi-private",
        "/openapi.json needs a credential; the profile makes it public",
        ("PRO-03",),
        "decisions_wire:openapi_private",
    ),
    (
        "openapi-omits-dry-run",
        "the served OpenAPI document leaves out POST /v1/tools/dry-run",
        ("PRO-03",),
        "decisions_wire:openapi_omits_dry_run",
    ),
    (
        "created-200",
        "creating a binding, tool set or version answers 200, not 201",
        ("PRO-03",),
        "decisions_wire:created_200",
    ),
    (
        "random-ids",
        "ids are random (bnd-<uuid>), not sequential per store",
        ("PRO-03",),
        "decisions_wire:random_ids",
    ),
    (
        "tool-names-unchecked",
        "tool names outside ^[A-Za-z0-9_.-]{1,64}$ are published",
        ("PRO-02",),
        "decisions_wire:tool_names_unchecked",
    ),
    (
        "duplicate-tool-names",
        "two tools of one tool set may share a name",
        ("PRO-02",),
        "decisions_wire:duplicate_tool_names",
    ),
    (
        "unknown-members-ignored",
        "unknown members of a tool definition are dropped, not refused",
        ("PRO-02",),
        "decisions_wire:unknown_members_ignored",
    ),
    (
        "schemas-unchecked",
        "input_schema and output_schema are not checked as JSON Schema (2020-12)",
        ("PRO-02",),
        "decisions_wire:schemas_unchecked",
    ),
    (
        "bom-accepted",
        "a body starting with a UTF-8 byte order mark is read as utf-8-sig",
        ("PRO-01",),
        "decisions_wire:bom_accepted",
    ),
    (
        "empty-body-as-object",
        "an empty body is read as {} instead of refused with 400",
        ("PRO-01",),
        "decisions_wire:empty_body_as_object",
    ),
    (
        "invalid-json-no-path",
        "400 invalid_json never names the path, even where it is known",
        ("PRO-03",),
        "decisions_wire:invalid_json_no_path",
    ),
    (
        "long-integer-422",
        "an integer of more than 4,300 digits is 422 validation_failed, not 400 invalid_json",
        ("PRO-01",),
        "decisions_wire:long_integer_422",
    ),
    (
        "body-depth-512",
        "bodies limited to 512 levels: a result at its 512-level limit cannot be sent",
        ("BUD-23", "PRO-01"),
        "decisions_wire:body_depth_512",
    ),
    (
        "body-depth-600",
        "bodies nested 521 to 600 levels are accepted (the profile stops at 520)",
        ("PRO-01",),
        "decisions_wire:body_depth_600",
    ),
    (
        "body-limit-8mb",
        "bodies limited to 8,000,000 bytes (8 MB), not 8 MiB",
        ("PRO-02",),
        "decisions_wire:body_limit_8mb",
    ),
    (
        "no-body-limit",
        "bodies over 8 MiB are read, never refused with 413",
        ("PRO-02",),
        "decisions_wire:no_body_limit",
    ),
    (
        "parse-before-auth",
        "POST bodies parsed (400) before credentials, permission, scope and size are checked",
        ("PRO-02",),
        "decisions_wire:parse_before_auth",
    ),
    (
        "hide-unknown-from-scoped",
        "a caller with a limited agent scope gets 403 for an unknown version, not 404",
        ("PRO-02",),
        "decisions_wire:hide_unknown_from_scoped",
    ),
    (
        "tool-lookup-after-validation",
        "a dry-run's tool_name is looked up only after the body is validated (422 before 404)",
        ("PRO-02",),
        "decisions_wire:tool_lookup_after_validation",
    ),
    (
        "unknown-tool-set-422",
        "a new version naming an unknown tool_set_id is 422, not 404",
        ("PRO-02",),
        "decisions_wire:unknown_tool_set_422",
    ),
    (
        "unknown-binding-404",
        "an unknown binding_id is 404 not_found, not 422 unknown_binding",
        ("PRO-02",),
        "decisions_wire:unknown_binding_404",
    ),
    (
        "other-tenant-403",
        "another tenant's version or tool set is 403, not 404 as if it did not exist",
        ("PRO-02",),
        "decisions_wire:other_tenant_403",
    ),
    (
        "scope-error-leaks",
        "the 403 for a version outside the caller's scope names its agent and tool set",
        ("DRY-06",),
        "decisions_wire:scope_error_leaks",
    ),
    (
        "method-before-credentials",
        "PUT, PATCH, DELETE on published resources answer 405 before 401",
        ("PRO-02",),
        "decisions_wire:method_before_credentials",
    ),
    (
        "read-permission-writes",
        "configuration:read is enough to publish bindings, tool sets and versions",
        ("PRO-02",),
        "decisions_wire:read_permission_writes",
    ),
    (
        "version-scope-unchecked",
        "the agent scope is checked on dry-run only, not on reading or publishing a version",
        ("PRO-02",),
        "decisions_wire:version_scope_unchecked",
    ),
    (
        "health-needs-permission",
        "GET /v1/health needs configuration:read, not just a valid credential",
        ("PRO-02",),
        "decisions_wire:health_needs_permission",
    ),
    (
        "status-named-codes",
        "error codes are HTTP reason phrases (bad_request, unprocessable_entity)",
        ("PRO-03",),
        "decisions_wire:status_named_codes",
    ),
    (
        "generic-422-code",
        "every 422 is validation_failed: no removed_field, no unknown_binding",
        ("PRO-03",),
        "decisions_wire:generic_422_code",
    ),
    (
        "dotted-error-paths",
        "error paths into the body are dotted (tools.0.binding_id), not JSON Pointers",
        ("PRO-03",),
        "decisions_wire:dotted_error_paths",
    ),
    # decisions of the budget and dry-run profile
    (
        "empty-preserved-kept",
        'an empty "preserved_fields": {} is kept in the projection',
        ("BUD-21",),
        "decisions_budget:empty_preserved_kept",
    ),
    (
        "preserved-128-chars",
        "preserved values limited to 128 characters of JSON text, not 128 bytes",
        ("BUD-22",),
        "decisions_budget:preserved_128_chars",
    ),
    (
        "preserved-any-key",
        "every short scalar at depth <= 3 is a preserved-field candidate, whatever its key",
        ("BUD-22",),
        "decisions_budget:preserved_any_key",
    ),
    (
        "preserved-document-order",
        "preserved-field candidates tried in document order, not shallowest then by pointer",
        ("BUD-22",),
        "decisions_budget:preserved_document_order",
    ),
    (
        "quarter-without-braces",
        "the quarter bound of preserved_fields leaves out the object's braces",
        ("BUD-22",),
        "decisions_budget:quarter_without_braces",
    ),
    (
        "preserved-depth-2",
        "preserved-field depth counts the scalar too: /a/b/c (depth 3) is not a candidate",
        ("BUD-22",),
        "decisions_budget:preserved_depth_2",
    ),
    (
        "dotted-preserved-keys",
        "preserved_fields keyed by dotted paths (data.next_cursor), not JSON Pointers",
        ("BUD-22",),
        "decisions_budget:dotted_preserved_keys",
    ),
    (
        "tail-first",
        "the tail is cut first from half the bytes left; the leftover goes to the head",
        ("BUD-21",),
        "decisions_budget:tail_first",
    ),
    (
        "head-two-thirds",
        "the head takes two thirds of the bytes left, not half",
        ("BUD-21",),
        "decisions_budget:head_two_thirds",
    ),
    (
        "placeholder-renamed",
        'taken blocks replaced by {"type", "index"}, not {"type", "attachment"}',
        ("BUD-21",),
        "decisions_budget:placeholder_renamed",
    ),
    (
        "lenient-multimodal",
        "a content list with untyped blocks is still split into attachments",
        ("BUD-21",),
        "decisions_budget:lenient_multimodal",
    ),
    (
        "multimodal-whole-size-decides",
        "a multimodal result is projected when its whole size is over, though its text fits",
        ("BUD-21",),
        "decisions_budget:multimodal_whole_size_decides",
    ),
    (
        "depth-counts-scalars",
        "result depth counts scalars as a level: 512 arrays around 1 are refused",
        ("BUD-23",),
        "decisions_budget:depth_counts_scalars",
    ),
    (
        "result-path-relative",
        "a result over a limit is refused naming /0/0/..., not /mock_receipts/i/result/...",
        ("BUD-23",),
        "decisions_budget:result_path_relative",
    ),
    (
        "only-previewed-receipt-checked",
        "only the previewed mock receipt's result is held to the limits, not the others",
        ("BUD-23",),
        "decisions_budget:only_previewed_receipt_checked",
    ),
    # runs, billing and context
    (
        "resend-after-lost",
        "a model request whose answer was lost or late is sent again",
        ('RUN-12',),
        "runs:resend_after_lost",
    ),
    (
        "fixed-output-4096",
        "every request asks for 4,096 output tokens, not the channel's verified capacity",
        ('RUN-05',),
        "runs:fixed_output",
    ),
    (
        "stamped-system-prompt",
        "the system prompt of each request carries the turn number, rewriting the prefix",
        ('RUN-08', 'DEF-05'),
        "runs:stamped_prompt",
    ),
    (
        "session-follows-newer-version",
        "a session sends the system prompt of its agent's newest version",
        ('DEF-04', 'DEF-05'),
        "runs:newest_version",
    ),
    (
        "projection-cut-again",
        "stored tool results are cut again on every later request",
        ('BUD-15', 'RUN-08'),
        "runs:recut_results",
    ),
    (
        "reservation-never-released",
        "the unused part of a reservation stays reserved after settlement",
        ('BIL-01', 'BIL-04'),
        "runs:kept_reservation",
    ),
    (
        "cache-billed-as-input",
        "cached prompt tokens billed at the full input price",
        ('BIL-04',),
        "runs:cache_at_input_price",
    ),
    (
        "calibrated-value-as-sample",
        "the calibrated estimate is stored as a sample's real count",
        ('CTX-09',),
        "runs:calibrated_sample",
    ),
    (
        "samples-across-channels",
        "one calibration sample set for every channel and model",
        ('CTX-10',),
        "runs:shared_samples",
    ),
    (
        "summary-usage-calibrates",
        "summary calls' usage enters main-model calibration",
        ('CTX-11',),
        "runs:summary_samples",
    ),
    (
        "cancel-cancels-tool-calls",
        "cancelling a run cancels its accepted tool calls",
        ('RUN-13',),
        "runs:cancels_tools",
    ),
    (
        "admission-ignores-funds",
        "runs are queued whatever the wallet holds; the worker refuses them later",
        ('RUN-01',),
        "runs:free_admission",
    ),
    (
        "reservation-from-estimate",
        "each call reserves for a 1,000-token prompt estimate, not the channel's capacity",
        ('BIL-01',),
        "runs:estimate_reservation",
    ),
    (
        "no-safety-margin",
        "the effective budget leaves out the 2,000-token safety margin",
        ('CTX-01',),
        "runs:no_margin",
    ),
    (
        "summaries-unspaced",
        "summaries are made on consecutive calls, with no spacing of 4 main calls",
        ('CTX-05',),
        "runs:unspaced_summaries",
    ),
    (
        "summaries-spaced-by-five",
        "a summary waits for 5 main calls after the last, not 4: still 'at least 4' (core), "
        "but the profile's summary due at the fourth is deferred",
        ('CTX-05',),
        "runs:spaced_by_five",
    ),
    (
        "spacing-kept-at-92",
        "the spacing of summaries is kept even at 92% of the budget",
        ('CTX-05',),
        "runs:no_bypass",
    ),
    (
        "compaction-on-characters",
        "compaction triggered by 12,000 characters of history, not the token estimate",
        ('CTX-03',),
        "runs:character_threshold",
    ),
    (
        "step-quota",
        "a run is cancelled once it has made 16 model calls",
        ("RUN-04",),
        "runs:step_quota",
    ),
    (
        "summary-unvalidated",
        "a summary candidate replaces history unchecked, whatever ids it claims",
        ("CTX-06",),
        "runs:unvalidated_summaries",
    ),
    (
        "summary-ids-from-the-message-before",
        "the ids a summary may name are counted from one message before its stretch: a "
        "summary naming the reserved request the current input answers is taken",
        ("CTX-06",),
        "runs:ids_from_the_message_before",
    ),
    (
        "input-revokes-batch",
        "input appended while an accepted tool batch waits withdraws its calls",
        ("RUN-06",),
        "turns:input_revokes_batch",
    ),
    (
        "execution-chat-history",
        "the chat-history tool returns the execution history's texts, tool results included",
        ("RUN-10",),
        "turns:execution_chat_history",
    ),
    (
        "plan-after-revocation",
        "a tool plan answered after its tool was revoked is still accepted and dispatched",
        ("RUN-14",),
        "turns:plan_after_revocation",
    ),
    (
        "charge-rounded-down",
        "a call's cost is rounded down to the micro-unit, not up: a fraction of one is lost "
        "whenever prices are not whole micro-units per token",
        ("BIL-05",),
        "runs:charge_rounded_down",
    ),
    (
        "input-before-revocation",
        "input pending when a revocation ends the run at its next step enters the histories "
        "all the same",
        ("RUN-14",),
        "turns:input_before_revocation",
    ),
    (
        "cancel-leaves-calls-open",
        "a cancel answers none of the run's open tool calls in the execution history: the "
        "session's next request holds calls with no tool message, which a provider refuses",
        ("RUN-09", "RUN-13"),
        "ends:cancel_leaves_calls_open",
    ),
    (
        "cancel-body-unchecked",
        "a cancel takes any body: an unknown member, a reason of any type or length",
        ("PRO-02",),
        "ends:cancel_body_unchecked",
    ),
    (
        "claim-ids-short",
        "a detach's claim_id may be at most 199 characters: a well-formed id at the "
        "documented bound (200) is refused 422 instead of 409 (no such claim)",
        ("PRO-02",),
        "ends:claim_ids_short",
    ),
    (
        "lookup-refusals-unseen",
        "a cost-pending call's lookup ignores error answers: a call the provider refused "
        "after its timeout is reconciled `not_processed`, not `refused`",
        ("RUN-16",),
        "edges:lookup_refusals_unseen",
    ),
    (
        "released-call-charged",
        "a released call's `model_call.reconciled` says `charge` 1 though nothing was "
        "collected",
        ("RUN-16",),
        "edges:released_call_charged",
    ),
    (
        "first-delivery-replayed",
        "every receipt is answered replayed: true, its first delivery too",
        ("EXE-08",),
        "executors:first_delivery_replayed",
    ),
    (
        "unaccepted-reports-taken",
        "progress and final receipts are taken under a claim not accepted yet, as if it were",
        ("EXE-17",),
        "executors:unaccepted_reports_taken",
    ),
    (
        "drained-run-waits",
        "a call the wallet can no longer cover is not sent, but the run is not ended: it "
        "stays running, waiting for money",
        ("RUN-11",),
        "ends:drained_run_waits",
    ),
    (
        "input-after-end-taken",
        "input for a run that has ended is taken (200, pending) and never applied",
        ("RUN-06",),
        "ends:input_after_end_taken",
    ),
    (
        "claims-answered-200",
        "a claim is answered 200, not the 201 the wire table gives (the claim itself works)",
        ("PRO-03",),
        "statuses:claims_answered_200",
    ),
    (
        "claim-documented-202",
        "the served document lists 202 as a claim's success; the answer stays 201",
        ("PRO-03",),
        "statuses:claim_documented_202",
    ),
    (
        "input-400-undocumented",
        "the served document lists no 400 for appending input, though a body that is not JSON "
        "is answered 400 there",
        ("PRO-03",),
        "statuses:input_400_undocumented",
    ),
    (
        "uncalibrated-coefficient-zero",
        "with no calibration sample a main call's model_call.started says coefficient 0, not 1",
        ("RUN-15", "RUN-16"),
        "estimates:uncalibrated_coefficient_zero",
    ),
    (
        "collected-unreported",
        "the wallet pays each call's charge, but model_call.finished says 0 collected and the "
        "whole reservation released",
        ("RUN-16",),
        "edges:collected_unreported",
    ),
    (
        "compaction-arguments-kept",
        "local compaction replaces old tool results but keeps every call's long arguments",
        ("CTX-04",),
        "compaction_kept:compaction_arguments_kept",
    ),
    (
        "stretch-cut-one-short",
        "a summary stretch cut back to the summary channel's window loses one message more "
        "than it must",
        ("CTX-04",),
        "compaction_kept:stretch_cut_one_short",
    ),
    (
        "summary-of-nothing",
        "when not even the first message fits the summary channel's window, a summary call is "
        "made anyway, of an empty stretch",
        ("CTX-04",),
        "compaction_kept:summary_of_nothing",
    ),
    (
        "stretch-given-up",
        "a summary stretch too long for the summary channel's window is not cut back: no "
        "summary is made",
        ("CTX-04",),
        "compaction_kept:stretch_given_up",
    ),
    (
        "detach-says-accepted",
        "every tool_call.detached says accepted: true, a detach before acceptance too",
        ("RUN-16",),
        "edges:detach_says_accepted",
    ),
    (
        "online-at-the-edge",
        "an executor is still online at the very instant of its online_until (60 s after its "
        "heartbeat), not only before it",
        ("EXE-02",),
        "edges:online_at_the_edge",
    ),
    (
        "stream-undocumented",
        "the served document leaves text/event-stream out of the run events' 200 (the "
        "stream itself works)",
        ("PRO-03",),
        "statuses:stream_undocumented",
    ),
    (
        "workers-die-after-a-run",
        "each worker ends with the first run it holds; new ones start only when a run is "
        "created, read or answered, so runs left alone stay queued",
        ("RUN-03", "RUN-11"),
        "ends:workers_die_after_a_run",
    ),
    (
        "settled-call-looked-up-again",
        "a cost-pending call stays scheduled after its settlement: the provider is asked about "
        "it again at every step of the back-off",
        ("BIL-03",),
        "edges:settled_call_looked_up_again",
    ),
    (
        "revoked-call-unbound",
        "a refused plan's calls lose their tool's binding: an executor holding it is told "
        "403 (outside its scope) instead of 409 (the call's state)",
        ("RUN-14",),
        "turns:revoked_call_unbound",
    ),
    (
        "runs-tenant-blind",
        "sessions and runs are found by id in any tenant, so another tenant reads them",
        ("AUTH-03",),
        "runs:tenant_blind_runs",
    ),
    (
        "runs-project-at-half-budget",
        "runs project tool results at half the tool's budget; dry-runs use all of it",
        ("DRY-03",),
        "runs:half_budget_in_runs",
    ),
    (
        "never-compacts",
        "no compaction and no giving up: a request over the budget is sent",
        ("CTX-15",),
        "runs:never_compacts",
    ),
    (
        "ends-model-error",
        "a run whose model gave no usable answer ends model_error, not a reason of RUN-16",
        ("RUN-16",),
        "runs:model_error",
    ),
    (
        "overflow-loops",
        "a request the provider refused as too long is sent again unchanged, every second, "
        "for as long as it is refused",
        ("RUN-11",),
        "runs:overflow_loop",
    ),
    (
        "overflow-unrepaired",
        "a request the provider refused as too long is sent again once unchanged, before "
        "any compaction",
        ("CTX-05",),
        "runs:overflow_unrepaired",
    ),
    (
        "estimate-without-tools",
        "the raw token estimate leaves the tool definitions out of the request",
        ("CTX-13",),
        "runs:tools_uncounted",
    ),
    # the event stream
    (
        "disconnect-cancels-run",
        "a run is cancelled when its event stream is dropped",
        ("RUN-03",),
        "streams:disconnect_cancels_run",
    ),
    # the estimate outside context management
    (
        "bills-by-estimate",
        "a main call's prompt is charged at its calibrated estimate, not the reported tokens",
        ("CTX-12",),
        "estimates:estimate_billed",
    ),
    (
        "budget-by-estimate",
        "a tool's byte budget is scaled by the session's calibration (raw / real tokens)",
        ("CTX-12",),
        "estimates:estimate_budget",
    ),
    # receipts
    (
        "projects-protected",
        "a submission's and an unknown business outcome's results are projected like any other",
        ("BUD-18",),
        "receipts:projects_protected",
    ),
    (
        "detach-receipt-unstored",
        "a detach after acceptance puts its reconciliation_required receipt in the histories "
        "but not among the stored receipts: a summary of that call names no receipt",
        ("CTX-06",),
        "receipts:detach_unstored",
    ),
    (
        "formal-receipt-projected",
        "the formal history returns a projected receipt's projection in place of its result",
        ("BUD-16", "BUD-20"),
        "recovery:formal_receipt_projected",
    ),
    (
        "formal-drops-lost-fields",
        "the formal history's receipt lacks the cursors, ids and status its projection lost",
        ("BUD-16", "BUD-20"),
        "recovery:formal_drops_lost_fields",
    ),
    # durable runs: what only a crash and a restart show
    (
        "takeover-resends",
        "a run taken over from a dead worker sends its in-flight call again, unchecked",
        ("RUN-02",),
        "durability:blind_takeover",
    ),
    (
        "no-takeover",
        "a running run whose worker died is never taken over: it stays running for ever",
        ("RUN-02",),
        "durability:no_takeover",
    ),
    # the executor protocol: claims, grants, credentials, receipts (docs/executors.md)
    (
        "two-claims-win",
        "claims judged by the run alone: a call claimed or accepted by another is claimed again",
        ("EXE-01",),
        "executors:two_claims_win",
    ),
    (
        "claim-refusal-leaks-arguments",
        "a claim outside the executor's scope is refused naming the call's arguments",
        ("EXE-03",),
        "executors:refusal_leaks_arguments",
    ),
    (
        "claim-outside-scope",
        "a claim's call is never checked against the executor's bindings",
        ("EXE-03",),
        "executors:claim_outside_scope",
    ),
    (
        "registering-is-heartbeat",
        "registering an executor counts as a heartbeat: one never heard from claims",
        ("EXE-02",),
        "executors:registered_is_online",
    ),
    (
        "connect-credential-executes",
        "executor:connect is enough to claim, send receipts and detach",
        ("EXE-04",),
        "executors:connect_credential_executes",
    ),
    (
        "grant-without-digest",
        "the grant's arguments_digest is empty",
        ("EXE-05", "AUTH-02"),
        "executors:grant_without_digest",
    ),
    (
        "arguments-in-candidates",
        "candidates are listed with their arguments",
        ("EXE-03",),
        "executors:arguments_in_candidates",
    ),
    (
        "claims-never-lapse",
        "a claim never accepted never lapses: the call is not claimed again after 30 s",
        ("EXE-17",),
        "executors:claims_never_lapse",
    ),
    (
        "accepted-after-run-end",
        "an accepted receipt is confirmed for a call whose run has ended",
        ("EXE-17",),
        "executors:accepted_after_end",
    ),
    (
        "duplicate-applied-twice",
        "a repeated final enters the histories again, answered replayed: false",
        ("EXE-08",),
        "executors:duplicate_applied_twice",
    ),
    (
        "receipt-id-only",
        "another body under a known receipt_id is answered as a replay, not refused",
        ("EXE-09",),
        "executors:receipt_id_only",
    ),
    (
        "late-receipt-applied",
        "a final after the run ended enters the ended run's histories",
        ("EXE-13",),
        "executors:late_receipt_applied",
    ),
    (
        "second-final-accepted",
        "no one-final rule: a second final replaces the first, or is kept once the run ended",
        ("EXE-14",),
        "executors:second_final_accepted",
    ),
    (
        "run-cancel-cancels-business",
        "a run cancel asks a business cancel of the run's open tool calls",
        ("EXE-15",),
        "executors:run_cancel_cancels_business",
    ),
    (
        "reconciliation-retried",
        "a reconciliation_required final puts the call back to be claimed",
        ("EXE-11",),
        "executors:reconciliation_retried",
    ),
    (
        "last-progress-wins",
        "a progress sequence below the last is taken (only a repeat of the last is refused)",
        ("EXE-17",),
        "executors:last_progress_wins",
    ),
    (
        "sequence-before-replay",
        "a repeated progress receipt overtaken by a later one is refused 409, not replayed",
        ("EXE-08",),
        "executors:sequence_before_replay",
    ),
    (
        "bearer-claim",
        "any executor naming the call's current claim_id may send its receipts",
        ("EXE-17",),
        "executors:bearer_claim",
    ),
    (
        "ever-online",
        "one heartbeat keeps an executor online for good, however long it is silent",
        ("EXE-02",),
        "executors:ever_online",
    ),
    (
        "stale-claim-accepted",
        "accepted under a lapsed claim, since taken by another executor, is confirmed",
        ("EXE-17",),
        "executors:stale_claim_accepted",
    ),
    (
        "loose-inline-bodies",
        "the runs and executor routes parse bodies with json.loads: not strict, and a body "
        "that is not JSON is a 500",
        ("PRO-01",),
        "executors:loose_inline_bodies",
    ),
    (
        "detach-redispatches",
        "a detach after acceptance puts the call back to be claimed",
        ("EXE-15",),
        "executors:detach_redispatches",
    ),
    (
        "worker-held-waiting-tools",
        "8 workers, each held by its run while the run waits on tool receipts",
        ("EXE-16",),
        "executors:worker_held_waiting_tools",
    ),
    # credential kinds
    (
        "service-credential-executes",
        "a service credential holding tools:execute claims and answers calls as the tenant's "
        "built-in executor",
        ("AUTH-04",),
        "credentials:service_credential_executes",
    ),
    (
        "executor-reads-runs",
        "an executor credential reads its tenant's runs and histories",
        ("AUTH-04",),
        "credentials:executor_reads_runs",
    ),
    # runtime permissions
    (
        "runtime-scope-unchecked",
        "sessions and runs ignore the credential's agent scope: a caller scoped to another "
        "agent reads and changes them",
        ("PRO-02",),
        "runtime_scope:runtime_scope_unchecked",
    ),
    (
        "runtime-cross-tenant-runs",
        "a run id is found in any tenant: another tenant reads and cancels this tenant's runs",
        ("AUTH-03", "PRO-02"),
        "runtime_scope:runtime_cross_tenant_runs",
    ),
    (
        "revocation-crosses-tenants",
        "a tool revocation reaches the agent of that name in every tenant: another tenant "
        "ends this tenant's runs",
        ("AUTH-03",),
        "runtime_scope:revocation_crosses_tenants",
    ),
    # runs at their edges
    (
        "batch-queued-early",
        "the run is queued again on the first final of its batch, its other calls still open",
        ("RUN-06",),
        "edges:batch_queued_early",
    ),
    (
        "timeout-as-lost",
        "a model call past its timeout is taken for a lost answer: the run ends "
        "cost_pending_reconciliation, not model_timeout",
        ("RUN-16",),
        "edges:timeout_as_lost",
    ),
    (
        "admission-one-high",
        "admission asks one micro-unit more than the reservation: a wallet holding it exactly "
        "is refused",
        ("BIL-01", "BIL-02"),
        "edges:admission_one_high",
    ),
    (
        "executor-token-unverified",
        "an executor token is taken for the executor it names whatever its signature: a "
        "token one character off is admitted",
        ("AUTH-01",),
        "edges:executor_token_unverified",
    ),
    (
        "worker-crash-hidden",
        "every run's first step raises and the worker swallows it: a takeover finishes the run "
        "a lease later, every figure right",
        ("RUN-02",),
        "edges:worker_crash_hidden",
    ),
    (
        "summary-takeover-loops",
        "a summary call found in flight at a takeover is left as it is: the run is taken over "
        "again and again, for ever",
        ("RUN-11",),
        "edges:summary_takeover_loops",
    ),
    (
        "negative-usage-credits",
        "reported token counts are charged as they come: a boolean as 1, a negative count "
        "below zero (its settlement then fails and the run never ends)",
        ("BIL-04",),
        "edges:negative_usage_credits",
    ),
    (
        "untrusted-samples",
        "a prompt_tokens that is no count (negative, a string, a boolean) is taken as 0 and "
        "made a calibration sample",
        ("CTX-08",),
        "edges:untrusted_samples",
    ),
    (
        "request-ends-despite-input",
        "a request for input ends the run even when input arrived while the call was in "
        "flight: the input stays pending, never sent",
        ("RUN-06",),
        "edges:request_ends_despite_input",
    ),
    (
        "history-arguments-trusted",
        "the chat-history tool takes its arguments on trust: limit 0, -1 or 1.5 used as sent, "
        "a string or non-JSON arguments crash the turn",
        ("RUN-10",),
        "edges:history_arguments_trusted",
    ),
    (
        "history-error-echoes",
        "the chat-history tool refuses bad arguments but repeats them in its answer",
        ("RUN-10",),
        "edges:history_error_echoes",
    ),
    (
        "model-timeout-late",
        "the model timeout fires 10 s after the channel's timeout_ms: an answer 30.5 s late "
        "on a 30 s channel is used",
        ("RUN-16",),
        "edges:model_timeout_late",
    ),
    (
        "cost-pending-never-settled",
        "a cost-pending call is looked up but never settled: its reservation stays held for "
        "good",
        ("BIL-03",),
        "edges:cost_pending_never_settled",
    ),
    (
        "grant-misnamed",
        "a claim's grant names the call's arguments where its tool's name belongs",
        ("EXE-05",),
        "edges:grant_misnamed",
    ),
    (
        "openapi-misdocuments-403",
        "/openapi.json lists 404 where the executor's candidate list answers 403",
        ("PRO-03",),
        "edges:openapi_misdocuments_403",
    ),
    (
        "wallet-answered-apart",
        "a new wallet is answered reserved -1, though it is stored with nothing reserved",
        ("PRO-03",),
        "edges:wallet_answered_apart",
    ),
    (
        "takeover-forgets-retries",
        "a takeover does not find the retry schedule the dead worker stored: the refused "
        "call's retries start again",
        ("RUN-02",),
        "edges:takeover_forgets_retries",
    ),
    (
        "admission-left-queued",
        "a run refused at admission is answered ended but stored queued: a worker takes it "
        "and ends it again at its first reservation",
        ("RUN-16",),
        "edges:admission_left_queued",
    ),
    (
        "takeover-stops-short",
        "a takeover's lookups of an in-flight call stop while a whole poll still fits before "
        "the channel's timeout: the last lookup falls short of it",
        ("RUN-11",),
        "edges:takeover_stops_short",
    ),
    (
        "batch-requeue-unrecorded",
        "a run queued again when its batch is final records no run.queued event",
        ("RUN-16",),
        "edges:batch_requeue_unrecorded",
    ),
    # request bounds and reads
    (
        "price-bound-unchecked",
        "a channel price above 10^12 (up to 10^15) accepted, stored clamped to 10^12",
        ("PRO-02", "BIL-05"),
        "bounds:price_bound_unchecked",
    ),
    (
        "subject-bound-unchecked",
        "a session subject over 200 characters accepted, cut to its first 200",
        ("PRO-02",),
        "bounds:subject_bound_unchecked",
    ),
    (
        "empty-input-taken",
        "a run whose input is empty is accepted (stored as one space), not refused 422",
        ("PRO-02",),
        "bounds:empty_input_taken",
    ),
    (
        "null-receipt-members-500",
        "a null error (failed) or sequence (progress) in a receipt taken as given: a 500",
        ("PRO-02",),
        "bounds:null_receipt_members_500",
    ),
    (
        "session-read-500",
        "GET /v1/sessions/{id} reads a column that does not exist: a 500",
        ("PRO-03",),
        "bounds:session_read_500",
    ),
    (
        "channelless-session-500",
        "a session on a version without channel_id reads its channel first: a 500, not a 422",
        ("RUN-01", "PRO-02"),
        "bounds:channelless_session_500",
    ),
    (
        "detached-call-read-500",
        "the executor's GET of a call reads its claim's lease: a 500 once the claim is detached",
        ("EXE-17",),
        "bounds:detached_call_read_500",
    ),
    # run events
    (
        "run-ended-not-recorded",
        "a run ends without its run.ended event",
        ("RUN-16",),
        "events:run_ended_not_recorded",
    ),
    (
        "run-queued-not-recorded",
        "queueing a run records no run.queued event",
        ("RUN-16",),
        "events:run_queued_not_recorded",
    ),
    (
        "receipt-stored-unprotected",
        "receipt.stored of a submission or unknown outcome without protected: true",
        ("RUN-16",),
        "events:receipt_stored_unprotected",
    ),
    (
        "recovered-without-previous-worker",
        "run.recovered names the new worker only, not the one whose lease lapsed",
        ("RUN-16",),
        "events:recovered_without_previous_worker",
    ),
    (
        "reconciled-not-recorded",
        "the provider lookup's verdict is acted on but no model_call.reconciled is recorded",
        ("RUN-16",),
        "events:reconciled_not_recorded",
    ),
    (
        "given-up-miscounted",
        "model_call.given_up counts the retries (3), not the calls (4)",
        ("RUN-16",),
        "events:given_up_miscounted",
    ),
    (
        "stream-skips-after-resume",
        "the event stream resumes one late: the event right after Last-Event-ID is never sent",
        ("RUN-16",),
        "events:stream_skips_after_resume",
    ),
    (
        "stream-waits-for-end",
        "the event stream sends nothing until the run has ended, then everything at once",
        ("RUN-16",),
        "events:stream_waits_for_end",
    ),
    (
        "stream-polls-only",
        "the event stream is never woken when an event is stored: it reads the store only at "
        "its keep-alive tick, so every event of an active run arrives late",
        ("RUN-16",),
        "events:stream_polls_only",
    ),
    (
        "refused-summary-stalls",
        "a summary call the provider refuses is taken for a run that ended: the compaction "
        "step stops and the run waits for its lease, then is taken over as if its worker died",
        ("RUN-02",),
        "compaction_kept:refused_summary_stalls",
    ),
    (
        "recovered-names-itself",
        "run.recovered names the new worker as the previous one too: whose lease lapsed is "
        "misreported",
        ("RUN-16",),
        "events:recovered_names_itself",
    ),
    (
        "summary-settled-silently",
        "a summary call is settled with no model_call.finished: its usage and money appear "
        "in no event",
        ("RUN-16",),
        "events:summary_settled_silently",
    ),
    (
        "last-event-id-17-digits",
        "Last-Event-ID of 18 digits, at the documented bound, refused 422",
        ("PRO-02",),
        "events:last_event_id_17_digits",
    ),
    (
        "last-event-id-500",
        "Last-Event-ID read with int(): 'abc', '1.5', '' or 19 digits answer 500, '-1' is taken",
        ("PRO-02",),
        "events:last_event_id_500",
    ),
    # compaction keeps
    (
        "compaction-current-input-summarised",
        "the run's current input is looked for with a flipped role test, so a summary made "
        "after two tool exchanges of the run takes the input with it",
        ("CTX-04",),
        "compaction_kept:current_input_summarised",
    ),
    (
        "compaction-answer-summarised",
        "the answer to a request for input is not taken for the run's input: a summary made "
        "after two tool exchanges of the run takes the request and its answer with it",
        ("CTX-04",),
        "compaction_kept:answer_summarised",
    ),
    (
        "compaction-facts-dropped",
        "the working memory carries no facts of the calls it replaced: their receipt ids and "
        "statuses are lost",
        ("CTX-06",),
        "compaction_kept:facts_dropped",
    ),
    (
        "local-compaction-not-stored",
        "a local compaction is sent (each request swaps its placeholders in as it is built) "
        "but never stored: the execution history keeps the full tool records",
        ("RUN-09", "CTX-07"),
        "compaction_kept:local_compaction_not_stored",
    ),
    (
        "local-compaction-only-reported",
        "a local compaction is reported (event, decision) but its generation never written: "
        "the request goes out whole",
        ("CTX-07",),
        "compaction_kept:local_compaction_only_reported",
    ),
    (
        "compaction-tail-arguments-placeholdered",
        "local compaction reaches the first message of the kept tail: the second-last tool "
        "exchange's arguments become a placeholder",
        ("CTX-16",),
        "compaction_kept:tail_arguments_placeholdered",
    ),
    (
        "compaction-threshold-exclusive",
        "compaction starts above 70% of the effective budget, not at it: an estimate of "
        "exactly 70% is sent uncompacted",
        ("CTX-04",),
        "compaction_kept:threshold_exclusive",
    ),
    (
        "compaction-memory-resummarised",
        "a stretch of the previous working memory alone is summarised again",
        ("CTX-04",),
        "compaction_kept:memory_resummarised",
    ),
    (
        "compaction-zero-budget-loops",
        "the budget share is a fraction taken first: a budget of 0 divides by zero on every "
        "takeover (the run loops), a negative one reads as below 70% and the request is sent",
        ("CTX-15", "RUN-11"),
        "compaction_kept:zero_budget_loops",
    ),
    (
        "uncompactable-checked-late",
        "an input too large on its own is found only after compaction tried: a summary call "
        "is sent and paid for before the run ends context_uncompactable",
        ("CTX-15",),
        "compaction_kept:uncompactable_late",
    ),
    (
        "empty-summary-accepted",
        "a summary with no text replaces the stretch: a working memory that says nothing",
        ("CTX-06",),
        "compaction_kept:empty_summary_accepted",
    ),
    # capability declarations
    ("capability-version-guessed", "a declaration of version 2 (any integer) read as version 1",
     ("CAP-01",), "capabilities:version_guessed"),
    ("capability-timeout-not-positive", "a timeout_ms of 0 or less taken as no timeout declared",
     ("CAP-01",), "capabilities:non_positive_timeout"),
    ("capability-booleans-coerced", 'a declaration\'s "true", "false", 1 and 0 taken for booleans',
     ("CAP-01",), "capabilities:coerced_booleans"),
    ("capability-errors-pathless", "a broken declaration refused naming neither path nor member",
     ("CAP-01",), "capabilities:pathless_errors"),
    ("capability-any-scope", "any string is a scope, the empty one included", ("CAP-01",),
     "capabilities:any_scope"),
    ("capability-unknown-members-dropped", "members a declaration does not know are dropped "
     "silently (a misspelt hint vanishes), not refused", ("CAP-14",),
     "capabilities:unknown_members_dropped"),
    ("capability-disabled-offered", "a tool set names an operation declared enabled: false, and "
     "its tool reaches the model", ("CAP-02",), "capabilities:disabled_offered"),
    ("capability-omitted-enabled", "a declaration without `enabled` taken as enabled (profile: "
     "only enabled: true makes an operation agent-facing)", ("CAP-02",),
     "capabilities:omitted_enabled"),
    ("capability-readonly-idempotent", "the policy reads readonly: true as idempotent too",
     ("CAP-04",), "capabilities:readonly_idempotent"),
    ("capability-default-wait-30s", "with no declared timeout the policy waits 30 s, not the "
     "profile's 60 s", ("CAP-14",), "capabilities:short_default_wait"),
    ("capability-hints-dropped", "a declaration is kept without its rate limit",
     ("CAP-14",), "capabilities:hints_dropped"),
    ("local-timeout-loosens", "a local timeout longer than the declared one is applied",
     ("CAP-09",), "capabilities:longer_local_timeout"),
    ("local-rate-count-only", "a local rate limit is compared by count alone: a shorter window "
     "that admits more per declared window is applied", ("CAP-09",),
     "capabilities:count_only_rate"),
    ("local-retries-without-idempotency", "local policy turns retries on for an operation not "
     "declared idempotent", ("CAP-09",), "capabilities:local_retries"),
    # pacing
    ("pacing-ignored", "an operation's declared rate limit is never applied: a burst is "
     "dispatched whole", ("CAP-08",), "pacing:unpaced"),
    ("pacing-per-session", "dispatches counted per session, not per operation and tenant: "
     "each session's burst has a window of its own", ("CAP-08",), "pacing:per_session"),
    ("pacing-one-too-many", "the window admits count + 1 dispatches", ("CAP-08",),
     "pacing:one_too_many"),
    ("pacing-fixed-window", "a fixed window (calendar buckets) instead of the profile's sliding "
     "one: twice the count at a bucket's edge", ("CAP-14",), "pacing:fixed_window"),
    ("pacing-window-in-seconds", "a window's number read as seconds whatever its unit: `1m` "
     "lasts one second", ("CAP-08",), "pacing:window_in_seconds"),
    # the subject rule
    ("subject-unchecked", "an operation declaring subject.required is dispatched in a session "
     "without a trusted subject", ("CAP-10",), "subjects:unchecked"),
    ("subject-skipped-when-readonly", "an operation declared read-only skips the subject "
     "check", ("CAP-12",), "subjects:readonly_skips"),
    ("subject-skipped-at-low-risk", "an operation of risk.level low skips the subject check",
     ("CAP-12",), "subjects:low_risk_skips"),
    # the OpenAPI import
    ("openapi-get-readonly", "an imported GET declared without readonly is taken as "
     "read-only", ("CAP-03",), "openapi:get_readonly"),
    ("openapi-writing-methods-not-readonly", "an imported POST, PUT, PATCH or DELETE declared "
     "readonly: true is taken as writing", ("CAP-03",), "openapi:writing_methods_not_readonly"),
    ("openapi-idempotent-methods", "an imported PUT or DELETE is taken as idempotent, as HTTP "
     "calls it, when its declaration says nothing", ("CAP-04",), "openapi:idempotent_methods"),
    ("openapi-undeclared-imported", "an operation without x-agent-capability is imported as "
     "a tool", ("CAP-02",), "openapi:undeclared_imported"),
    ("openapi-disabled-imported", "an operation declared enabled: false is imported as a tool",
     ("CAP-02",), "openapi:disabled_imported"),
    ("openapi-refs-kept", "a tool's input schema keeps the document's $refs instead of "
     "inlining what they name", ("CAP-15",), "openapi:refs_kept"),
    ("openapi-own-parameters-only", "the path item's parameters are left out of its "
     "operations' tools", ("CAP-15",), "openapi:own_parameters_only"),
    ("openapi-path-item-wins", "a path item's parameter wins over the operation's own of the "
     "same name and location", ("CAP-15",), "openapi:path_item_wins"),
    ("openapi-body-optional", "a required request body is optional in the tool's input",
     ("CAP-15",), "openapi:body_optional"),
    ("openapi-broken-declaration-skipped", "an operation whose declaration is invalid is "
     "skipped as undeclared instead of refusing the document", ("CAP-01",),
     "openapi:broken_declaration_skipped"),
    ("openapi-nowhere-is-anything", "a $ref that names nothing in the document (or another "
     "document) is read as any value", ("CAP-15",), "openapi:nowhere_is_anything"),
    ("openapi-loop-is-anything", "a recursive $ref is read as any value where it closes the "
     "loop instead of refusing the document", ("CAP-15",), "openapi:loop_is_anything"),
)

CATALOGUE: dict[str, Mutant] = {
    name: Mutant(name, description, breaks, _M + factory)
    for name, description, breaks, factory in _ENTRIES
}


def build_app(name: str, **wiring: Any) -> Any:
    """The ASGI app of mutant `name`, with `wiring` passed to `create_app` (clock, provider
    transport); KeyError naming the known mutants for an unknown one."""
    mutant = CATALOGUE.get(name)
    if mutant is None:
        raise KeyError(f"unknown mutant {name!r}; known: {', '.join(sorted(CATALOGUE))}")
    module_name, _, attribute = mutant.factory.partition(":")
    from arck.reference.mutants.base import wired

    with wired(wiring):
        return getattr(importlib.import_module(module_name), attribute)()
