"""The pytest plugin: `pytest --arck-target=reference` in an implementer's own CI.

Registered through the `pytest11` entry point, it only adds options and the `requirement`
marker; the run itself (an `ArckRun`) is registered only when a target is given, so it never
touches a project's other tests.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import pytest

from arck.conformance.events import hookspecs

DEFAULT_CHECK_TIMEOUT = 120.0


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("arck", "arck conformance (Agent Runtime Conformance Kit)")
    group.addoption(
        "--arck-target",
        default=None,
        help="reference | mutant:NAME | URL | app:pkg.mod:factory | adapter:pkg.mod:Class",
    )
    group.addoption("--arck-config", default=None, help="target file (TOML): credentials, safety")
    group.addoption(
        "--arck-requirements", default=None, help="only these areas or IDs, e.g. BUD,DRY-06"
    )
    group.addoption(
        "--arck-checks", default=None,
        help="only these checks: ids as reports name them, or prefixes (runs_edges/), "
        "comma-separated",
    )
    group.addoption(
        "--arck-profile",
        default="ci",
        choices=("quick", "ci", "thorough"),
        help="how hard to search: examples per property check",
    )
    group.addoption("--arck-max-examples", type=int, default=None, help="examples per check")
    group.addoption("--arck-seed", type=int, default=None, help="seed for every random choice")
    group.addoption("--arck-report-dir", default=None, help="write JUnit, JSON and HTML here")
    group.addoption("--arck-strict", action="store_true", help="recommended failures fail too")
    group.addoption(
        "--arck-no-shrink", action="store_true",
        help="stop each check at its first failing input, kept as found (a faster verdict)",
    )
    group.addoption("--arck-case", default=None, help="replay one stored case file")
    group.addoption(
        "--arck-baseline", default=None, help="expected failures (arck baseline); stale ones fail"
    )
    group.addoption(
        "--arck-check-timeout",
        type=float,
        default=DEFAULT_CHECK_TIMEOUT,
        help="seconds before a hung check is 'not testable'",
    )
    group.addoption(
        "--arck-more-failures-seconds",
        type=float,
        default=10.0,
        help="after a check's first failure, seconds to look for other distinct ones "
        "(0: stop at the first; default 10, hypothesis's own figure)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requirement(*ids): the protocol requirement IDs (docs/protocol.md) a check covers",
    )
    if config.getoption("arck_target") or config.getoption("arck_config"):
        # Python's own traceback text for an unexpected error: pytest's default style re-parses
        # each frame's source with `ast`, which a deep or interrupted stack can break
        # (SystemError: "AST constructor recursion depth mismatch"), ending the run as an
        # internal error with every later check unjudged.
        config.option.tbstyle = "native"
        from arck.conformance.searchtime import set_more_failures_seconds

        try:
            set_more_failures_seconds(config.getoption("arck_more_failures_seconds"))
        except ValueError as exc:
            raise pytest.UsageError(f"--arck-more-failures-seconds: {exc}") from None
        from arck.conformance.parallel import inherited_seed
        from arck.conformance.session import ArckRun

        seed = config.getoption("arck_seed")
        if seed is None:
            seed = inherited_seed(config)  # an xdist worker runs with its controller's seed
        if seed is None:
            # CI gets fixed inputs; elsewhere every run explores afresh, and says its seed.
            seed = 0 if os.environ.get("CI") else secrets.randbelow(2**32)
        report_dir = config.getoption("arck_report_dir")
        run = ArckRun(
            config,
            target_spec=config.getoption("arck_target"),
            config_path=Path(p) if (p := config.getoption("arck_config")) else None,
            requirements=config.getoption("arck_requirements"),
            checks=config.getoption("arck_checks"),
            search_profile=config.getoption("arck_profile"),
            max_examples=config.getoption("arck_max_examples"),
            seed=seed,
            report_dir=Path(report_dir) if report_dir else None,
            strict=config.getoption("arck_strict"),
            case_file=Path(c) if (c := config.getoption("arck_case")) else None,
            check_timeout=config.getoption("arck_check_timeout"),
            baseline_path=Path(b) if (b := config.getoption("arck_baseline")) else None,
            shrink=not config.getoption("arck_no_shrink"),
        )
        config.pluginmanager.register(run, "arck-run")


@pytest.fixture(scope="session")
def arck(request: pytest.FixtureRequest) -> Any:
    """The run's CheckContext: the target and what was set up on it."""
    run = request.config.pluginmanager.get_plugin("arck-run")
    if run is None:
        raise pytest.UsageError("arck checks need a target: pass --arck-target or --arck-config")
    return run.context


@pytest.fixture
def arck_replay_case(request: pytest.FixtureRequest) -> Any:
    """The stored case to replay for this check, or None to explore."""
    run = request.config.pluginmanager.get_plugin("arck-run")
    return None if run is None else run.replay_case_for(request.node)
