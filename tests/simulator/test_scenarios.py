"""Replayable scenarios (docs/scenarios.md): the format, the runner, the trace, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from arck.simulator.factory import build_target
from arck.simulator.scenario.loader import (
    SCENARIOS_DIR,
    SCHEMA_PATH,
    ScenarioError,
    load_scenario,
    parse_scenario,
    schema,
    schema_text,
)
from arck.simulator.scenario.runner import Outcome, ScenarioNotApplicable, run_scenario
from arck.simulator.scenario.seeded import generated_result
from arck.simulator.target import HttpTarget

FILES = sorted(SCENARIOS_DIR.glob("*.yaml"))
ARCK = [sys.executable, "-m", "arck.conformance.cli"]


def run(path: Path, target: str = "reference", seed: int = 0, text: str | None = None) -> Outcome:
    scenario = parse_scenario(text, str(path)) if text is not None else load_scenario(path)
    built = build_target(target)
    try:
        return run_scenario(scenario, built, seed)
    finally:
        built.close()


def failed(outcome: Outcome) -> list[str]:
    return [j.what for j in outcome.verdict.judgements if not j.held]


def arck(*args: str, hash_seed: str = "0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "true", "PYTHONHASHSEED": hash_seed}
    return subprocess.run([*ARCK, *args], capture_output=True, text=True, env=env,
                          check=False, timeout=300)


# -- the format -----------------------------------------------------------------------------


def test_committed_schema_is_the_generated_one() -> None:
    assert SCHEMA_PATH.read_text("utf-8") == schema_text(), (
        "scenarios/scenario.schema.json is stale: regenerate it with "
        "arck.simulator.scenario.loader.schema_text()"
    )


def test_at_least_twelve_scenarios_each_named_as_its_file() -> None:
    assert len(FILES) >= 12
    for path in FILES:
        assert load_scenario(path).name == path.stem


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_scenario_file_validates_against_the_schema(path: Path) -> None:
    jsonschema.Draft202012Validator(schema()).validate(yaml.safe_load(path.read_text("utf-8")))


BASE = """\
name: tiny
description: x
agent: {system_prompt: You help.}
channels:
  main:
    input_capacity: 10000
    total_capacity: 12000
    output_capacity: 1000
    timeout_ms: 30000
    prices: {input: 1000000, cached_input: 500000, output: 2000000}
wallet: {funds: 100000}
script:
  - text: Done.
actions:
  - run: {input: Hello}
  - wait: {run: r1}
expect:
  runs:
    r1: {end_reason: completed}
  charged_total: 27
