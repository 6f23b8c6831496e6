"""One conformance run inside pytest: selection, watchdog, statuses, cases, events, reports."""

from __future__ import annotations

import datetime as dt
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

import arck
from arck.conformance import baseline as baselines
from arck.conformance import (
    catalogue,
    coverage,
    inputs,
    outcomes,
    parallel,
    replayjudge,
    searchtime,
    wirestatus,
)
from arck.conformance.context import CheckContext
from arck.conformance.errors import CheckFailure, CheckTimeout, NotApplicable, UsageError
from arck.conformance.events import (
    BaselineJudged,
    CheckFinished,
    ReplayJudged,
    RunFinished,
    RunStarted,
)
from arck.conformance.parallel import RESULT_ATTR
from arck.reports.model import CheckResult, Failure, RunReport, Status
from arck.simulator.errors import TargetUnreachable
from arck.simulator.factory import build_target, verify_credentials
from arck.simulator.target import WAITING, HttpTarget, Target

SEARCH_PROFILES = {"quick": 10, "ci": 40, "thorough": 300}
MAX_EXAMPLE_CHARS = 4000


def _register_hypothesis_profiles() -> None:
    for name, examples in SEARCH_PROFILES.items():
        settings.register_profile(
            f"arck-{name}",
            max_examples=examples,
            deadline=None,  # a target over the network has no fixed latency
            database=None,  # failures are kept as case files, not in a local database
            derandomize=False,  # fixed inputs come from a fixed seed, so --seed still works
            print_blob=False,
            suppress_health_check=[
                HealthCheck.too_slow,
                HealthCheck.data_too_large,
                HealthCheck.filter_too_much,
            ],
        )


