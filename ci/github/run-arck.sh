#!/usr/bin/env bash
# Run `arck run` for CI and record the result without failing the step.
#
# Why a script: the action's run step stays one line, and this file can be run and tested
# locally. Inputs come from the environment (unset or empty means "not given"):
#   ARCK_TARGET        reference | mutant:NAME | URL | app:… | adapter:…  (empty: the config's)
#   ARCK_CONFIG        target file (TOML)
#   ARCK_REQUIREMENTS  only these areas or IDs, e.g. BUD,DRY-06
#   ARCK_PROFILE       quick | ci | thorough (default ci)
#   ARCK_STRICT        true: recommended requirements fail the run too (default false)
#   ARCK_WORKERS       processes to spread checks over: N or auto (default 1)
#   ARCK_REPORT_DIR    where reports go (default arck-reports)
#   ARCK_EXTRA_ARGS    more `arck run` arguments, split on whitespace (e.g. "--max-examples 5")
#   ARCK_ARTIFACT_NAME artifact name mentioned in the summary (default arck-reports)
#   ARCK_BIN           the arck executable (default: `arck` on PATH)
# Outputs: `exit-code=N` and `report-dir=DIR` appended to $GITHUB_OUTPUT, a short Markdown
# summary appended to $GITHUB_STEP_SUMMARY; each is skipped when its variable is unset.
# The script itself exits 0 unless it cannot run at all; gating is a later step's job, so
# the report is uploaded first.
set -uo pipefail

arck_bin="${ARCK_BIN:-arck}"
report_dir="${ARCK_REPORT_DIR:-arck-reports}"
profile="${ARCK_PROFILE:-ci}"
artifact="${ARCK_ARTIFACT_NAME:-arck-reports}"

args=(run --profile "$profile" --report-dir "$report_dir")
[[ -n "${ARCK_TARGET:-}" ]] && args+=(--target "$ARCK_TARGET")
[[ -n "${ARCK_CONFIG:-}" ]] && args+=(--config "$ARCK_CONFIG")
[[ -n "${ARCK_REQUIREMENTS:-}" ]] && args+=(--requirements "$ARCK_REQUIREMENTS")
[[ -n "${ARCK_WORKERS:-}" ]] && args+=(--workers "$ARCK_WORKERS")
case "${ARCK_STRICT:-false}" in
  true | True | TRUE | 1 | yes) args+=(--strict) ;;
  false | False | FALSE | 0 | no | "") ;;
  *) echo "::warning::ARCK_STRICT='${ARCK_STRICT}' is not true/false; treated as false" ;;
esac
if [[ -n "${ARCK_EXTRA_ARGS:-}" ]]; then
  read -r -a extra <<<"$ARCK_EXTRA_ARGS"
  args+=("${extra[@]}")
fi

if ! command -v "$arck_bin" >/dev/null 2>&1; then
  echo "::error::'$arck_bin' not found on PATH"
  code=2
else
  echo "+ $arck_bin ${args[*]}"
  set +e  # a non-zero arck exit is a result to record, not a reason to stop here
  "$arck_bin" "${args[@]}"
  code=$?
fi

case "$code" in
  0) verdict="conformant" ;;
  1) verdict="not conformant" ;;
  2) verdict="usage or configuration error, or target unreachable" ;;
  *) verdict="unexpected exit code" ;;
esac

if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
  {
    echo "exit-code=$code"
    echo "report-dir=$report_dir"
  } >>"$GITHUB_OUTPUT"
fi

if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
  run_url=""
  if [[ -n "${GITHUB_SERVER_URL:-}" && -n "${GITHUB_REPOSITORY:-}" && -n "${GITHUB_RUN_ID:-}" ]]
  then
    run_url="${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}/actions/runs/${GITHUB_RUN_ID}"
  fi
  {
    echo "### arck conformance: ${verdict}"
    echo
    echo "| | |"
    echo "|---|---|"
    echo "| target | \`${ARCK_TARGET:-(from config)}\` |"
    echo "| exit code | **${code}** (${verdict}) |"
    if [[ -n "$run_url" ]]; then
      echo "| report | artifact [\`${artifact}\`](${run_url}#artifacts) (report.html, report.json, junit.xml, cases/) |"
    else
      echo "| report | artifact \`${artifact}\` (report.html, report.json, junit.xml, cases/) |"
    fi
    echo
  } >>"$GITHUB_STEP_SUMMARY"
fi

echo "arck exit code: $code ($verdict)"
exit 0