"""


TOOLED = BASE.replace("agent: {system_prompt: You help.}", """agent:
  system_prompt: You help.
  tools: [{name: lookup, max_result_context_bytes: 1024}, {name: refund,
           max_result_context_bytes: 1024}]""")


@pytest.mark.parametrize(("old", "new", "message"), [
    ("output: 2000000}", "output: -1}",
     "<t>:10: channels.main.prices.output: Input should be greater than or equal to 0"),
    ("  - text: Done.", "  - text: Done.\n    faults: [{kind: slow, seconds: 0}]",
     "<t>:14: script[0].faults[0].seconds: Input should be greater than 0"),
    ("  - wait: {run: r1}", "  - wait: {run: r9}", "<t>:16: actions[1].wait.run: 'r9' names "
                                                    "no earlier run"),
    ("  - wait: {run: r1}", "  - sleep: {seconds: 1}", "<t>:16: actions[1]: an action is a "
                                                       "mapping with one key"),
    ("  - run: {input: Hello}", "  - run: {}", "<t>:15: actions[0].run.input: Field required"),
    ("  - wait: {run: r1}", "  - receipt: {run: r1}",
     "<t>:16: actions[1].receipt: result is required"),
    ("  charged_total: 27", "  charged_total: 27\n  provider_faults_fired: {slowness: 1}",
     "provider_faults_fired: unknown kinds ['slowness']"),
    ("wallet: {funds: 100000}", "wallet: {funds: 100000}\nwallet: {funds: 1}",
     "<t>:12: wallet: given twice"),
    ("channels:", "channels: [", "not valid YAML"),
    ("  - wait: {run: r1}", "  - revoke: {run: r1}",
     "<t>:16: actions[1].revoke.run: Extra inputs are not permitted"),
    ("  - wait: {run: r1}", "  - revoke: {}", "<t>:16: actions[1].revoke: the agent has no "
                                              "tool to revoke"),
    ("  - wait: {run: r1}", "  - append_input: {run: r1}",
     "<t>:16: actions[1].append_input.input: Field required"),
])
def test_errors_name_the_field_path_and_line(old: str, new: str, message: str) -> None:
    assert parse_scenario(BASE, "<t>").name == "tiny"
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(BASE.replace(old, new), "<t>")
    assert message in str(raised.value)
    assert "Traceback" not in str(raised.value)


@pytest.mark.parametrize(("old", "new", "message"), [
    ("  - wait: {run: r1}", "  - execute: {plan: {faults: [{kind: slow}]}}",
     "<t>:19: actions[1].execute.plan.faults[0].seconds: Field required"),
    ("  - wait: {run: r1}", "  - execute: {plan: {faults: [{kind: reorder}]}}",
     "<t>:19: actions[1].execute.plan: faults: reorder needs progress >= 2"),
    ("  - wait: {run: r1}", "  - finish: {kind: failed, result: {a: 1}}",
     "<t>:19: actions[1].finish: result: a failed receipt carries none"),
    ("  - wait: {run: r1}", "  - finish: {kind: done}", "<t>:19: actions[1].finish.kind: Input "
                                                        "should be 'completed'"),
    ("  - wait: {run: r1}", "  - release: {run: r2}",
     "<t>:19: actions[1].release.run: 'r2' names no earlier run"),
    ("  - wait: {run: r1}", "  - restart_executor: {run: r1}",
     "<t>:19: actions[1].restart_executor.run: Extra inputs are not permitted"),
    ("  - wait: {run: r1}", "  - cancel_call: {expect_answer: 3}",
     "<t>:19: actions[1].cancel_call.expect_answer: Input should be a valid dictionary"),
    ("  charged_total: 27", "  charged_total: 27\n  executor_faults_fired: {dupe: 1}",
     "executor_faults_fired: unknown kinds ['dupe']"),
    ("  charged_total: 27", "  charged_total: 27\n  business_effects: {calls: [{run: r7, "
                           "call: 0, count: 1}]}",
     "<t>:24: expect.business_effects.calls[0].run: 'r7' names no run"),
])
def test_executor_action_errors_name_the_field_path_and_line(
    old: str, new: str, message: str
) -> None:
    assert parse_scenario(TOOLED, "<t>").name == "tiny"
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(TOOLED.replace(old, new), "<t>")
    assert message in str(raised.value)


def test_executor_actions_need_an_agent_with_tools() -> None:
    with pytest.raises(ScenarioError, match=r"actions\[1\].accept: the agent has no tools"):
        parse_scenario(BASE.replace("  - wait: {run: r1}", "  - accept: {}"), "<t>")


def test_generated_results_have_the_size_and_follow_the_seed() -> None:
    for size in (11, 12, 3_000, 200_000):
        result = generated_result(4, "0:0", size)
        text = json.dumps(result, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        assert len(text.encode("utf-8")) == size
    assert generated_result(4, "0:0", 100) == generated_result(4, "0:0", 100)
    assert generated_result(4, "0:0", 100) != generated_result(5, "0:0", 100)


# -- on the reference -----------------------------------------------------------------------


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_scenario_holds_on_the_reference(path: Path) -> None:
    outcome = run(path, seed=0)
    assert failed(outcome) == [], outcome.trace.lines[-1]
    assert outcome.verdict.judgements


def test_figures_do_not_depend_on_the_seed() -> None:
    """Names and generated results change with the seed; token counts and charges do not."""
    path = SCENARIOS_DIR / "large-receipt-projected-once-across-turns.yaml"
    first, second = run(path, seed=1), run(path, seed=2)
    assert failed(first) == failed(second) == []
    assert first.trace.text() != second.trace.text()


# (scenario, mutant, an expectation the mutant must break): the trap each scenario is about.
MUTANT_CATCHES = [
    ("large-receipt-projected-once-across-turns", "never-project", "receipt.stored"),
    ("large-receipt-projected-once-across-turns", "token-budget", "receipt.stored"),
    ("large-receipt-projected-once-across-turns", "wasteful-cut", "receipt.stored"),
    ("large-receipt-never-refused", "never-project", "receipt.stored"),
    ("lost-response-resend-would-bill-twice", "resend-after-lost", "requests_seen"),
    ("slow-answer-past-timeout-keeps-reservation", "resend-after-lost", "requests_seen"),
    ("run-cancel-leaves-accepted-calls-to-their-executor", "cancel-cancels-tool-calls",
     "runs.plan.tool_call_states"),
    ("many-runs-one-wallet-conserve-money", "reservation-never-released", "wallet.reserved"),
    ("many-runs-one-wallet-conserve-money", "cache-billed-as-input", "charged_total"),
    ("usage-drift-calibration-follows-reported-usage", "calibrated-value-as-sample",
     "coefficient_real"),
    ("input-during-a-call-discards-the-unaccepted-plan", "input-revokes-batch",
     "r1 receipt.stored"),
    ("revocation-ends-the-run-permission-changed", "plan-after-revocation",
     "runs.flight.tool_call_states"),
    ("dropped-stream-would-cancel-the-run", "disconnect-cancels-run", "runs.r1.end_reason"),
    # the executor protocol (reference/mutants/executors.py)
    ("run-cancel-leaves-accepted-calls-to-their-executor", "run-cancel-cancels-business",
     "runs.plan.cancel_requested"),
    ("run-cancel-leaves-accepted-calls-to-their-executor", "late-receipt-applied",
     "actions[4].finish.answer.applied"),
    ("late-receipt-after-cancel-never-revives-the-run", "late-receipt-applied",
     "actions[4].release.answer.applied"),
    ("duplicate-final-would-apply-twice", "duplicate-applied-twice",
     "actions[2].execute.answer.replayed"),
    ("same-receipt-id-other-body-refused", "duplicate-applied-twice",
     "actions[5].finish.answer.replayed"),
    ("same-receipt-id-other-body-refused", "receipt-id-only", "actions[4].finish.status"),
    ("second-final-refused", "second-final-accepted", "actions[4].finish.status"),
    ("detach-after-acceptance-never-redispatched", "detach-redispatches",
     "actions[3].claim.status"),
    ("claim-lease-lapses-then-new-claim", "claims-never-lapse", "actions[5].accept.status"),
    ("acceptance-after-run-end-refused-nothing-runs", "accepted-after-run-end",
     "actions[4].accept.status"),
    ("timeout-then-late-completion-blind-retry-would-refund-twice", "two-claims-win",
     "actions[3].claim.status"),
    # pacing (reference/mutants/pacing.py)
    ("a-burst-over-the-rate-limit-is-paced-before-dispatch", "pacing-ignored",
     "runs.r1.state"),
    ("a-burst-over-the-rate-limit-is-paced-before-dispatch", "pacing-one-too-many",
     "runs.r1.tool_call_states"),
    ("a-second-run-inside-the-window-is-paced-too", "pacing-per-session", "runs.r2.state"),
    ("notifications-across-a-window-edge-share-one-window", "pacing-fixed-window",
     "runs.r2.tool_call_states"),
    # subjects (reference/mutants/subjects.py)
    ("a-read-only-lookup-for-no-one-named-is-refused-too", "subject-skipped-when-readonly",
     "runs.r1.state"),
    ("a-read-only-lookup-for-no-one-named-is-refused-too", "subject-skipped-at-low-risk",
     "runs.r1.tool_call_states"),
    ("a-refund-acting-for-no-one-is-never-dispatched", "subject-unchecked", "runs.r1.state"),
]


@pytest.mark.parametrize(("name", "mutant", "broken"), MUTANT_CATCHES)
def test_scenarios_catch_mutants(name: str, mutant: str, broken: str) -> None:
    outcome = run(SCENARIOS_DIR / f"{name}.yaml", f"mutant:{mutant}")
    assert any(broken in what for what in failed(outcome)), failed(outcome)


def test_a_corrupted_expectation_is_not_held() -> None:
    path = SCENARIOS_DIR / "lost-response-resend-would-bill-twice.yaml"
    text = path.read_text("utf-8").replace("charged_total: 27", "charged_total: 54")
    outcome = run(path, text=text)
    assert failed(outcome) == ["charged_total"]
    [judgement] = [j for j in outcome.verdict.judgements if not j.held]
    assert (judgement.expected, judgement.seen) == (54, 27)


def test_provider_requests_are_judged_in_virtual_seconds_since_setup() -> None:
    """A retry sent on the 1 s backoff instead of the 429's retry-after of 7 s is seen."""
    path = SCENARIOS_DIR / "rate-limit-waits-retry-after.yaml"
    text = path.read_text("utf-8").replace("{index: 1, at: 7,", "{index: 1, at: 1,")
    outcome = run(path, text=text)
    assert failed(outcome) == ["provider_requests[1].at"]
    [judgement] = [j for j in outcome.verdict.judgements if not j.held]
    assert (judgement.expected, judgement.seen) == (1, 7)