class ArckRun:
    def __init__(
        self,
        config: pytest.Config,
        *,
        target_spec: str | None,
        config_path: Path | None,
        requirements: str | None,
        search_profile: str,
        checks: str | None = None,
        max_examples: int | None,
        seed: int,
        report_dir: Path | None,
        strict: bool,
        case_file: Path | None,
        check_timeout: float,
        baseline_path: Path | None = None,
        shrink: bool = True,
    ) -> None:
        self.config = config
        self.target_spec = target_spec
        self.config_path = config_path
        self.catalogue = catalogue.load()
        try:
            self.selected = self.catalogue.select(requirements)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.requirements_arg = requirements
        # --checks: check ids or prefixes; the requirements of checks it leaves out
        self.checks_arg = checks
        self.check_filter = tuple(c.strip() for c in (checks or "").split(",") if c.strip())
        self.left_out: set[str] = set()
        self.search_profile = search_profile
        self.max_examples = max_examples
        self.seed = seed
        self.report_dir = report_dir
        self.strict = strict
        self.case = self._load_case(case_file) if case_file else None
        self.check_timeout = check_timeout
        self.baseline_path = baseline_path
        try:
            self.baseline = baselines.load(baseline_path) if baseline_path else None
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.items_by_name: dict[str, pytest.Item] = {}
        self.results: list[CheckResult] = []
        # Under pytest-xdist: this process's worker id (None in the controller or a serial
        # run), and what the controller hears from its workers.
        self.worker = parallel.worker_id(config)
        self.distributed = parallel.distributed(config)
        self.order: list[str] = []  # node ids in collection order, to sort results by
        self.crashed: dict[str, str] = {}  # node id -> why its worker stopped
        self.worker_created: list[str] = []
        self.worker_faults: dict[str, int] = {}
        self.worker_judged: list[dict[str, Any]] | None = None
        self.started_total = False
        self.internal_errors = 0  # harness errors (a worker's included): the run is not judged
        self.started_at = _now()
        self._target: Target | None = None
        self._context: CheckContext | None = None
        self._started = time.monotonic()
        self.exit_code: int | None = None
        _register_hypothesis_profiles()
        parallel.load_modules(config)  # a worker explores the inputs a serial run does
        # Applied to arck's checks only: a project's own hypothesis tests keep their profile.
        self.settings = settings(settings.get_profile(f"arck-{search_profile}"))
        if max_examples is not None:
            self.settings = settings(self.settings, max_examples=max_examples)
        if searchtime.more_failures_seconds() == 0:  # stop at the first failure, also among
            self.settings = settings(self.settings, report_multiple_bugs=False)  # examples
        self.shrink = shrink
        if not shrink:  # the first failing input of each kind, as found
            self.settings = settings(self.settings, phases=[
                p for p in self.settings.phases if p not in (Phase.shrink, Phase.explain)])

    # -- the target ------------------------------------------------------------------------

    @property
    def target(self) -> Target:
        if self._target is None:
            raise TargetUnreachable("the target was not built")
        return self._target

    @property
    def context(self) -> CheckContext:
        if self._context is None:
            self._context = CheckContext(
                self.target,
                seed=self.seed,
                settings=self.settings,
                lane=f"{self.worker}-" if self.worker else "",
                search_seconds=self.check_timeout * SEARCH_SHARE if self.check_timeout else None,
            )
        return self._context

    def target_info(self) -> dict[str, Any]:
        if self._target is None:
            return {"location": self.target_spec}
        info = self._target.info
        return {
            "name": info.name,
            "kind": info.kind,
            "location": info.location,
            "profile": info.profile,
            "capabilities": list(info.capabilities),
            "destructive": info.destructive,
        }

    def replay_target_flag(self) -> str:
        parts = []
        if self.target_spec:
            parts.append(f"--target {self.target_spec}")
        if self.config_path:
            parts.append(f"--config {self.config_path}")
        return " ".join(parts)

    # -- pytest hooks ----------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        try:
            self._target = build_target(
                self.target_spec, self.config_path, share=parallel.worker_count(self.config)
            )
            observers = getattr(self._target, "observers", None)  # an adapter may have none
            if self._target.info.profile == "reference" and isinstance(observers, list):
                observers.append(wirestatus.judge_success)
            if self.worker is not None:
                return  # the controller has checked the target is up
            answer = self._target.health()
        except UsageError as exc:
            pytest.exit(f"arck: {exc}", returncode=outcomes.EXIT_USAGE)
        except TargetUnreachable as exc:
            pytest.exit(f"arck: target unreachable: {exc}", returncode=outcomes.EXIT_USAGE)
        if answer.status >= 500:
            pytest.exit(
                f"arck: target unhealthy: {answer.describe()}", returncode=outcomes.EXIT_USAGE
            )
        try:
            verify_credentials(self._target)
        except UsageError as exc:
            pytest.exit(f"arck: {exc}", returncode=outcomes.EXIT_USAGE)

    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        self.items_by_name = {item.name: item for item in items}  # baseline cases replay any
        named = {item.nodeid for item in items
                 if self.check_id(item).startswith(self.check_filter)}
        if self.check_filter and not named:
            # pytest prints an exit's reason from collection only through the terminal plugin,
            # which arck turns off: say it here.
            message = (f"arck: --checks {self.checks_arg}: no check has such an id or prefix "
                       "(reports and `arck requirements` name them)")
            sys.stderr.write(message + "\n")
            pytest.exit(message, returncode=outcomes.EXIT_USAGE)
        for item in items:
            ids = self.requirements_of(item)
            wanted = bool(ids & self.selected)
            if self.case is not None:
                wanted = item.name == self.case.get("check")
            elif wanted and self.check_filter and item.nodeid not in named:
                wanted = False
                self.left_out |= ids
            (keep if wanted else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # Here, after every plugin's deselection (`-k`, `-m` run after this plugin's own).
        self.order = [item.nodeid for item in session.items]
        if self.worker is None:
            self._run_started(len(session.items))

    def _run_started(self, total: int) -> None:
        if not self.started_total:
            self.started_total = True
            self.config.hook.pytest_arck_event(
                event=RunStarted(self.target_info(), self.seed, total)
            )

    # -- pytest-xdist hooks (controller side), see parallel.py ---------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[parallel.SEED_KEY] = self.seed
        node.workerinput[parallel.MODULES_KEY] = parallel.loaded_modules()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.order:
            self.order = list(ids)
        self._run_started(len(ids))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        output: dict[str, Any] = getattr(node, "workeroutput", None) or {}
        self.worker_created += output.get(parallel.CREATED_KEY, [])
        for kind, count in output.get(parallel.FAULTS_KEY, {}).items():
            self.worker_faults[kind] = self.worker_faults.get(kind, 0) + int(count)
        if parallel.BASELINE_KEY in output:
            self.worker_judged = output[parallel.BASELINE_KEY]

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        ids = self.requirements_of(item)
        if not ids:
            raise UsageError(f"{item.nodeid}: a conformance check must carry requirement IDs")
        for rid in sorted(ids):
            item.user_properties.append(("requirement", rid))
        self.context.examples = None
        self.context.stopped_by_time = False
        recent = getattr(self.target, "recent", None)
        if recent is not None:
            recent.clear()
        level = self.level_of(item)
        if level == "profile" and self.target.info.profile != "reference":
            raise NotApplicable(outcomes.PROFILE_NOT_DECLARED)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        with _watchdog(self.check_timeout, item.nodeid):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        exc = call.excinfo.value if call.excinfo else None
        finished = call.when == "call" or (call.when == "setup" and exc is not None)
        if not finished:
            return report
        status, message = outcomes.classify(exc, self.level_of(item))
        result = CheckResult(
            check_id=self.check_id(item),
            name=item.name,
            requirements=sorted(self.requirements_of(item)),
            status=status,
            message=message,
            duration_s=round(call.duration, 3),
            examples=self._context.examples if self._context else None,
        )
        if status is Status.PASS and self._context is not None and self._context.stopped_by_time:
            result.message = (
                f"passed on the {result.examples} inputs tried: the search stopped at its time "
                f"budget ({self._context.search_seconds:g} s, half of --check-timeout) before the "
                f"{self.settings.max_examples} the profile asks; a faster target, or a higher "
                "--check-timeout, tries more"
            )
        result.errors = outcomes.problems(exc) if status is not Status.NOT_APPLICABLE else []
        failures = outcomes.check_failures(exc)
        if failures or self.case is not None:  # a replay always shows its requests
            result.exchanges = [e.reproduction() for e in getattr(self.target, "recent", ())]
        if failures:
            self._record_failures(item, failures, result)
            if self.case is not None and self.case.get("check") == item.name:
                same, how = replayjudge.compare(self.case, failures)
                self.config.hook.pytest_arck_event(event=ReplayJudged(item.name, same, how))
            message = result.message
            if all(f.known for f in result.failures):
                result.status = status = Status.KNOWN_FAILURE
                result.message = message = f"known failure (baseline {self.baseline_path}): " \
                                           f"{message}"
        item.user_properties.append(("arck_status", status.value))
        setattr(report, RESULT_ATTR, parallel.encode(result))
        if status in (Status.NOT_APPLICABLE, Status.KNOWN_FAILURE):
            report.outcome = "skipped"
            report.longrepr = (str(item.path), 0, f"{status.value}: {message}")
        elif status is Status.WARN:
            report.outcome = "passed"
            report.longrepr = None
            report.sections.append(("arck warning (recommended)", message))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Results are kept where reports arrive: in a serial run, or in xdist's controller."""
        if self.worker is not None:
            return
        data = getattr(report, RESULT_ATTR, None)
        if data is not None:
            result = parallel.decode(data)
            self.results.append(result)
            self.config.hook.pytest_arck_event(event=CheckFinished(result))
        elif report.failed and report.when not in ("setup", "call", "teardown"):
            # xdist's report for a check whose worker died under it
            self.crashed[report.nodeid] = str(report.longrepr).strip()[:500]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.worker is not None and self._target is not None:
            self._worker_finished(exitstatus)
            return
        if self._target is None:
            return
        if exitstatus in (pytest.ExitCode.USAGE_ERROR, outcomes.EXIT_USAGE):
            self._target.close()  # built, then refused (unhealthy, bad --checks): let it stop
            return
        # An internal error (xdist's controller can fail on a worker's, a race of its own)
        # still gets its report: every check that sent no result is not testable, exit 2.
        broken = exitstatus == pytest.ExitCode.INTERNAL_ERROR
        judged = self._baseline_judgement()
        self._settle_results()
        holding = {e["requirement"] for e in judged or [] if e["state"] == "holds"}
        rows = outcomes.requirement_matrix(
            self.catalogue, self.results, self.selected, self.target.info.profile, holding,
            left_out=self.left_out,
        )
        code = outcomes.exit_code(rows, self.strict)
        if any(e["state"] in ("stale", "not_judged") for e in judged or []):
            code = outcomes.EXIT_FAILED  # a baseline only shrinks: a stale entry must go
        answered = not isinstance(self._target, HttpTarget) or self._target.exchanges > 0
        if not answered or exitstatus == pytest.ExitCode.INTERRUPTED or self.internal_errors \
                or broken:
            code = outcomes.EXIT_USAGE
        report = RunReport(
            arck_version=arck.__version__,
            protocol_revision=self.catalogue.revision,
            target=self.target_info(),
            seed=self.seed,
            started_at=self.started_at,
            finished_at=_now(),
            exit_code=code,
            requirements=rows,
            checks=self.results,
            created=[*self.target.created, *self.worker_created],
            faults=self._faults(),
            settings={
                "search_profile": self.search_profile,
                "max_examples": self.settings.max_examples,
                "strict": self.strict,
                "more_failures_seconds": searchtime.more_failures_seconds(),
                "shrink": self.shrink,
                "requirements": self.requirements_arg or "all",
                "checks": self.checks_arg or "all",
                "duration_s": round(time.monotonic() - self._started, 2),
                "workers": int(self.config.getoption("numprocesses", 0) or 0)
                if self.distributed
                else 1,
            },
            baseline=None if judged is None else {
                "file": str(self.baseline_path), "entries": judged
            },
        )
        if self.report_dir is not None:
            from arck.reports.writers import write_all

            write_all(report, self.report_dir)
        self.exit_code = code
        session.exitstatus = code
        session.config.hook.pytest_arck_event(
            event=RunFinished(report, str(self.report_dir) if self.report_dir else None)
        )
        self.target.close()

    def _worker_finished(self, exitstatus: int) -> None:
        """Hand the controller what only this whole worker knows."""
        output: dict[str, Any] = self.config.workeroutput  # type: ignore[attr-defined]
        output[parallel.CREATED_KEY] = list(self.target.created)
        output[parallel.FAULTS_KEY] = _fault_counts(self.target)
        broken = exitstatus in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.INTERRUPTED)
        if self.baseline is not None and self.worker == parallel.JUDGE and not broken:
            output[parallel.BASELINE_KEY] = self._judge_baseline()
        self.target.close()

    def _baseline_judgement(self) -> list[dict[str, Any]] | None:
        """Each entry's state, judged here or by worker gw0; the ones failing the run shown."""
        if self.baseline is None:
            return None
        if not self.distributed:
            judged = self._judge_baseline()
        elif self.worker_judged is not None:
            judged = self.worker_judged
        else:
            detail = f"worker {parallel.JUDGE}, which judges the baseline, did not finish"
            judged = [{"requirement": e.requirement, "check": e.check, "state": "not_judged",
                       "detail": detail} for e in self.baseline.entries]
        for entry in judged:
            if entry["state"] in ("stale", "not_judged"):
                label = baselines.label(entry["requirement"], entry["check"])
                message = f"baseline entry {label} is {entry['state'].replace('_', ' ')}: " \
                          f"{entry['detail']}"
                self.config.hook.pytest_arck_event(event=BaselineJudged(message))
        return judged

    def pytest_internalerror(self, excrepr: object, excinfo: object) -> None:
        self.internal_errors += 1

    def _settle_results(self) -> None:
        """A check that sent no result is not testable, never a pass; serial order is kept."""
        finished = {r.name for r in self.results}
        for nodeid in self.order:
            if nodeid.rsplit("::", 1)[-1] in finished:
                continue
            why = self.crashed.get(
                nodeid, "the run ended before it finished (interrupted, stopped early, or an "
                "internal error)"
            )
            result = parallel.crashed(nodeid, why)
            self.results.append(result)
            self.config.hook.pytest_arck_event(event=CheckFinished(result))
        rank = {nodeid.rsplit("::", 1)[-1]: i for i, nodeid in enumerate(self.order)}
        self.results.sort(key=lambda r: rank.get(r.name, len(rank)))

    # -- helpers -----------------------------------------------------------------------------

    def _faults(self) -> dict[str, int]:
        counts = dict(self.worker_faults)
        for kind, count in _fault_counts(self.target).items():
            counts[kind] = counts.get(kind, 0) + count
        # A run that injected nothing (budgets only) has nothing to show.
        return dict(sorted(counts.items())) if any(counts.values()) else {}

    def requirements_of(self, item: pytest.Item) -> set[str]:
        ids: set[str] = set()
        for mark in item.iter_markers("requirement"):
            ids.update(mark.args)
        return ids

    def level_of(self, item: pytest.Item) -> str:
        reqs = [self.catalogue.get(rid) for rid in self.requirements_of(item)]
        return outcomes.strongest_level(reqs)

    def check_id(self, item: pytest.Item) -> str:
        return coverage.check_id(item.module.__name__ if hasattr(item, "module") else "",
                                 item.name)

    def _judge_baseline(self) -> list[dict[str, Any]]:
        """Replay each entry's stored cases: stale when all pass now, holds when one fails."""
        assert self.baseline is not None
        judged: list[dict[str, Any]] = []
        for entry in self.baseline.entries:
            state, detail = self._judge_entry(entry)
            judged.append({"requirement": entry.requirement, "check": entry.check,
                           "state": state, "detail": detail})
        return judged

    def _judge_entry(self, entry: baselines.Entry) -> tuple[str, str]:
        if entry.requirement not in self.selected:
            return "not_selected", "requirement not selected by --requirements"
        passing: list[str] = []
        for case in entry.cases:
            item = self.items_by_name.get(case.check)
            if item is None:
                return "stale", f"the suite has no check {case.check!r} any more; re-record it"
            if self.level_of(item) == "profile" and self.target.info.profile != "reference":
                return "not_selected", outcomes.PROFILE_NOT_DECLARED
            try:
                with _watchdog(self.check_timeout, item.nodeid):
                    item.obj.arck_replay(self.context, case.case)  # type: ignore[attr-defined]
                exc: BaseException | None = None
            except (Exception, CheckTimeout) as caught:
                exc = caught
            status, message = outcomes.classify(exc, "core")
            if status is Status.FAIL:
                return "holds", f"{case.check}: stored counterexample still fails"
            if status is not Status.PASS:
                return "not_judged", f"{case.check}: {message}"
            passing.append(case.check)
        return "stale", f"stored counterexample now passes ({', '.join(passing)}): remove the entry"

    def replay_case_for(self, item: pytest.Item) -> Any:
        if self.case is None or self.case.get("check") != item.name:
            return None
        return self.case["case"]

    def _load_case(self, path: Path) -> dict[str, Any]:
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(
                f"--arck-case {path}: cannot read the case file: {exc}"
            ) from None
        if not isinstance(data, dict) or not {"check", "case"} <= data.keys():
            raise pytest.UsageError(f"--arck-case {path}: not an arck case file")
        return data

    def _record_failures(
        self, item: pytest.Item, failures: list[CheckFailure], result: CheckResult
    ) -> None:
        """One `Failure` and one case file for each distinct failure; the first one's fields
        also stand at the top level, as they did when a check reported only one."""
        for number, failure in enumerate(failures, 1):
            requirements = sorted(set(failure.requirements))
            kind = "" if failure.example is None else inputs.describe(failure.example)
            message = str(failure) + (f" Input: {kind}." if kind else "")
            exchanges = result.exchanges if failure.exchanges is None else failure.exchanges
            known = self.baseline is not None and self.baseline.known(
                result.check_id, requirements
            )
            entry = Failure(requirements, message, self._shown(failure.example), kind,
                            exchanges=exchanges, known=known)
            self._keep_case(item, failure, result, entry, number)
            result.failures.append(entry)
        first = result.failures[0]
        result.failed = sorted({rid for f in result.failures for rid in f.requirements})
        result.message = first.message
        result.example, result.exchanges = first.example, first.exchanges
        result.case_file, result.replay = first.case_file, first.replay

    @staticmethod
    def _shown(example: Any) -> Any:
        """The example as the report shows it: whole, or a pointer to the case file."""
        text = json.dumps(example, ensure_ascii=True, allow_nan=True, default=repr)
        if len(text) <= MAX_EXAMPLE_CHARS:
            return example
        return f"({len(text)} characters; see the case file)"

    def _keep_case(
        self,
        item: pytest.Item,
        failure: CheckFailure,
        result: CheckResult,
        entry: Failure,
        number: int,
    ) -> None:
        """Write `<check>.json` (`<check>-2.json`, … for further failures), replayable alone."""
        if self.report_dir is None:
            return
        cases = self.report_dir / "cases"
        cases.mkdir(parents=True, exist_ok=True)
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", result.check_id)
        name = f"{stem}.json" if number == 1 else f"{stem}-{number}.json"
        text = json.dumps(failure.example, ensure_ascii=True, allow_nan=True, default=repr)
        record = {
            "arck_case": 1,
            "check": item.name,
            "check_id": result.check_id,
            "requirements": result.requirements,
            "seed": self.seed,
            "target_profile": self.target.info.profile,
            "message": entry.message,
            "failed": entry.requirements,
            "assertion": replayjudge.assertion_of(failure),
            "input": entry.input_kind,
            "case": json.loads(text),
            "exchanges": entry.exchanges,
        }
        scenario = getattr(failure, "scenario", None)  # a stateful check's failure as a story
        if isinstance(scenario, str):
            scenario_name = f"{name.removesuffix('.json')}.scenario.yaml"
            (cases / scenario_name).write_text(scenario, "utf-8")
            record["scenario"] = f"cases/{scenario_name}"
        (cases / name).write_text(
            json.dumps(record, ensure_ascii=True, allow_nan=True, indent=1), "utf-8"
        )
        entry.case_file = f"cases/{name}"
        entry.replay = f"arck replay {cases / name} {self.replay_target_flag()}"


