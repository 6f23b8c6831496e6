"""An in-memory platform speaking the executor wire of docs/executors.md, for the simulated
executor's own tests (imported by the other test_executor_* files), and tests of the fake.

It implements the `ExecutorTarget` steps the executor uses, judged in the documented order;
`double_claim` makes every claim win and every claim it granted count (a broken platform);
`on_receipt` lets a test look at the executor's journal and business system at the moment a
receipt arrives.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from arck.simulator.target import Exchange

LEASE = 30.0
ONLINE = 60.0
FINALS = {"completed": "completed", "failed": "failed", "cancelled": "cancelled",
          "submission": "submitted", "reconciliation_required": "reconciliation_required"}


def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass
class FakeCall:
    call_id: str
    binding_id: str
    state: str = "dispatchable"
    claim_id: str | None = None
    holder: str | None = None
    lease_until: float = 0.0
    run_ended: bool = False
    cancel_requested: bool = False
    last_sequence: int = 0
    receipts: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    issued: dict[str, str] = field(default_factory=dict)  # every claim id and its holder


class FakeControl:
    """The harness clock of a fake target: `advance` only moves `now`."""

    virtual_time = True

    def __init__(self) -> None:
        self.time = 1_000.0

    def now(self) -> float:
        return self.time

    def next_deadline(self) -> float | None:
        return None

    def advance(self, seconds: float) -> None:
        self.time += seconds


class FakePlatform:
    def __init__(self, *, double_claim: bool = False, clock: bool = True) -> None:
        self.control: FakeControl | None = FakeControl() if clock else None
        self.double_claim = double_claim
        self.calls: dict[str, FakeCall] = {}
        self.executors: dict[str, dict[str, Any]] = {}
        self.log: list[Exchange] = []
        self.on_receipt: Callable[[str, bytes], None] | None = None
        self._claims = 0
        self._lock = threading.RLock()

    # -- the test's side -------------------------------------------------------------------

    def add_call(self, binding_id: str = "bnd-1") -> str:
        call_id = f"tc-{len(self.calls) + 1}"
        self.calls[call_id] = FakeCall(call_id, binding_id)
        return call_id

    def now(self) -> float:
        return self.control.now() if self.control is not None else 1_000.0

    def receipts_to(self, call_id: str) -> list[bytes]:
        return [x.request_body or b"" for x in self.log
                if x.url.endswith(f"/tool-calls/{call_id}/receipts")]

    # -- the steps ---------------------------------------------------------------------------

    def _answer(self, method: str, path: str, body: bytes | None, role: str, status: int,
                data: Any) -> Exchange:
        exchange = Exchange(method, f"http://fake{path}", body, status,
                            json.dumps(data).encode(), role=role)
        self.log.append(exchange)
        return exchange

    def _executor(self, role: str) -> dict[str, Any]:
        return self.executors[role.removeprefix("executor:")]

    def register_executor(self, body: Any, role: str = "full") -> Exchange:
        with self._lock:
            executor_id = f"exe-{len(self.executors) + 1}"
            self.executors[executor_id] = {
                "name": body["name"], "bindings": list(body["bindings"]),
                "permissions": body.get("permissions", ["executor:connect", "tools:execute"]),
                "online_until": 0.0}
            data = {"executor_id": executor_id, **self.executors[executor_id], "token": "t"}
            return self._answer("POST", "/v1/executors", json.dumps(body).encode(), role, 201,
                                data)

    @staticmethod
    def executor_role(executor_id: str) -> str:
        return f"executor:{executor_id}"

    def heartbeat(self, role: str) -> Exchange:
        with self._lock:
            executor = self._executor(role)
            executor["online_until"] = self.now() + ONLINE
            return self._answer("POST", "/v1/executor/heartbeat", b"{}", role, 200,
                                {"online_until": executor["online_until"]})

    def candidates(self, role: str) -> Exchange:
        with self._lock:
            executor = self._executor(role)
            found = [{"call_id": c.call_id, "binding_id": c.binding_id, "tool_name": "t",
                      "cancel_requested": c.cancel_requested} for c in self.calls.values()
                     if self._dispatchable(c) and c.binding_id in executor["bindings"]]
            return self._answer("GET", "/v1/executor/candidates", None, role, 200,
                                {"candidates": found})

    def executor_call(self, call_id: str, role: str) -> Exchange:
        with self._lock:
            call = self.calls[call_id]
            return self._answer("GET", f"/v1/executor/calls/{call_id}", None, role, 200,
                                {"call_id": call_id, "state": call.state,
                                 "claim_id": call.claim_id, "run_ended": call.run_ended,
                                 "cancel_requested": call.cancel_requested})

    def _dispatchable(self, call: FakeCall) -> bool:
        if call.state == "claimed" and call.lease_until <= self.now():
            call.state, call.claim_id, call.holder = "dispatchable", None, None
        return call.state == "dispatchable" and not call.run_ended

    def claim(self, call_id: str, role: str) -> Exchange:
        with self._lock:
            path = f"/v1/tool-calls/{call_id}/claims"
            executor = self._executor(role)
            call = self.calls[call_id]
            if "tools:execute" not in executor["permissions"]:
                return self._answer("POST", path, b"{}", role, 403, {"error": "permission"})
            if executor["online_until"] <= self.now():
                return self._answer("POST", path, b"{}", role, 409, {"error": "executor_offline"})
            if not self._dispatchable(call) and not self.double_claim:
                return self._answer("POST", path, b"{}", role, 409, {"error": "not dispatchable"})
            self._claims += 1
            call.state, call.claim_id, call.holder = "claimed", f"cl-{self._claims}", role
            call.lease_until = self.now() + LEASE
            call.issued[call.claim_id] = role
            grant = {"call_id": call_id, "binding_id": call.binding_id, "arguments": {}}
            return self._answer("POST", path, b"{}", role, 201,
                                {"claim_id": call.claim_id, "call_id": call_id,
                                 "executor_id": role.removeprefix("executor:"),
                                 "lease_until": call.lease_until, "grant": grant})

    def submit_receipt(self, call_id: str, body: Any, role: str = "full") -> Exchange:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        with self._lock:
            if self.on_receipt is not None:
                self.on_receipt(call_id, raw)
            status, data = self._judge(self.calls[call_id], json.loads(raw), role)
            return self._answer("POST", f"/v1/tool-calls/{call_id}/receipts", raw, role, status,
                                data)

    def _judge(self, call: FakeCall, receipt: dict[str, Any], role: str) -> tuple[int, Any]:
        rid, kind = receipt["receipt_id"], receipt["kind"]
        if rid in call.receipts:
            first_body, first_answer = call.receipts[rid]
            if first_body == canon(receipt):
                return 200, {**first_answer, "replayed": True}
            return 409, {"error": "receipt_id reused with another body"}
        current = receipt.get("claim_id") == call.claim_id and call.holder == role
        if self.double_claim:  # broken: any claim it ever granted still counts
            current = call.issued.get(receipt.get("claim_id", "")) == role
        if not current:
            return 409, {"error": "not the current claim"}
        answer = {"call_id": call.call_id, "receipt_id": rid, "replayed": False,
                  "run_ended": call.run_ended, "applied": True}
        if call.run_ended:
            if kind == "accepted":
                return 409, {"error": "run ended"}
            call.receipts[rid] = (canon(receipt), {**answer, "state": call.state,
                                                   "applied": False})
            return 200, call.receipts[rid][1]
        if kind == "accepted":
            if call.state != "claimed" and not self.double_claim:
                return 409, {"error": f"call is {call.state}"}
            call.state = "accepted"
        elif call.state != "accepted":
            return 409, {"error": f"call is {call.state}"}
        elif kind == "progress":
            if receipt["sequence"] <= call.last_sequence:
                return 409, {"error": "sequence not above the last"}
            call.last_sequence = receipt["sequence"]
        else:
            call.state = FINALS[kind]
        call.receipts[rid] = (canon(receipt), {**answer, "state": call.state})
        return 200, call.receipts[rid][1]

    def detach(self, call_id: str, claim_id: str, role: str) -> Exchange:
        with self._lock:
            call = self.calls[call_id]
            path = f"/v1/tool-calls/{call_id}/detach"
            body = json.dumps({"claim_id": claim_id}).encode()
            if call.claim_id != claim_id or call.holder != role:
                return self._answer("POST", path, body, role, 409, {"error": "not your claim"})
            if call.state == "claimed":
                call.state, call.claim_id, call.holder = "dispatchable", None, None
            elif call.state == "accepted":
                call.state = "reconciliation_required"
            return self._answer("POST", path, body, role, 200,
                                {"call_id": call_id, "state": call.state})

    def request_tool_cancel(self, call_id: str, role: str = "full") -> Exchange:
        with self._lock:
            call = self.calls[call_id]
            call.cancel_requested = True
            return self._answer("POST", f"/v1/tool-calls/{call_id}/cancel", b"{}", role, 200,
                                {"call_id": call_id, "state": call.state,
                                 "cancel_requested": True})


# -- the fake itself ---------------------------------------------------------------------------


def _registered(platform: FakePlatform) -> str:
    executor_id = platform.register_executor({"name": "x", "bindings": ["bnd-1"]}).json()[
        "executor_id"]
    role = platform.executor_role(executor_id)
    platform.heartbeat(role)
    return role


def test_the_fake_lets_one_claim_win_and_judges_replays_by_body() -> None:
    platform = FakePlatform()
    role = _registered(platform)
    call_id = platform.add_call()
    claim = platform.claim(call_id, role)
    assert claim.status == 201
    assert platform.claim(call_id, role).status == 409
    accepted = {"receipt_id": "r1", "claim_id": claim.json()["claim_id"], "kind": "accepted"}
    assert platform.submit_receipt(call_id, accepted, role).json()["state"] == "accepted"
    assert platform.submit_receipt(call_id, accepted, role).json()["replayed"] is True
    assert platform.submit_receipt(call_id, {**accepted, "x": 1}, role).status == 409


def test_the_fake_refuses_offline_claims_and_lapses_leases() -> None:
    platform = FakePlatform()
    executor_id = platform.register_executor({"name": "x", "bindings": ["bnd-1"]}).json()[
        "executor_id"]
    role = platform.executor_role(executor_id)
    call_id = platform.add_call()
    assert platform.claim(call_id, role).status == 409
    platform.heartbeat(role)
    assert platform.claim(call_id, role).status == 201
    assert platform.control is not None
    platform.control.advance(LEASE)
    platform.heartbeat(role)
    assert platform.candidates(role).json()["candidates"][0]["call_id"] == call_id
