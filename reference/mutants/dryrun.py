"""Mutants that preview the wrong receipt or misreport it (DRY-01, DRY-02, DRY-05, DRY-07)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from arck.reference.auth import Principal
from arck.reference.engine import Engine
from arck.reference.models import DryRunRequest, DryRunResponse, PublishedTool
from arck.reference.mutants.base import serve


class AnyKindEngine(Engine):
    """Treats every mock receipt as completed, so the first of any kind is previewed."""

    def dry_run(self, principal: Principal, request: DryRunRequest) -> DryRunResponse:
        receipts = [r.model_copy(update={"kind": "completed"}) for r in request.mock_receipts]
        return super().dry_run(principal, request.model_copy(update={"mock_receipts": receipts}))


class LastCompletedEngine(Engine):
    def dry_run(self, principal: Principal, request: DryRunRequest) -> DryRunResponse:
        receipts = request.mock_receipts[::-1]
        return super().dry_run(principal, request.model_copy(update={"mock_receipts": receipts}))


class VerifiedEngine(Engine):
    def dry_run(self, principal: Principal, request: DryRunRequest) -> DryRunResponse:
        response = super().dry_run(principal, request)
        # model_construct skips the Literal[False] the reference model insists on.
        return DryRunResponse.model_construct(
            context_preview=response.context_preview, execution_verified=True
        )


class UncheckedArgumentsEngine(Engine):
    def check_arguments(self, tool: PublishedTool, arguments: dict[str, Any]) -> None:
        return None


def preview_any_kind() -> FastAPI:
    return serve(AnyKindEngine())


def last_completed() -> FastAPI:
    return serve(LastCompletedEngine())


def execution_verified_true() -> FastAPI:
    return serve(VerifiedEngine())


def arguments_unchecked() -> FastAPI:
    return serve(UncheckedArgumentsEngine())