def test_a_wait_that_cannot_finish_is_a_finding_not_a_loop() -> None:
    """A slow answer and no time allowed to pass: the run is still running."""
    path = SCENARIOS_DIR / "slow-answer-past-timeout-keeps-reservation.yaml"
    text = path.read_text("utf-8").replace("  - advance: {seconds: 30}\n", "")
    outcome = run(path, text=text)
    assert "actions[1].wait r1: settles" in failed(outcome)
    verdict = json.loads(outcome.trace.lines[-1])
    [stuck] = [e for e in verdict["expectations"] if e["what"].endswith("settles")]
    assert stuck["seen"] == "still 'running' after 0 steps of time"


def test_the_trace_records_every_action_and_the_provider() -> None:
    path = SCENARIOS_DIR / "lost-response-resend-would-bill-twice.yaml"
    outcome = run(path)
    lines = [json.loads(line) for line in outcome.trace.lines]
    kinds = [line["kind"] for line in lines]
    assert kinds[0] == "scenario"
    assert kinds[-1] == "verdict"
    assert kinds.count("action") == 3
    [request] = [line for line in lines if line["kind"] == "provider_request"]
    assert request["idempotency_key"] == "mc-000001"
    assert request["outcome"] == "lost"
    assert request["body_sha256"].startswith("sha256:")
    created = [line for line in lines if line["kind"] == "setup" and "request" in line]
    names = [line["request"]["body"].get("name") for line in created]
    assert all(n.startswith("arck-") for n in names if n is not None)
    for line in outcome.trace.lines:
        assert line == json.dumps(json.loads(line), ensure_ascii=False, sort_keys=True,
                                  separators=(",", ":"))


