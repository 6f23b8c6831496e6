"""A crash campaign over a real process (issue 17 §0): `arck serve --db FILE` killed with
SIGKILL inside write transactions, at seeded moments, while runs, model calls and receipts
are in flight, and started again on the same file every time.

Each life of the server is armed with `--crash-at-commit N` (reference/crashpoint.py): its
N-th write transaction kills it just before COMMIT, its pages already written into the
database file, so restarts meet the hot rollback journal a real crash mid-commit leaves. The
test plays the client and the executor over loopback and, at the end, asserts what the docs
promise: every restart started, every run ended `completed`, every model call billed at most
once by the provider (by `Idempotency-Key`, and by step of its script), every receipt that was
answered kept, and every wallet balanced to the micro-unit against the provider's bills.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from runkit import CHANNEL, FULL, FUNDS, SCHEMA, charge
from servekit import Served, free_port, provider_on_socket

from arck.simulator.provider import SlowAnswer, Step, ToolCall, script_tag

SEED = 17
SESSIONS = 6
TURNS = 3  # runs per session; each run: a tool call, its receipt, then the final answer
KILLS = 14
SLOW = 0.15  # seconds each model answer takes, so calls are in flight when a kill lands


class ServerDied(Exception):
    """The server stopped answering (it killed itself at its crash point)."""


def _steps(i: int) -> list[Step]:
    steps: list[Step] = []
    for turn in range(TURNS):
        steps += [Step(tool_calls=[ToolCall(name="lookup", arguments={"order": f"{i}-{turn}"})],
                       faults=[SlowAnswer(seconds=SLOW)]),
                  Step(text=f"Answer {i}.{turn}.", faults=[SlowAnswer(seconds=SLOW)])]
    return steps


@dataclass
class Campaign:
    """What the client knows: sessions, their runs, the executor, the receipts answered."""

    sessions: list[dict[str, Any]] = field(default_factory=list)
    runs: dict[str, list[str]] = field(default_factory=dict)  # session id -> run ids
    unsure: set[str] = field(default_factory=set)  # sessions whose run creation got no answer
    executor: dict[str, str] = field(default_factory=dict)  # its headers
    applied: dict[str, str] = field(default_factory=dict)  # call id -> final receipt id

    def known_runs(self) -> int:
        return sum(len(r) for r in self.runs.values())

    def done(self) -> bool:
        return all(len(r) == TURNS for r in self.runs.values()) and not self.unsure


def _call(client: httpx.Client, method: str, path: str, body: Any = None,
          headers: dict[str, str] | None = None) -> httpx.Response:
    try:
        return client.request(method, path, json=body, headers=headers)
    except httpx.TransportError as exc:
        raise ServerDied(str(exc)) from exc


def _ok(response: httpx.Response, *codes: int) -> Any:
    assert response.status_code in codes, f"{response.request.url}: {response.status_code} " \
                                          f"{response.text}"
    return response.json()


def _setup(client: httpx.Client, campaign: Campaign) -> None:
    """Sessions, each on a version of its own answered by script c{i}, one wallet each, and
    one executor for the shared binding (before any kill is armed)."""
    binding = _ok(_call(client, "POST", "/v1/bindings", {"name": "orders"}), 201)
    tool = {"name": "lookup", "description": "Read an order.",
            "binding_id": binding["binding_id"], "input_schema": SCHEMA,
            "output_schema": SCHEMA, "max_result_context_bytes": 1024}
    tool_set = _ok(_call(client, "POST", "/v1/tool-sets", {"name": "t", "tools": [tool]}), 201)
    channel = _ok(_call(client, "POST", "/v1/channels", CHANNEL), 201)
    for i in range(SESSIONS):
        version = _ok(_call(client, "POST", "/v1/agents/agent-1/versions", {
            "tool_set_id": tool_set["tool_set_id"], "channel_id": channel["channel_id"],
            "system_prompt": f"Session {i}. {script_tag(f'c{i}')}"}), 201)
        wallet = _ok(_call(client, "POST", "/v1/wallets", {"name": f"w{i}"}), 201)
        _ok(_call(client, "POST", f"/v1/wallets/{wallet['wallet_id']}/deposits",
                  {"amount": FUNDS}), 200)
        session = _ok(_call(client, "POST", "/v1/sessions", {
            "agent_version": version["agent_version"], "wallet_id": wallet["wallet_id"]}), 201)
        campaign.sessions.append(session)
        campaign.runs[session["session_id"]] = []
    registered = _ok(_call(client, "POST", "/v1/executors",
                           {"name": "crash-campaign", "bindings": [binding["binding_id"]]}), 201)
    campaign.executor = {"Authorization": f"Bearer {registered['token']}"}


def _resolve_unsure(client: httpx.Client, campaign: Campaign) -> None:
    """A run creation that got no answer either committed or not: run ids are sequential per
    store, so the next id tells (the test is the only client creating runs)."""
    for session_id in sorted(campaign.unsure):
        probe = f"/v1/runs/run-{campaign.known_runs() + 1:06d}"
        answer = _call(client, "GET", probe)
        if answer.status_code == 200 and answer.json()["session_id"] == session_id:
            campaign.runs[session_id].append(answer.json()["run_id"])
        campaign.unsure.discard(session_id)


def _execute(client: httpx.Client, campaign: Campaign, call: dict[str, Any]) -> None:
    """Take one call as far as it goes: claim, `accepted`, the final receipt. Receipt ids
    and bodies are fixed per call, so a redelivery after a kill is the same receipt."""
    call_id, exe = call["call_id"], campaign.executor
    mine = _call(client, "GET", f"/v1/executor/calls/{call_id}", headers=exe)
    state = mine.json() if mine.status_code == 200 else {"state": "dispatchable"}
    if state["state"] == "dispatchable":
        claimed = _call(client, "POST", f"/v1/tool-calls/{call_id}/claims", {}, headers=exe)
        if claimed.status_code != 201:
            return
        state = {"state": "claimed", "claim_id": claimed.json()["claim_id"]}
    claim_id = state["claim_id"]
    path = f"/v1/tool-calls/{call_id}/receipts"
    if state["state"] == "claimed":
        accepted = _call(client, "POST", path, {"receipt_id": f"{call_id}.accepted",
                                                "claim_id": claim_id, "kind": "accepted"},
                         headers=exe)
        if accepted.status_code != 200:
            return
        state["state"] = "accepted"
    if state["state"] == "accepted":
        final = {"receipt_id": f"{call_id}.final", "claim_id": claim_id, "kind": "completed",
                 "result": {"status": "shipped", "order": call["arguments"]}}
        answer = _ok(_call(client, "POST", path, final, headers=exe), 200)
        assert answer["state"] == "completed", answer
        campaign.applied[call_id] = final["receipt_id"]


def _drive(url: str, campaign: Campaign, seconds: float) -> None:
    """Client and executor until every run has ended, or ServerDied."""
    with httpx.Client(base_url=url, headers=FULL, timeout=5) as client:
        _resolve_unsure(client, campaign)
        _ok(_call(client, "POST", "/v1/executor/heartbeat", {}, headers=campaign.executor), 200)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for session in campaign.sessions:
                sid = session["session_id"]
                runs = campaign.runs[sid]
                snapshot = _ok(_call(client, "GET", f"/v1/runs/{runs[-1]}"), 200) if runs \
                    else None
                if snapshot is not None and snapshot["state"] == "waiting_tools":
                    calls = _ok(_call(client, "GET", f"/v1/runs/{runs[-1]}/tool-calls"), 200)
                    for call in calls["tool_calls"]:
                        if call["state"] in ("dispatchable", "claimed", "accepted"):
                            _execute(client, campaign, call)
                if (snapshot is None or snapshot["state"] == "ended") and len(runs) < TURNS:
                    campaign.unsure.add(sid)
                    created = _call(client, "POST", f"/v1/sessions/{sid}/runs",
                                    {"input": f"Where is order {len(runs)}?"})
                    campaign.unsure.discard(sid)
                    runs.append(_ok(created, 201)["run_id"])
            if campaign.done() and all(
                    _ok(_call(client, "GET", f"/v1/runs/{r}"), 200)["state"] == "ended"
                    for runs in campaign.runs.values() for r in runs):
                return
            time.sleep(0.01)
    raise AssertionError(f"the runs did not end within {seconds} s of one server's life")


def _hot_journal(db: Path) -> bool:
    journal = db.with_name(db.name + "-journal")
    return journal.exists() and journal.stat().st_size > 0


@pytest.mark.timeout(300)
def test_sigkill_inside_write_transactions_then_restart_loses_and_repeats_nothing(
    tmp_path: Path,
) -> None:
    rng = random.Random(SEED)
    db, log = tmp_path / "engine.sqlite3", tmp_path / "serve.log"
    port = free_port()
    campaign = Campaign()
    lives: list[tuple[int, bool]] = []  # (crash point, whether a hot journal met the restart)
    with provider_on_socket() as (provider, url):
        for i in range(SESSIONS):
            provider.add_script(f"c{i}", _steps(i))
        args = ["--db", str(db), "--provider-url", url, "--lease-seconds", "1"]
        served = Served(args, port, log)
        try:
            with httpx.Client(base_url=served.url, headers=FULL, timeout=5) as client:
                _setup(client, campaign)
        finally:
            served.stop()
        kills = 0
        while kills < KILLS and not campaign.done():
            at = rng.randint(1, 30)
            hot = _hot_journal(db)
            served = Served([*args, "--crash-at-commit", str(at)], port, log, may_die=True)
            lives.append((at, hot))
            if served.died_starting:
                kills += 1
                continue
            try:
                _drive(served.url, campaign, 60)
            except ServerDied:
                code = served.process.wait(10)
                assert code == -9, f"the server died of something else ({code}): {log}"
                kills += 1
            finally:
                served.stop()
        served = Served(args, port, log)  # the last life, never killed, sees it through
        try:
            _drive(served.url, campaign, 60)
            state = _final_state(served.url, campaign)
        finally:
            served.stop()
        records = provider.records()
    assert kills == KILLS, f"only {kills} kills before the work was done: {lives}"
    assert any(hot for _, hot in lives), f"no restart met a hot journal: {lives}"
    _judge(campaign, state, records)


def _final_state(url: str, campaign: Campaign) -> dict[str, Any]:
    with httpx.Client(base_url=url, headers=FULL, timeout=5) as client:
        runs = {r: client.get(f"/v1/runs/{r}").json()
                for rs in campaign.runs.values() for r in rs}
        calls = {r: client.get(f"/v1/runs/{r}/tool-calls").json()["tool_calls"] for r in runs}
        events = {r: client.get(f"/v1/runs/{r}/events").json()["events"] for r in runs}
        wallets = {s["session_id"]: client.get(f"/v1/wallets/{s['wallet_id']}").json()
                   for s in campaign.sessions}
        formal = {s["session_id"]: client.get(
            f"/v1/sessions/{s['session_id']}/history").json()["items"]
            for s in campaign.sessions}
    return {"runs": runs, "calls": calls, "events": events, "wallets": wallets,
            "formal": formal}


def _judge(campaign: Campaign, state: dict[str, Any], records: list[Any]) -> None:
    runs, events = state["runs"], state["events"]
    assert len(runs) == SESSIONS * TURNS
    reasons = {r: s["end_reason"] for r, s in runs.items()}
    assert set(reasons.values()) == {"completed"}, reasons
    # Every model call the provider billed, once: no key and no request body billed twice.
    billed = [r for r in records if r.billed]
    keys = [r.idempotency_key for r in billed]
    assert len(keys) == len(set(keys)), f"a model call billed twice: {sorted(keys)}"
    steps = [(r.conversation, r.step) for r in billed]
    assert len(steps) == len(set(steps)), f"one step of a script billed twice: {sorted(steps)}"
    assert len(billed) == SESSIONS * TURNS * 2  # two paid answers per run, none repeated
    # Every receipt answered 200 was kept: its call completed, its receipt in the history.
    for rs in campaign.runs.values():
        for r in rs:
            [call] = state["calls"][r]
            assert call["state"] == "completed", call
    for sid, items in state["formal"].items():
        receipts = [i for i in items if i["type"] == "receipt"]
        assert len(receipts) == TURNS, (sid, receipts)
        finals = [i for i in items if i["type"] == "assistant"]
        assert len(finals) == TURNS, (sid, items)
    for call_id, receipt_id in campaign.applied.items():
        assert any(i.get("receipt_id") == receipt_id for items in state["formal"].values()
                   for i in items if i["type"] == "receipt"), (call_id, receipt_id)
    # Wallets to the micro-unit: charged = the provider's bills of that session's calls.
    usage = {r.idempotency_key: r.usage for r in billed}
    for session in campaign.sessions:
        sid = session["session_id"]
        started = [e["data"]["call_id"] for r in campaign.runs[sid] for e in events[r]
                   if e["type"] == "model_call.started"]
        paid = [c for c in started if c in usage]
        assert len(paid) == TURNS * 2, (sid, started)
        wallet = state["wallets"][sid]
        expected = sum(charge(usage[c]) for c in paid)
        assert (wallet["reserved"], wallet["charged"]) == (0, expected), (sid, wallet)
        assert wallet["balance"] + wallet["charged"] == FUNDS, wallet
