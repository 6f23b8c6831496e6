"""The wire of `POST /v1/openapi-imports` (CAP-15): a document in, the tool set and what became
of each operation out (docs/capabilities.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from arck.reference.models import ToolSet

__all__ = ["OpenApiImport", "OpenApiImportCreate", "OperationImported"]


class OpenApiImportCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1)  # the tool set's
    document: dict[str, Any]  # an OpenAPI 3.0 or 3.1 document, as JSON


class OperationImported(BaseModel):
    """One operation of the document and what became of it."""

    pointer: str  # the operation's JSON Pointer in the document
    method: str
    path: str
    operation_id: str | None
    status: Literal["imported", "undeclared", "disabled"]
    binding_id: str | None  # imported only
    tool: str | None  # the tool's name (the declaration's scope); imported only


class OpenApiImport(BaseModel):
    tool_set: ToolSet
    operations: list[OperationImported]