def test_a_target_without_control_is_not_applicable() -> None:
    scenario = load_scenario(FILES[0])
    built = build_target("http://127.0.0.1:9")
    try:
        assert isinstance(built, HttpTarget)
        with pytest.raises(ScenarioNotApplicable, match="provider section"):
            run_scenario(scenario, built)
    finally:
        built.close()


class Without:
    """A target as an adapter may be: every step of `inner` but the ones left out."""

    def __init__(self, inner: Any, *left_out: str) -> None:
        self._inner, self._left_out = inner, left_out

    def __getattr__(self, name: str) -> Any:
        if name in self._left_out:
            raise AttributeError(name)
        return getattr(self._inner, name)


@pytest.mark.parametrize(("action", "left_out", "says"), [
    ("disconnect: {run: r1}", ("drop_event_stream",),
     r"actions\[1\].disconnect: not supported by this target yet \(target reference has no "
     "drop_event_stream step"),
    ("append_input: {run: r1, input: more}", ("append_input",),
     r"actions\[1\].append_input: not supported by this target yet \(target reference has "
     "no append_input step"),
    ("revoke: {}", ("revoke",),
     r"actions\[1\].revoke: not supported by this target yet \(target reference has no "
     "revoke step"),
    ("detach: {run: r1}", ("detach",),
     r"actions\[1\].detach: not supported by this target yet \(target reference has no "
     "detach step"),
    ("cancel_call: {run: r1}", ("request_tool_cancel",),
     r"actions\[1\].cancel_call: not supported by this target yet \(target reference has "
     "no request_tool_cancel step"),
], ids=["disconnect", "append_input", "revoke", "detach", "cancel_call"])
def test_a_step_the_target_lacks_is_not_applicable(
    action: str, left_out: tuple[str, ...], says: str
) -> None:
    scenario = parse_scenario(TOOLED.replace("  - wait: {run: r1}", f"  - {action}"), "<t>")
    built = build_target("reference")
    try:
        with pytest.raises(ScenarioNotApplicable, match=says):
            run_scenario(scenario, Without(built, *left_out))
        assert built.control is not None
        assert built.control.provider.records() == []  # refused before anything was sent
        assert built.created == []
    finally:
        built.close()


def test_a_declaration_the_target_cannot_take_is_not_applicable() -> None:
    scenario = load_scenario(SCENARIOS_DIR / "a-burst-over-the-rate-limit-is-paced-before-"
                             "dispatch.yaml")
    built = build_target("reference")
    try:
        with pytest.raises(ScenarioNotApplicable, match=r"agent\.capability: target reference "
                           "takes no capability declarations"):
            run_scenario(scenario, Without(built, "declare_binding"))
        assert built.created == []
    finally:
        built.close()


