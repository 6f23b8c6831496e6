"""Mutants of the subject rule (CAP-10, CAP-12): a call dispatched without a trusted subject,
or the check skipped for an operation that only reads or is of low risk."""

from __future__ import annotations

from fastapi import FastAPI

from arck.reference.capability import ExecutionPolicy
from arck.reference.mutants.base import serve
from arck.reference.runtime import subjects
from arck.reference.runtime.runstore import SessionRow
from arck.reference.runtime.worker import Workers


class _Unchecked(Workers):
    """`subject.required` is never enforced."""

    def refuses_subject(self, policy: ExecutionPolicy, session: SessionRow) -> bool:
        return False


class _ReadonlySkips(Workers):
    """An operation declared read-only skips the subject check."""

    def refuses_subject(self, policy: ExecutionPolicy, session: SessionRow) -> bool:
        return not policy.readonly and subjects.refused(policy, session)


class _LowRiskSkips(Workers):
    """An operation of `risk.level: low` skips the subject check."""

    def refuses_subject(self, policy: ExecutionPolicy, session: SessionRow) -> bool:
        return policy.risk_level != "low" and subjects.refused(policy, session)


def unchecked() -> FastAPI:
    return serve(workers_class=_Unchecked)


def readonly_skips() -> FastAPI:
    return serve(workers_class=_ReadonlySkips)


def low_risk_skips() -> FastAPI:
    return serve(workers_class=_LowRiskSkips)
