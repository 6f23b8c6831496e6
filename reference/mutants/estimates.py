"""Mutants where the token estimate leaks past context management (CTX-12): into a charge,
or into a byte budget. Both look right while the estimate is close to the provider's count;
only usage that drifts away from it shows them. And one whose reported coefficient is not its
own sums' ratio (RUN-15)."""

from __future__ import annotations

import dataclasses
import math
import sqlite3
from typing import Any

from fastapi import FastAPI

from arck.reference.mutants.base import serve
from arck.reference.runtime import billing
from arck.reference.runtime.claims import CallRow
from arck.reference.runtime.executor_wire import Receipt, ReceiptAnswer
from arck.reference.runtime.modelcall import Outcome
from arck.reference.runtime.runstore import SessionRow
from arck.reference.runtime.service import Runtime
from arck.reference.runtime.worker import Workers


class EstimateBilledWorkers(Workers):
    """Charges a main call's prompt at its calibrated estimate, not the reported tokens; the
    calibration sample and the recorded usage stay the provider's."""

    def _finish(
        self, run_id: str, worker: str, session: SessionRow, call_id: str, reservation: int,
        raw: int, set_key: str, prices: billing.Prices, outcome: Outcome,
        purpose: str = "main", repairable: bool = False,
    ) -> str | None:
        usage = (outcome.body or {}).get("usage")
        estimate = self._estimate(run_id, call_id)
        if purpose != "main" or not isinstance(usage, dict) or estimate is None:
            return super()._finish(run_id, worker, session, call_id, reservation, raw,
                                   set_key, prices, outcome, purpose, repairable)
        prompt, _, cached = billing.usage_figures(usage)
        billed = {**usage, "prompt_tokens": max(estimate, cached)}
        body = {**(outcome.body or {}), "usage": billed}
        answer = super()._finish(run_id, worker, session, call_id, reservation, raw, set_key,
                                 prices, dataclasses.replace(outcome, body=body), purpose,
                                 repairable)
        with self.store.transaction() as db:  # put the provider's count back where it is read
            db.execute("UPDATE calibration_samples SET real = ? WHERE model_call_id = ?",
                       (prompt, call_id))
            db.execute("UPDATE sessions SET last_real = ? WHERE id = ? AND last_raw = ?",
                       (prompt, session.session_id, raw))
        return answer

    def _estimate(self, run_id: str, call_id: str) -> int | None:
        for item in self.runs.events(run_id):
            data = item["data"]
            if item["type"] == "model_call.started" and data.get("call_id") == call_id:
                value = data.get("calibrated_estimate")
                return math.ceil(value) if isinstance(value, int | float) else None
        return None


def estimate_billed() -> FastAPI:
    return serve(workers_class=EstimateBilledWorkers)


class EstimateBudgetRuntime(Runtime):
    """A tool's byte budget converted through the session's calibration: budget × raw /
    real, as if bytes were tokens the coefficient corrects."""

    def take_receipt(self, db: sqlite3.Connection, executor_id: str, call: CallRow,
                     receipt: Receipt, body: dict[str, Any], at: float) -> ReceiptAnswer:
        row = db.execute("SELECT last_raw, last_real FROM sessions WHERE id = ?",
                         (call.session_id,)).fetchone()
        raw, real = row if row else (None, None)
        if raw and real:
            budget = min(max(call.budget * raw // real, 1024), 32_768)
            call = dataclasses.replace(call, budget=budget)
        return super().take_receipt(db, executor_id, call, receipt, body, at)


def estimate_budget() -> FastAPI:
    return serve(runtime_class=EstimateBudgetRuntime)


class UncalibratedZeroWorkers(Workers):
    """With no calibration sample the coefficient is reported 0 (the estimate stays the raw
    one, as it should): every figure that uses the events' coefficient is off."""

    def _begin(
        self, run_id: str, worker: str, session: SessionRow, reservation: int, raw: int,
        set_key: str, figures: dict[str, Any],
    ) -> str | None:
        if figures.get("samples") == 0 and "coefficient" in figures:
            figures = {**figures, "coefficient": 0.0}
        return super()._begin(run_id, worker, session, reservation, raw, set_key, figures)


def uncalibrated_coefficient_zero() -> FastAPI:
    return serve(workers_class=UncalibratedZeroWorkers)
