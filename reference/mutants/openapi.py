"""Mutants of the OpenAPI import (CAP-01, 02, 03, 04, 15): hints read from the HTTP method,
operations imported that no declaration enabled, schemas built wrong, broken documents
taken."""

from __future__ import annotations

import dataclasses
from typing import Any

from fastapi import FastAPI

from arck.reference.capability import CapabilityDeclaration
from arck.reference.engine import Engine
from arck.reference.errors import ValidationFailed
from arck.reference.mutants.base import serve
from arck.reference.openapi import DECLARATION, ImportedOperation, Reader, read_operations


class _Engine(Engine):
    reader: type[Reader] = Reader

    def read_operations(self, document: dict[str, Any]) -> list[ImportedOperation]:
        return [self.altered(op) for op in read_operations(document, self.reader)]

    def altered(self, op: ImportedOperation) -> ImportedOperation:
        return op


def _with_hint(op: ImportedOperation, hint: str, value: bool) -> ImportedOperation:
    assert op.declaration is not None
    declared = op.declaration.model_dump(exclude_unset=True)
    declared.setdefault("execution", {})[hint] = value
    return dataclasses.replace(op, declaration=CapabilityDeclaration.model_validate(declared))


def _declared(op: ImportedOperation, hint: str) -> bool | None:
    execution = op.declaration.execution if op.declaration is not None else None
    return getattr(execution, hint, None) if execution is not None else None


class GetReadonlyEngine(_Engine):
    """A GET declared without `readonly` is imported read-only."""

    def altered(self, op: ImportedOperation) -> ImportedOperation:
        if op.status == "imported" and op.method == "get" and _declared(op, "readonly") is None:
            return _with_hint(op, "readonly", True)
        return op


class WritingMethodsNotReadonlyEngine(_Engine):
    """A POST, PUT, PATCH or DELETE declared `readonly: true` is imported as writing."""

    def altered(self, op: ImportedOperation) -> ImportedOperation:
        if op.status == "imported" and op.method in ("post", "put", "patch", "delete") \
                and _declared(op, "readonly") is True:
            return _with_hint(op, "readonly", False)
        return op


class IdempotentMethodsEngine(_Engine):
    """A PUT or DELETE is imported idempotent (as HTTP calls those methods) unless declared
    otherwise."""

    def altered(self, op: ImportedOperation) -> ImportedOperation:
        if op.status == "imported" and op.method in ("put", "delete") \
                and _declared(op, "idempotent") is None:
            return _with_hint(op, "idempotent", True)
        return op


class _UndeclaredReader(Reader):
    def operation(self, path: str, method: str, item: dict[str, Any],
                  item_at: str) -> ImportedOperation:
        op = item[method]
        if isinstance(op, dict) and DECLARATION not in op:
            self.made = getattr(self, "made", 0) + 1
            made = {"version": 1, "enabled": True, "scope": f"undeclared.{self.made}"}
            item = {**item, method: {**op, DECLARATION: made}}
        return super().operation(path, method, item, item_at)


class _DisabledReader(Reader):
    def operation(self, path: str, method: str, item: dict[str, Any],
                  item_at: str) -> ImportedOperation:
        op = item[method]
        declared = op.get(DECLARATION) if isinstance(op, dict) else None
        if isinstance(declared, dict) and declared.get("enabled") is not True:
            item = {**item, method: {**op, DECLARATION: {**declared, "enabled": True}}}
        return super().operation(path, method, item, item_at)


class _RefsKeptReader(Reader):
    def inline(self, value: Any, at: str, stack: tuple[str, ...]) -> Any:
        if isinstance(value, dict) and "$ref" in value:
            return dict(value)
        return super().inline(value, at, stack)


class _OwnParametersOnlyReader(Reader):
    def parameters(self, item: dict[str, Any], item_at: str, operation: dict[str, Any],
                   at: str) -> list[tuple[dict[str, Any], str]]:
        return super().parameters({}, item_at, operation, at)


class _PathItemWinsReader(Reader):
    def parameters(self, item: dict[str, Any], item_at: str, operation: dict[str, Any],
                   at: str) -> list[tuple[dict[str, Any], str]]:
        return super().parameters(operation, at, item, item_at)


class _BodyOptionalReader(Reader):
    def input_schema(self, item: dict[str, Any], item_at: str, operation: dict[str, Any],
                     at: str) -> dict[str, Any]:
        schema = super().input_schema(item, item_at, operation, at)
        required = [name for name in schema.get("required", []) if name != "body"]
        schema.pop("required", None)
        return {**schema, "required": required} if required else schema


class _BrokenDeclarationSkippedReader(Reader):
    def operation(self, path: str, method: str, item: dict[str, Any],
                  item_at: str) -> ImportedOperation:
        try:
            return super().operation(path, method, item, item_at)
        except ValidationFailed as refused:
            if DECLARATION not in refused.path:
                raise
            return ImportedOperation(f"{item_at}/{method}", method, path, None, "undeclared",
                                     None, f"{method.upper()} {path}", None, None)


class _NowhereIsAnythingReader(Reader):
    def lookup(self, ref: object, at: str) -> tuple[Any, str]:
        try:
            return super().lookup(ref, at)
        except ValidationFailed:
            return {}, at


class _LoopIsAnythingReader(Reader):
    def inline(self, value: Any, at: str, stack: tuple[str, ...]) -> Any:
        if isinstance(value, dict) and isinstance(value.get("$ref"), str):
            _, target_at = self.lookup(value["$ref"], at + "/$ref")
            if target_at in stack:
                return {}
        return super().inline(value, at, stack)


def _reading(reader: type[Reader]) -> FastAPI:
    return serve(type(f"{reader.__name__}Engine", (_Engine,), {"reader": reader})())


def get_readonly() -> FastAPI:
    return serve(GetReadonlyEngine())


def writing_methods_not_readonly() -> FastAPI:
    return serve(WritingMethodsNotReadonlyEngine())


def idempotent_methods() -> FastAPI:
    return serve(IdempotentMethodsEngine())


def undeclared_imported() -> FastAPI:
    return _reading(_UndeclaredReader)


def disabled_imported() -> FastAPI:
    return _reading(_DisabledReader)


def refs_kept() -> FastAPI:
    return _reading(_RefsKeptReader)


def own_parameters_only() -> FastAPI:
    return _reading(_OwnParametersOnlyReader)


def path_item_wins() -> FastAPI:
    return _reading(_PathItemWinsReader)


def body_optional() -> FastAPI:
    return _reading(_BodyOptionalReader)


def broken_declaration_skipped() -> FastAPI:
    return _reading(_BrokenDeclarationSkippedReader)


def nowhere_is_anything() -> FastAPI:
    return _reading(_NowhereIsAnythingReader)


def loop_is_anything() -> FastAPI:
    return _reading(_LoopIsAnythingReader)
