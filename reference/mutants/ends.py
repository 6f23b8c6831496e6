"""Mutants of a run's end and what follows it (RUN-06, RUN-09, RUN-11, RUN-13, PRO-02): a
cancel that leaves the session's history unusable, a cancel that takes any body, a detach
refusing a claim id at its bound, a run its wallet can no longer pay for left waiting, input
taken for a run that has ended and then never applied, workers that end with the first run
they hold (runs then move only when someone asks)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.errors import ValidationFailed
from arck.reference.mutants.base import serve
from arck.reference.runtime import inputs
from arck.reference.runtime.executor_wire import DetachAnswer
from arck.reference.runtime.runstore import Claim, RunStore, SessionRow
from arck.reference.runtime.service import Runtime, _validate
from arck.reference.runtime.wallets import Wallets
from arck.reference.runtime.wire import CancelRequest, InputAccepted, InputAppend, Run
from arck.reference.runtime.worker import Workers


class CancelLeavesCallsOpenRuntime(Runtime):
    """A cancel ends the run but answers none of its open tool calls in the execution history:
    the session's next request holds calls with no tool message, which every provider
    refuses."""

    def cancel_run(self, principal: Principal, run_id: str, data: object) -> Run:
        self._run(principal, run_id)
        _validate(CancelRequest, data)
        with self.store.transaction() as db:
            RunStore.end(db, run_id, "cancelled", self.clock.now())
        return self.get_run(principal, run_id)


class CancelBodyUncheckedRuntime(Runtime):
    """A cancel takes any body: an unknown member, a reason of any type or length."""

    def cancel_run(self, principal: Principal, run_id: str, data: object) -> Run:
        return super().cancel_run(principal, run_id, {})


class ShortClaimIdsRuntime(Runtime):
    """A detach's `claim_id` may be at most 199 characters, not 200: a well-formed id at the
    documented bound is refused 422 instead of 409 (no such claim)."""

    def detach(self, principal: Principal, call_id: str, data: object) -> DetachAnswer:
        claim = data.get("claim_id") if isinstance(data, dict) else None
        if isinstance(claim, str) and len(claim) == 200:
            raise ValidationFailed("/claim_id: at most 199 characters", "/claim_id")
        return super().detach(principal, call_id, data)


class DrainedRunWaitsWorkers(Workers):
    """A call the wallet can no longer cover is not sent, but the run is not ended either: it
    stays `running`, waiting for money, taken over at each lease's end."""

    def _begin(
        self, run_id: str, worker: str, session: SessionRow, reservation: int, raw: int,
        set_key: str, figures: dict[str, Any],
    ) -> str | None:
        with self.store.transaction() as db:
            if Wallets.available(db, session.wallet_id) < reservation:
                return None
        return super()._begin(run_id, worker, session, reservation, raw, set_key, figures)


class InputAfterEndRuntime(Runtime):
    """Input for a run that has ended is taken (200, pending) like input for an active run; no
    worker will ever apply it."""

    def append_input(self, principal: Principal, run_id: str, data: object) -> InputAccepted:
        session_id, _, _ = self._run(principal, run_id)
        text = _validate(InputAppend, data).input
        with self.store.transaction() as db:
            input_id = inputs.record(db, run_id, session_id, text, self.clock.now())
        self.workers.notify()
        return InputAccepted(run_id=run_id, input_id=input_id, state="pending")


class RunOnceWorkers(Workers):
    """Each worker task ends after the first run it holds (as when a lease renewal's
    cancellation escapes the loop); the next run created, read or answered starts new ones,
    so runs move only while someone keeps asking."""

    async def _hold(self, claim: Claim, name: str) -> None:
        await super()._hold(claim, name)
        raise asyncio.CancelledError

    def start(self) -> None:
        """The dead workers replaced by new ones under the same names (never more than
        `count` alive, whatever came before)."""
        loop = asyncio.get_running_loop()
        if not self._tasks or self._tasks[0].get_loop() is not loop:
            super().start()
            return
        self._tasks = [
            loop.create_task(self._loop(f"{self.instance}.worker-{i + 1}")) if task.done()
            else task for i, task in enumerate(self._tasks)]


def cancel_leaves_calls_open() -> FastAPI:
    return serve(runtime_class=CancelLeavesCallsOpenRuntime)


def cancel_body_unchecked() -> FastAPI:
    return serve(runtime_class=CancelBodyUncheckedRuntime)


def claim_ids_short() -> FastAPI:
    return serve(runtime_class=ShortClaimIdsRuntime)


def drained_run_waits() -> FastAPI:
    return serve(workers_class=DrainedRunWaitsWorkers)


def input_after_end_taken() -> FastAPI:
    return serve(runtime_class=InputAfterEndRuntime)


def workers_die_after_a_run() -> FastAPI:
    return serve(workers_class=RunOnceWorkers)
