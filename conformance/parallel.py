"""`arck run --workers N`: what crosses between pytest-xdist's controller and its workers.

Each worker builds its own target and runs checks as in a serial run; the controller alone
keeps results, judges the run and writes reports, so parallel and serial runs produce the same
report. Results travel on the test report (pytest serializes a report's extra attributes),
the seed travels out in `workerinput`, and what only a whole worker knows (resources it
created, its baseline judgement) travels back in `workeroutput`.

Hypothesis draws some inputs from a pool of constants it finds in the local modules a process
has loaded, so a worker imports the arck modules the controller had loaded (the CLI, which a
serial `arck run` has loaded too): otherwise a worker explores other inputs than a serial run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import sys
from pathlib import PurePosixPath
from typing import Any

import pytest

import arck.conformance.checks as checks_package
from arck.conformance.coverage import check_id, requirement_ids
from arck.reports.model import CheckResult, Failure, Problem, Status

RESULT_ATTR = "arck_result"  # the attribute of a TestReport that carries a CheckResult
SEED_KEY = "arck_seed"
CREATED_KEY = "arck_created"
FAULTS_KEY = "arck_faults"
BASELINE_KEY = "arck_baseline"
MODULES_KEY = "arck_modules"
JUDGE = "gw0"  # the worker that judges baseline entries, once for the whole run


def worker_id(config: pytest.Config) -> str | None:
    """The xdist worker id (`gw0`, …) when this process is a worker, else None."""
    workerinput = getattr(config, "workerinput", None)
    return None if workerinput is None else str(workerinput["workerid"])


def worker_count(config: pytest.Config) -> int:
    """How many workers share the target: the rate cap is divided among them."""
    workerinput = getattr(config, "workerinput", None)
    return 1 if workerinput is None else int(workerinput.get("workercount", 1))


def distributed(config: pytest.Config) -> bool:
    """Whether this process is an xdist controller handing checks to workers."""
    return worker_id(config) is None and config.getoption("dist", "no") != "no" and bool(
        config.getoption("tx", None)
    )


def inherited_seed(config: pytest.Config) -> int | None:
    workerinput = getattr(config, "workerinput", None)
    return None if workerinput is None else workerinput.get(SEED_KEY)


def loaded_modules() -> list[str]:
    """The arck modules this process has imported, the one run as `__main__` included."""
    names = {name for name in sys.modules if name.startswith("arck.")}
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    if main is not None and main.name.startswith("arck."):
        names.add(main.name)
    return sorted(names)


def load_modules(config: pytest.Config) -> None:
    """In a worker: import the arck modules the controller had loaded (see the module doc)."""
    workerinput = getattr(config, "workerinput", None) or {}
    for name in workerinput.get(MODULES_KEY, []):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def encode(result: CheckResult) -> str:
    """A CheckResult as JSON text: execnet cannot carry integers beyond 64 bits, text it can."""
    data = dataclasses.asdict(result)
    try:
        return json.dumps(data, ensure_ascii=True, allow_nan=True, default=repr)
    except ValueError:  # an integer in an example beyond Python's 4,300-digit str limit
        for holder in (data, *data["failures"]):
            if not _carried(holder["example"]):
                holder["example"] = "(too large to carry between processes; see the case file)"
        return json.dumps(data, ensure_ascii=True, allow_nan=True, default=repr)


def _carried(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=True, default=repr)
    except ValueError:
        return False
    return True


def decode(text: str) -> CheckResult:
    data = json.loads(text)
    fields = {f.name for f in dataclasses.fields(CheckResult)}
    values = {k: v for k, v in data.items() if k in fields}
    values["status"] = Status(values["status"])
    values["failures"] = [Failure(**f) for f in values.get("failures", [])]
    values["errors"] = [Problem(**e) for e in values.get("errors", [])]
    return CheckResult(**values)


def crashed(nodeid: str, message: str) -> CheckResult:
    """The result of a check that sent none (its worker died): not testable, never a pass."""
    return CheckResult(
        **describe(nodeid),
        status=Status.NOT_TESTABLE,
        message=f"the check ended without a result: {message}",
    )


def describe(nodeid: str) -> dict[str, Any]:
    """Check id, name and requirement IDs of a check, known from its node id alone.

    The controller collects nothing itself, and a worker that died cannot say what it ran.
    """
    path, _, name = nodeid.partition("::")
    module_name = PurePosixPath(path).stem
    try:
        module = importlib.import_module(f"{checks_package.__name__}.{module_name}")
        check = getattr(module, name)
    except (ImportError, AttributeError):
        check = None
    return {
        "check_id": check_id(module_name, name),
        "name": name,
        "requirements": sorted(requirement_ids(check)),
    }
