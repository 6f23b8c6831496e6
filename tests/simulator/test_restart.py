"""The restart step (RUN-02): in-process it keeps the store and drops the app's memory; from a
target file it runs the command, then waits for health; without either it is unavailable."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from arck.simulator.errors import StepUnavailable, TargetUnreachable, UsageError
from arck.simulator.factory import build_target
from arck.simulator.restart import command_restarter
from arck.simulator.target import HttpTarget
from arck.simulator.targetfile import load


def test_in_process_restart_keeps_what_was_stored_and_takes_a_new_app() -> None:
    target = build_target("reference")
    assert isinstance(target, HttpTarget)
    try:
        created = target.create_wallet({"name": "arck-w"})
        wallet_id = created.json()["wallet_id"]
        assert target.deposit(wallet_id, 500).status == 200
        transport = target.client._transport
        before = transport._app  # type: ignore[attr-defined]
        target.restart()
        assert transport._app is not before  # type: ignore[attr-defined]
        assert target.get_wallet(wallet_id).json()["balance"] == 500
        again = target.create_wallet({"name": "arck-w2"}).json()["wallet_id"]
        assert again != wallet_id  # ids go on from the store, not from a new memory
    finally:
        target.close()


def test_a_url_target_without_a_restart_command_has_no_restart_step() -> None:
    target = build_target("http://127.0.0.1:9")
    try:
        with pytest.raises(StepUnavailable, match="restart"):
            target.restart()  # type: ignore[attr-defined]
    finally:
        target.close()


def _client(statuses: list[int]) -> httpx.Client:
    answers = iter(statuses)
    return httpx.Client(base_url="http://svc.test", transport=httpx.MockTransport(
        lambda request: httpx.Response(next(answers))))


def test_the_command_runs_then_health_is_awaited(tmp_path: Path) -> None:
    marker = tmp_path / "restarted"
    command = f"{sys.executable} -c \"open({str(marker)!r}, 'w').write('x')\""
    slept: list[float] = []
    restart = command_restarter(command, _client([503, 503, 200]), 5.0,
                                clock=lambda: 0.0, sleep=slept.append)
    restart()
    assert marker.read_text() == "x"
    assert len(slept) == 2


def test_health_is_asked_with_the_full_credential() -> None:
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Authorization"))
        return httpx.Response(200 if request.headers.get("Authorization") else 401)

    client = httpx.Client(base_url="http://svc.test", transport=httpx.MockTransport(answer))
    command_restarter(f"{sys.executable} -c pass", client, 5.0, "tok-full")()
    assert seen == ["Bearer tok-full"]


def test_a_failing_command_or_a_service_that_stays_down_is_unreachable() -> None:
    failing = command_restarter(f"{sys.executable} -c \"raise SystemExit('boom')\"",
                                _client([200]), 5.0)
    with pytest.raises(TargetUnreachable, match="exited 1: boom"):
        failing()
    times = iter([0.0, 1.0, 2.0, 9.0])
    down = command_restarter(f"{sys.executable} -c pass", _client([503] * 4), 5.0,
                             clock=lambda: next(times), sleep=lambda s: None)
    with pytest.raises(TargetUnreachable, match="did not answer 200 within 5 s"):
        down()


@pytest.mark.parametrize("value", ["", "'unclosed"])
def test_a_bad_restart_command_is_refused_with_its_key(tmp_path: Path, value: str) -> None:
    path = tmp_path / "target.toml"
    path.write_text(f"[target]\nbase_url = \"http://x.test\"\nrestart = {value!r}\n")
    with pytest.raises(UsageError, match=r"target\.restart"):
        load(path)


def test_in_process_legacy_restart_meets_an_upgrade_of_the_named_tool_sets() -> None:
    """DEF-07's step: the named tool set is written back with a token budget and the new app
    migrates it to the byte default; another tool set keeps its own budget."""
    target = build_target("reference")
    assert isinstance(target, HttpTarget)
    try:
        binding = target.create_binding("arck-b").json()["binding_id"]
        ids = []
        for budget in (2048, 4096):
            tool = {"name": "t", "description": "d", "binding_id": binding,
                    "input_schema": {"type": "object"}, "output_schema": {"type": "object"},
                    "max_result_context_bytes": budget}
            ids.append(target.publish_tool_set({"name": "n", "tools": [tool]}).json()[
                "tool_set_id"])
        transport = target.client._transport
        before = transport._app  # type: ignore[attr-defined]
        target.legacy_restart([ids[0]], 1000)
        assert transport._app is not before  # type: ignore[attr-defined]
        budgets = [target.get_tool_set(i).json()["tools"][0]["max_result_context_bytes"]
                   for i in ids]
        assert budgets == [16384, 4096]
    finally:
        target.close()


def test_a_url_target_has_no_legacy_restart_step() -> None:
    target = build_target("http://127.0.0.1:9")
    try:
        with pytest.raises(StepUnavailable, match="legacy_restart"):
            target.legacy_restart(["ts-000001"], 1000)  # type: ignore[attr-defined]
    finally:
        target.close()