def _action_requests(outcome: Outcome) -> list[list[dict[str, Any]]]:
    lines = [json.loads(line) for line in outcome.trace.lines]
    return [[e["request"] | {"status": e["status"]} for e in line["exchanges"]]
            for line in lines if line["kind"] == "action"]


def test_append_input_sends_the_input_to_the_named_run() -> None:
    """Appended to a run waiting for its accepted tool call: taken (200), and after the
    receipt the next request holds the result, then the input."""
    text = TOOLED.replace("  - text: Done.", """  - tool_calls: [{name: refund}]
  - text: Done.""").replace("  - wait: {run: r1}", """  - wait: {run: r1}
  - append_input: {input: And the invoice, expect_status: 200}
  - receipt: {result: {ok: true}}
  - wait: {}""").replace("charged_total: 27", "requests_seen: 2")
    outcome = run(Path("<t>"), text=text)
    assert failed(outcome) == []
    appended = _action_requests(outcome)[2]
    run_id = appended[0]["path"].split("/")[3]
    assert appended == [{"method": "POST", "path": f"/v1/runs/{run_id}/input",
                         "body": {"input": "And the invoice"}, "status": 200}]
    lines = [json.loads(line) for line in outcome.trace.lines]
    [snapshot] = [line for line in lines if line["kind"] == "run"]
    assert snapshot["snapshot"]["answer"]["end_reason"] == "completed"
    types = [e["type"] for e in snapshot["events"]["answer"]["events"]]
    assert types.count("input.appended") == types.count("input.applied") == 1


@pytest.mark.parametrize(("written", "tool"), [("{}", "lookup"), ("{tool: refund}", "refund")])
def test_revoke_takes_the_agents_tool_default_its_first(written: str, tool: str) -> None:
    """The revocation is about the agent the runner published (not a run): its first tool
    unless one is named."""
    text = TOOLED.replace("  - wait: {run: r1}", f"""  - wait: {{run: r1}}
  - revoke: {written}""").replace("charged_total: 27", "requests_seen: 1")
    outcome = run(Path("<t>"), text=text)
    assert failed(outcome) == []
    lines = [json.loads(line) for line in outcome.trace.lines]
    [published] = [line for line in lines if line.get("step") == "publish_agent_version"]
    agent_path = published["request"]["path"].removesuffix("/versions")
    assert agent_path.startswith("/v1/agents/arck-tiny-")
    [revoked] = _action_requests(outcome)[2]
    assert revoked == {"method": "POST", "path": f"{agent_path}/tool-revocations",
                       "body": {"tool_name": tool}, "status": 201}


EXECUTOR_FILES = [path for path in FILES
                  if any(kind in path.read_text("utf-8")
                         for kind in ("  - execute:", "  - accept:", "  - claim:"))]


def test_executor_scenarios_are_at_least_ten_and_replay_identically() -> None:
    """Every scenario driving an executor gives the same trace twice (the simulated
    executor's ids, receipt bytes and business effects come from names and the seed)."""
    assert len(EXECUTOR_FILES) >= 11
    for path in EXECUTOR_FILES:
        first, second = run(path, seed=5), run(path, seed=5)
        assert failed(first) == [], (path.stem, first.trace.lines[-1])
        assert first.trace.text() == second.trace.text(), path.stem


def test_execute_records_the_simulated_executor_and_its_business_effects() -> None:
    """execute: the simulated executor's requests are the action's exchanges, what it did
    is under `executor`; the fault counts and business effects are traced at the end."""
    text = TOOLED.replace("  - text: Done.", """  - tool_calls: [{name: refund}]
  - text: Done.""").replace("  - wait: {run: r1}", """  - wait: {run: r1}
  - execute: {plan: {progress: 1, faults: [{kind: duplicate, receipt: progress}]},
              expect_status: 200, expect_answer: {state: completed}}
  - wait: {}""").replace("charged_total: 27", """requests_seen: 2
  executor_faults_fired: {duplicate: 1, late: 0}
  business_effects: {total: 1, calls: [{run: r1, call: 0, count: 1}]}""")
    outcome = run(Path("<t>"), text=text)
    assert failed(outcome) == []
    lines = [json.loads(line) for line in outcome.trace.lines]
    [execute] = [line for line in lines if line["kind"] == "action" and line["index"] == 2]
    paths = [e["request"]["path"].rsplit("/", 1)[-1] for e in execute["exchanges"]]
    assert paths == ["tool-calls", "claims", "receipts", "receipts", "receipts", "receipts"]
    kinds = [e["request"]["body"].get("kind") for e in execute["exchanges"][2:]]
    assert kinds == ["accepted", "progress", "progress", "completed"]
    assert execute["exchanges"][4]["answer"]["replayed"] is True
    [did] = execute["executor"]
    assert (did["handler_runs"], did["fired"], did["confirmed"]) == (1, ["duplicate"], True)
    [faults] = [line for line in lines if line["kind"] == "executor_faults"]
    assert faults["fired"]["duplicate"] == 1
    [business] = [line for line in lines if line["kind"] == "business"]
    assert [e["confirmed"] for e in business["effects"]] == [True]


