"""Mutants of request bounds and reads (PRO-02, PRO-03, BIL-05, RUN-01, EXE-17): one defect
each, the kinds that sampled mutants of reference/runtime/*.py showed the suite letting
through: a documented bound not enforced, a read or a refusal that is a 500 instead.

Each replaces the `Engine` or the `Runtime` seam with a subclass that gets one request wrong
and leaves every other as the reference answers it.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.engine import Engine
from arck.reference.errors import ValidationFailed
from arck.reference.mutants.base import serve
from arck.reference.runtime.executor_wire import ExecutorCall, Receipt
from arck.reference.runtime.receipts import _NEEDS, _OPTIONAL, _TAKES
from arck.reference.runtime.service import Runtime
from arck.reference.runtime.wire import MAX_AMOUNT, MAX_PRICE, Channel, Run, Session

__all__ = ["channelless_session_500", "detached_call_read_500", "empty_input_taken",
           "null_receipt_members_500", "price_bound_unchecked", "session_read_500",
           "subject_bound_unchecked"]


def _above_price_bound(value: Any) -> bool:
    return type(value) is int and MAX_PRICE < value <= MAX_AMOUNT


class PriceUncheckedEngine(Engine):
    """Holds prices to the deposit bound (10^15), not 10^12: one in between is taken, and
    stored as 10^12 (silently clamped)."""

    def publish_channel(self, principal: Principal, data: object) -> Channel:
        prices = data.get("prices") if isinstance(data, dict) else None
        if isinstance(data, dict) and isinstance(prices, dict):
            clamped = {k: MAX_PRICE if _above_price_bound(v) else v for k, v in prices.items()}
            data = {**data, "prices": clamped}
        return super().publish_channel(principal, data)


class SubjectUncheckedRuntime(Runtime):
    """Takes a session `subject` over 200 characters, cut to its first 200."""

    def create_session(self, principal: Principal, data: object) -> Session:
        subject = data.get("subject") if isinstance(data, dict) else None
        if isinstance(data, dict) and isinstance(subject, str) and len(subject) > 200:
            data = {**data, "subject": subject[:200]}
        return super().create_session(principal, data)


class EmptyInputRuntime(Runtime):
    """Takes a run whose input is empty (stored as one space) instead of refusing it."""

    def create_run(self, principal: Principal, session_id: str, data: object) -> Run:
        if isinstance(data, dict) and data.get("input") == "":
            data = {**data, "input": " "}
        return super().create_run(principal, session_id, data)


class SessionReadRuntime(Runtime):
    """`GET /v1/sessions/{id}` reads the subject from a column that does not exist: a 500."""

    def session_view(self, principal: Principal, session_id: str) -> Session:
        s = self.get_session(principal, session_id)
        subject = self.store.read("SELECT subject FROM sessions WHERE session_id = ?",
                                  (session_id,))
        return Session(session_id=s.session_id, agent_version=s.agent_version,
                       wallet_id=s.wallet_id, subject=subject[0][0] or f"session:{session_id}")


class ChannellessSessionRuntime(Runtime):
    """Works out a new session's first reservation before checking that its version names a
    channel: a version without `channel_id` is a 500, not a 422."""

    def create_session(self, principal: Principal, data: object) -> Session:
        if isinstance(data, dict) and isinstance(data.get("agent_version"), str):
            version = self.engine.get_version(principal, data["agent_version"],
                                              path="/agent_version")
            channel = self.store.channel(principal.tenant, version.channel_id or "")
            self.admission_reservation(channel)  # type: ignore[arg-type]
        return super().create_session(principal, data)


class DetachedCallReadRuntime(Runtime):
    """The executor's `GET /v1/executor/calls/{id}` reads the lease of the call's claim; a
    call whose claim was detached has none: a 500."""

    def executor_call(self, principal: Principal, call_id: str) -> ExecutorCall:
        view = super().executor_call(principal, call_id)
        rows = self.store.read("SELECT c.lease_until FROM tool_calls t LEFT JOIN claims c "
                               "ON c.id = t.claim_id WHERE t.id = ?", (call_id,))
        float(rows[0][0])  # None once detached: TypeError
        return view


def _members_present(receipt: Receipt) -> None:
    """receipts.members without its null check: a null error or sequence counts as given."""
    for name in _OPTIONAL:
        if name in receipt.model_fields_set and name not in _TAKES[receipt.kind]:
            raise ValidationFailed(f"/{name}: not a member of a {receipt.kind} receipt",
                                   f"/{name}")
    for name in _NEEDS.get(receipt.kind, ()):
        if name not in receipt.model_fields_set:
            raise ValidationFailed(f"/{name}: required in a {receipt.kind} receipt", f"/{name}")


class NullMembersRuntime(Runtime):
    """Takes `"error": null` in a failed receipt and `"sequence": null` in a progress one as
    given: the first reaches the history, the second the progress order, each as a 500."""

    receipt_members = staticmethod(_members_present)


def price_bound_unchecked() -> FastAPI:
    return serve(engine=PriceUncheckedEngine())


def subject_bound_unchecked() -> FastAPI:
    return serve(runtime_class=SubjectUncheckedRuntime)


def session_read_500() -> FastAPI:
    return serve(runtime_class=SessionReadRuntime)


def channelless_session_500() -> FastAPI:
    return serve(runtime_class=ChannellessSessionRuntime)


def detached_call_read_500() -> FastAPI:
    return serve(runtime_class=DetachedCallReadRuntime)


def null_receipt_members_500() -> FastAPI:
    return serve(runtime_class=NullMembersRuntime)


def empty_input_taken() -> FastAPI:
    return serve(runtime_class=EmptyInputRuntime)
