"""The simulated executor: a client of a target's executor API (docs/executors.md) that runs
each call by its plan, faults included, against a business system that counts side effects.

Every request goes through the target's `ExecutorTarget` steps with this executor's role, so
each one is an `Exchange` a failure message can show. The order of one call is fixed:
claim → journal the operation key and assignment → store and send `accepted` → on its
confirmation (a 200 whose state is `accepted`) mark the handler started → progress receipts
(each stored, then sent) → the side effect → store the final receipt → send it. Whatever a
process did not finish, a restarted one finishes from the journal alone, and never runs a
handler whose start it journaled (EXE-10).
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from arck.simulator.control import Control
from arck.simulator.executor.business import BusinessSystem
from arck.simulator.executor.journal import Journal, JournalEntry, StoredReceipt, canonical_bytes
from arck.simulator.executor.outcome import CallOutcome, Delivery, StepRefused
from arck.simulator.executor.plan import FAULT_KINDS, CallPlan, PlanError, make_plan
from arck.simulator.executor.receipts import (
    final_body,
    operation_key,
    rebound,
    receipt_id,
    second_final,
    unknown_result,
)
from arck.simulator.target import Exchange, ExecutorTarget

__all__ = ["ExecutorDead", "SimulatedExecutor"]

_BARRIER_SECONDS = 30.0  # how long concurrent claimers wait for each other to be ready


class ExecutorDead(PlanError):
    """The process crashed (a crash fault fired): only `restart()` may go on."""


class _Crash(Exception):
    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


@dataclass(frozen=True)
class _Identity:
    executor_id: str
    name: str
    role: str
    bindings: tuple[str, ...]
    permissions: tuple[str, ...] | None


class SimulatedExecutor:
    """One executor process. `register` makes the first; `restart` the next on its journal."""

    def __init__(
        self,
        target: ExecutorTarget,
        identity: _Identity,
        *,
        business: BusinessSystem,
        journal: Journal,
        seed: int,
        counts: Counter[str],
        peers: list[SimulatedExecutor],
        process: int = 1,
    ) -> None:
        self.target = target
        self._identity = identity
        self.business = business
        self.journal = journal
        self.seed = seed
        self.process = process
        self.recovered: dict[str, CallOutcome] = {}  # what `restart` finished, by call id
        self._counts = counts
        self._peers = peers
        self._alive = True

    # -- identity and connection -------------------------------------------------------------

    @classmethod
    def register(
        cls,
        target: ExecutorTarget,
        bindings: Sequence[str],
        permissions: Sequence[str] | None = None,
        business: BusinessSystem | None = None,
        *,
        name: str = "arck-executor",
        seed: int = 0,
        online: bool = True,
        tally: Counter[str] | None = None,
    ) -> SimulatedExecutor:
        """Register through `target.register_executor` (role `full`); with `online`, send a
        first heartbeat (registering is not one: EXE-02). Raises StepRefused. `tally`
        counts the faults fired, shared by every executor given it (a run's report)."""
        body: dict[str, Any] = {"name": name, "bindings": list(bindings)}
        if permissions is not None:
            body["permissions"] = list(permissions)
        exchange = target.register_executor(body)
        data = exchange.json_or_none()
        executor_id = data.get("executor_id") if isinstance(data, dict) else None
        if exchange.status != 201 or not isinstance(executor_id, str):
            raise StepRefused("register", exchange)
        identity = _Identity(executor_id, name, target.executor_role(executor_id),
                             tuple(bindings), None if permissions is None else tuple(permissions))
        executor = cls(target, identity, business=business or BusinessSystem(),
                       journal=Journal(), seed=seed,
                       counts=Counter() if tally is None else tally, peers=[])
        if online:
            executor.heartbeat()
        return executor

    @property
    def executor_id(self) -> str:
        return self._identity.executor_id

    @property
    def name(self) -> str:
        return self._identity.name

    @property
    def role(self) -> str:
        """The target role that carries this executor's credential, for raw target steps."""
        return self._identity.role

    @property
    def alive(self) -> bool:
        return self._alive

    def heartbeat(self) -> Exchange:
        exchange = self.target.heartbeat(self.role)
        if exchange.status != 200:
            raise StepRefused("send a heartbeat", exchange)
        return exchange

    def candidates(self) -> list[dict[str, Any]]:
        """The calls it may claim, as the target lists them. Raises StepRefused."""
        exchange = self.target.candidates(self.role)
        data = exchange.json_or_none()
        found = data.get("candidates") if isinstance(data, dict) else None
        if exchange.status != 200 or not isinstance(found, list):
            raise StepRefused("list its candidates", exchange)
        return [c for c in found if isinstance(c, dict)]

    def fault_counts(self) -> dict[str, int]:
        """How often each fault kind fired, every kind present (shared with restarts and
        peers): a check whose fault never fired tested nothing."""
        return {kind: self._counts[kind] for kind in FAULT_KINDS}

    # -- calls -------------------------------------------------------------------------------

    def execute(
        self, call_id: str, plan: CallPlan | Mapping[str, Any] | None = None
    ) -> CallOutcome:
        """Claim `call_id` and carry it out by `plan` (default: accepted, then completed).

        A call this process journaled and has not finished is carried on without a new
        claim; a call whose handler it ran is claimed again only to see the answer, and
        not run (`already_ran`)."""
        self._ensure_alive()
        plan = make_plan(plan)
        timed = [k for k in ("slow", "stall") if plan.fault(k) is not None]
        if timed and getattr(self.target, "control", None) is None:
            raise PlanError(f"fault {timed[0]} needs a target with a clock (target.control)")
        out = self._outcome(call_id)
        entry = self.journal.get(call_id)
        if entry is not None and not entry.closed:
            self._resume(entry, out)
            return out
        racing = plan.fault("concurrent_claimers")
        crowd = [self, *self._crowd(racing.claimers - 1)] if racing else [self]
        out.claims = self._claim_all(call_id, crowd)
        if racing:
            self._fire("concurrent_claimers", out)
        rest = make_plan(plan, faults=[f for f in plan.faults if f.kind != "concurrent_claimers"])
        winners = [(e, x) for e, x in zip(crowd, out.claims, strict=True) if x.status == 201]
        if not winners:
            out.refused = out.claims[0]
            return out
        (first, claimed), *rivals = winners
        out.executor, out.process = first.name, first.process
        first._claimed(call_id, rest, claimed, out)
        for rival, rival_claim in rivals:
            rival_out = rival._outcome(call_id)
            rival_out.claims = [rival_claim]
            rival._claimed(call_id, rest, rival_claim, rival_out)
            out.rivals.append(rival_out)
        return out

    def release(self, call_id: str) -> CallOutcome:
        """Send the final receipt a `late` fault held back."""
        self._ensure_alive()
        out = self._outcome(call_id)
        entry = self.journal.get(call_id)
        final = entry.receipt("final") if entry is not None else None
        if entry is None or final is None or not final.held:
            raise PlanError(f"call {call_id!r}: no final receipt is held back (fault late)")
        final.held = False
        self._resume(entry, out)
        return out

    def restart(self) -> SimulatedExecutor:
        """This process dies (if it had not) and a new one starts on the same journal: it
        heartbeats, then finishes every journaled call it has work for (`recovered`),
        re-sending stored receipts byte for byte and never re-running a started handler.
        Held (late) finals stay held until `release`."""
        self._alive = False
        successor = SimulatedExecutor(
            self.target, self._identity, business=self.business, journal=self.journal,
            seed=self.seed, counts=self._counts, peers=self._peers, process=self.process + 1,
        )
        successor.heartbeat()
        for entry in self.journal.open_entries():
            out = successor._outcome(entry.call_id)
            successor._resume(entry, out)
            successor.recovered[entry.call_id] = out
        return successor

    # -- one call ----------------------------------------------------------------------------

    def _claimed(self, call_id: str, plan: CallPlan, claimed: Exchange, out: CallOutcome) -> None:
        data = claimed.json_or_none()
        claim_id = data.get("claim_id") if isinstance(data, dict) else None
        if not isinstance(claim_id, str):
            out.refused = claimed
            return
        out.claim_id, out.grant = claim_id, data.get("grant") if isinstance(data, dict) else None
        previous = self.journal.get(call_id)
        if previous is not None and previous.handler_started:
            out.operation_key, out.already_ran = previous.operation_key, True
            return
        attempt = self.journal.next_attempt(call_id)
        if plan.fault("detach_before") is not None:
            self._fire("detach_before", out)
            out.detach = self.target.detach(call_id, claim_id, self.role)
            return
        rival = self._stall(call_id, plan, out) if plan.fault("stall") is not None else None
        entry = self.journal.open(JournalEntry(call_id, operation_key(call_id), attempt,
                                               claim_id, out.grant, plan))
        self._resume(entry, out)
        if rival is not None:  # the peer that claimed meanwhile goes on, as its own executor
            peer, claimed, rival_out = rival
            peer._claimed(call_id, make_plan(final=plan.final), claimed, rival_out)
            out.rivals.append(rival_out)

    def _stall(self, call_id: str, plan: CallPlan,
               out: CallOutcome) -> tuple[SimulatedExecutor, Exchange, CallOutcome] | None:
        """Time passes between the claim and `accepted`, and a peer claims meanwhile: the
        peer, its claim and its outcome when the claim won (it goes on after this one)."""
        self._fire("stall", out)
        self._control().advance(plan.fault("stall").seconds)
        self.heartbeat()
        [peer] = self._crowd(1)
        claimed = self.target.claim(call_id, peer.role)
        rival_out = peer._outcome(call_id)
        rival_out.claims = [claimed]
        return (peer, claimed, rival_out) if claimed.status == 201 else None

    def _resume(self, entry: JournalEntry, out: CallOutcome) -> None:
        """Do whatever the journal says is left, from acceptance to the final answer."""
        out.operation_key, out.claim_id = entry.operation_key, entry.claim_id
        out.grant = entry.grant
        try:
            self._advance(entry, out)
        except _Crash as crash:
            out.crashed = crash.where
            self._alive = False
        out.held = any(r.held for r in entry.receipts)

    def _advance(self, entry: JournalEntry, out: CallOutcome) -> None:
        accepted = entry.receipt("accepted") or self._store(entry, "accepted", "accepted", {})
        self._crash_after_store(entry, out, accepted)
        if not entry.confirmed and not self._confirm(entry, accepted, out):
            entry.closed = True
            return
        out.confirmed = True
        if self._pending(entry, "detach_after"):
            self._fire("detach_after", out, entry)
            out.detach = self.target.detach(entry.call_id, entry.claim_id, self.role)
            entry.closed = True
            return
        if not entry.handler_started:
            self._run_handler(entry, out)
        elif entry.receipt("final") is None:
            result = unknown_result(entry.operation_key,
                                    "the executor restarted while the handler ran")
            self._store(entry, "reconciliation_required", "final", {"result": result})
        for receipt in entry.unanswered():
            if not receipt.held:
                self._deliver(entry, receipt, out)
        final = entry.receipt("final")
        entry.closed = final is not None and final.answered
        if entry.closed:
            assert final is not None
            self._misbehave(entry, final, out)

    def _misbehave(self, entry: JournalEntry, final: StoredReceipt, out: CallOutcome) -> None:
        """A faulty executor's sends after its final was answered: another final under a new
        receipt_id, or the final's receipt_id with another body. Never journaled: a
        restarted process does not repeat them."""
        body = json.loads(final.body)
        for kind in ("second_final", "rebind"):
            if self._pending(entry, kind) is None:
                continue
            self._fire(kind, out, entry)
            if kind == "rebind":
                sent = rebound(body)
            else:
                final_kind, members = second_final(final.kind, entry.operation_key)
                sent = {"receipt_id": receipt_id(self.name, entry.call_id, entry.attempt,
                                                 "second-final"),
                        "claim_id": entry.claim_id, "kind": final_kind, **members}
            data = canonical_bytes(sent)
            exchange = self.target.submit_receipt(entry.call_id, data, self.role)
            out.deliveries.append(Delivery(str(sent["receipt_id"]), str(sent["kind"]), data,
                                           exchange, fault=kind))

    def _confirm(self, entry: JournalEntry, accepted: StoredReceipt, out: CallOutcome) -> bool:
        """Send `accepted` until an answer is heard: the confirmation is a 200 whose state
        is `accepted`; anything else means nothing may run."""
        if self._pending(entry, "lost_confirmation"):
            self._fire("lost_confirmation", out, entry)
            self._send(entry, accepted, out, lost=True)
        delivery = self._deliver(entry, accepted, out)
        answer = delivery.answer()
        entry.confirmed = delivery.exchange.status == 200 and isinstance(answer, dict) \
            and answer.get("state") == "accepted"
        if not entry.confirmed:
            out.refused = delivery.exchange
        return entry.confirmed

    def _run_handler(self, entry: JournalEntry, out: CallOutcome) -> None:
        entry.handler_started = True  # journaled before the handler touches anything
        out.handler_runs += 1
        plan = entry.plan
        reorder = self._pending(entry, "reorder")
        held: list[StoredReceipt] = []
        for n in range(1, plan.progress + 1):
            receipt = self._store(entry, "progress", f"progress-{n}",
                                  {"sequence": n, "data": {"step": n, "of": plan.progress}},
                                  sequence=n, crash_check=out)
            if reorder is None:
                self._deliver(entry, receipt, out)
            else:
                held.append(receipt)
        if reorder is not None:
            self._fire("reorder", out, entry)
            for receipt in self._shuffled(held, entry):
                self._deliver(entry, receipt, out)
        slow = self._pending(entry, "slow")
        if slow is not None:
            self._fire("slow", out, entry)
            self._control().advance(slow.seconds)
        error = self._pending(entry, "handler_error")
        if error is None or error.effect:
            control = getattr(self.target, "control", None)
            self.business.perform(entry.operation_key, call_id=entry.call_id,
                                  executor=self.name, process=self.process,
                                  confirmed=entry.confirmed,
                                  at=control.now() if control is not None else None)
        if self._pending(entry, "crash_after_effect"):
            self._fire("crash_after_effect", out, entry)
            raise _Crash("after_effect")
        if error is not None:
            self._fire("handler_error", out, entry)
            result = unknown_result(entry.operation_key, "the handler raised")
            kind, members = "reconciliation_required", {"result": result}
        else:
            kind, members = final_body(plan, entry.operation_key)
        final = self._store(entry, kind, "final", members)
        if self._pending(entry, "late"):
            self._fire("late", out, entry)
            final.held = True
        self._crash_after_store(entry, out, final)

    # -- receipts ----------------------------------------------------------------------------

    def _store(
        self, entry: JournalEntry, kind: str, label: str, members: dict[str, Any],
        sequence: int | None = None, crash_check: CallOutcome | None = None,
    ) -> StoredReceipt:
        rid = receipt_id(self.name, entry.call_id, entry.attempt, label)
        body = {"receipt_id": rid, "claim_id": entry.claim_id, "kind": kind, **members}
        stored = self.journal.store(entry, StoredReceipt(rid, kind, canonical_bytes(body),
                                                         sequence))
        if crash_check is not None:
            self._crash_after_store(entry, crash_check, stored)
        return stored

    def _crash_after_store(self, entry: JournalEntry, out: CallOutcome,
                           stored: StoredReceipt) -> None:
        crash = self._pending(entry, "crash_after_store")
        if crash is not None and not stored.sent and self._chosen(crash.receipt, stored):
            self._fire("crash_after_store", out, entry)
            raise _Crash("after_store")

    def _deliver(self, entry: JournalEntry, receipt: StoredReceipt, out: CallOutcome) -> Delivery:
        """Send a stored receipt; a `duplicate` fault choosing it sends it once more."""
        delivery = self._send(entry, receipt, out)
        duplicate = self._pending(entry, "duplicate")
        if duplicate is not None and self._chosen(duplicate.receipt, receipt):
            self._fire("duplicate", out, entry)
            self._send(entry, receipt, out)
        return delivery

    def _send(self, entry: JournalEntry, receipt: StoredReceipt, out: CallOutcome,
              lost: bool = False) -> Delivery:
        exchange = self.target.submit_receipt(entry.call_id, receipt.body, self.role)
        delivery = Delivery(receipt.receipt_id, receipt.kind, receipt.body, exchange,
                            repeat=receipt.sent, lost=lost)
        receipt.sent = True
        receipt.answered = receipt.answered or not lost
        out.deliveries.append(delivery)
        return delivery

    @staticmethod
    def _chosen(choice: str, receipt: StoredReceipt) -> bool:
        if choice == "progress":
            return receipt.kind == "progress" and receipt.sequence == 1
        return receipt.kind == choice or (choice == "final" and receipt.final)

    def _shuffled(self, receipts: list[StoredReceipt], entry: JournalEntry) -> list[StoredReceipt]:
        """A seeded order of the progress receipts that is never their sequence order."""
        order = list(receipts)
        random.Random(f"{self.seed}:{entry.call_id}:{entry.attempt}").shuffle(order)
        return order if order != receipts else order[::-1]

    # -- helpers -----------------------------------------------------------------------------

    def _pending(self, entry: JournalEntry, kind: str) -> Any:
        """The plan's fault of `kind` if it has not fired for this call yet."""
        return None if kind in entry.fired else entry.plan.fault(kind)

    def _fire(self, kind: str, out: CallOutcome, entry: JournalEntry | None = None) -> None:
        self._counts[kind] += 1
        out.fired.append(kind)
        if entry is not None:
            entry.fired.add(kind)

    def _outcome(self, call_id: str) -> CallOutcome:
        return CallOutcome(call_id, self.name, self.process)

    def _control(self) -> Control:
        control: Control | None = getattr(self.target, "control", None)
        if control is None:
            raise PlanError("faults slow and stall need a target with a clock (target.control)")
        return control

    def _ensure_alive(self) -> None:
        if not self._alive:
            raise ExecutorDead(f"executor {self.name!r} process {self.process} is gone "
                               "(crashed or restarted): use the one restart() returned")

    def _crowd(self, extra: int) -> list[SimulatedExecutor]:
        """`extra` peers: executors of their own (own journal) on the same bindings and
        business system, registered once and kept for later races; online now."""
        while len(self._peers) < extra:
            ident = self._identity
            peer = SimulatedExecutor.register(
                self.target, ident.bindings, ident.permissions, self.business,
                name=f"{ident.name}-peer{len(self._peers) + 1}", seed=self.seed, online=False)
            peer._counts = self._counts
            self._peers.append(peer)
        peers = self._peers[:extra]
        for peer in peers:
            peer.heartbeat()
        return peers

    def _claim_all(self, call_id: str, crowd: list[SimulatedExecutor]) -> list[Exchange]:
        """One claim per executor; with several, from a thread pool released at once."""
        if len(crowd) == 1:
            return [self.target.claim(call_id, self.role)]
        barrier = threading.Barrier(len(crowd))

        def claim(executor: SimulatedExecutor) -> Exchange:
            barrier.wait(_BARRIER_SECONDS)
            return executor.target.claim(call_id, executor.role)

        with ThreadPoolExecutor(max_workers=len(crowd)) as pool:
            return list(pool.map(claim, crowd))