def test_a_release_with_nothing_held_is_a_finding() -> None:
    text = TOOLED.replace("  - text: Done.", """  - tool_calls: [{name: refund}]
  - text: Done.""").replace("  - wait: {run: r1}", """  - wait: {run: r1}
  - execute: {}
  - release: {call: all}
  - release: {}""").replace("charged_total: 27", "requests_seen: 2")
    outcome = run(Path("<t>"), text=text)
    [finding] = failed(outcome)
    assert finding.startswith("actions[4].release tc-")
    lines = [json.loads(line) for line in outcome.trace.lines]
    [nothing] = [line for line in lines if line["kind"] == "action" and line["index"] == 3]
    assert nothing["notes"] == ["no tool call to act on (call 'all' of 1)"]


# -- the command line -----------------------------------------------------------------------


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(BASE, "utf-8")
    return path


@pytest.mark.parametrize("name", [
    "run-cancel-leaves-accepted-calls-to-their-executor",
    "crash-after-storing-final-redelivered-not-rerun",  # the simulated executor, restarted
])
def test_cli_trace_is_byte_identical_across_processes_and_hash_seeds(
    tmp_path: Path, name: str
) -> None:
    scenario = SCENARIOS_DIR / f"{name}.yaml"
    traces = []
    for hash_seed in ("1", "2"):
        trace = tmp_path / f"trace-{hash_seed}.jsonl"
        done = arck("scenario", "run", str(scenario), "--target", "reference", "--seed", "3",
                    "--trace", str(trace), hash_seed=hash_seed)
        assert done.returncode == 0, done.stdout + done.stderr
        traces.append(trace.read_bytes())
    assert traces[0] == traces[1]
    assert b'"seed":3' in traces[0]


def test_cli_exit_codes(scenario_file: Path, tmp_path: Path) -> None:
    passed = arck("scenario", "run", str(scenario_file))
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "PASSED" in passed.stdout
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(BASE.replace("charged_total: 27", "charged_total: 28"), "utf-8")
    failing = arck("scenario", "run", str(wrong), "--target", "reference", "--seed", "4")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "NOT HELD" in failing.stdout
    assert f"replay: arck scenario run {wrong} --target reference --seed 4" in failing.stdout
    mutant = arck("scenario", "run",
                  str(SCENARIOS_DIR / "large-receipt-never-refused.yaml"),
                  "--target", "mutant:never-project")
    assert mutant.returncode == 1, mutant.stdout + mutant.stderr


@pytest.mark.parametrize(("args", "says"), [
    (["--target", "http://127.0.0.1:9"], "provider section"),
    (["--target", "mutant:no-such-mutant"], "unknown mutant"),
])
def test_cli_usage_errors_exit_2(scenario_file: Path, args: list[str], says: str) -> None:
    done = arck("scenario", "run", str(scenario_file), *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_cli_bad_file_and_inapplicable_target_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE.replace("  - run: {input: Hello}", "  - run: {}"), "utf-8")
    done = arck("scenario", "run", str(bad))
    assert done.returncode == 2
    assert "actions[0].run.input: Field required" in done.stdout
    good = tmp_path / "good.yaml"
    good.write_text(BASE, "utf-8")
    done = arck("scenario", "run", str(good), "--target", "http://127.0.0.1:9")
    assert done.returncode == 2  # a service without a provider section: not applicable
    assert "has no control" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_cli_lists_the_scenarios(tmp_path: Path) -> None:
    done = arck("scenario", "list")
    assert done.returncode == 0, done.stdout + done.stderr
    for path in FILES:
        assert path.stem[:20] in done.stdout
    (tmp_path / "broken.yaml").write_text("name: [", "utf-8")
    done = arck("scenario", "list", str(tmp_path))
    assert done.returncode == 2
    assert "invalid" in done.stdout