# A search may generate inputs for this share of --check-timeout, then passes on what it tried:
# the rest is room to shrink a failure found late, so a slow target is never "not testable"
# merely because the profile asks for many examples.
SEARCH_SHARE = 0.5


class _watchdog:
    """Turns a hung check into CheckTimeout (not testable) instead of a hung CI job."""

    def __init__(self, seconds: float, nodeid: str) -> None:
        self.seconds, self.nodeid = seconds, nodeid
        self.armed = (
            seconds > 0
            and hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread()
        )

    def _fire(self, signum: int, frame: Any) -> None:
        now = time.monotonic()
        limit = f"{self.nodeid} ran past {self.seconds:g} s (--check-timeout)"
        if WAITING.request is not None:
            raise CheckTimeout(f"{limit}; {WAITING.request} had been waiting for an answer for "
                               f"{now - WAITING.since:.1f} s", on_target=True)
        last = (f"the last was answered {now - WAITING.answered_at:.1f} s before"
                if WAITING.answered_at is not None else "none was sent")
        raise CheckTimeout(f"{limit} with no request waiting on the target ({last}): the "
                           "check's own work (generating or shrinking inputs, simulators, waits "
                           "between requests) took the time; raise --check-timeout or lower "
                           "--max-examples", on_target=False)

    def __enter__(self) -> None:
        if self.armed:
            self.previous = signal.signal(signal.SIGALRM, self._fire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: object) -> None:
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _fault_counts(target: Any) -> dict[str, int]:
    """What the simulated provider behind the target fired, by fault kind, and what arck's
    simulated executors fired, as `executor:<kind>` (none: {})."""
    control = getattr(target, "control", None)
    provider = getattr(control, "provider", None)
    counts = {k: int(v) for k, v in provider.fault_counts().items()} if provider else {}
    executors = getattr(control, "executor_faults", None) or {}
    counts.update({f"executor:{k}": int(v) for k, v in executors.items()})
    return counts
