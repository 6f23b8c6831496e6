"""The reference engine's API errors: one class per profile error code (PRO-02, PRO-03).

Every error names the field or path at fault: a JSON Pointer into the request body, the name of
the header or path parameter, or `""` when the body as a whole is at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

__all__ = [
    "ApiError",
    "BodyTooLarge",
    "CapabilityDisabled",
    "Conflict",
    "ExecutorOffline",
    "Forbidden",
    "InternalError",
    "InvalidJSON",
    "MethodNotAllowed",
    "NotFound",
    "PolicyLoosens",
    "RemovedField",
    "StorageUnavailable",
    "Unauthorized",
    "UnknownBinding",
    "ValidationFailed",
]


class ApiError(Exception):
    """An error answer: `status`, machine-readable `code`, `message` and `path`."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"

    def __init__(
        self, message: str, path: str = "", *, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.message = _printable(message)
        self.path = _printable(path)
        self.headers: dict[str, str] = dict(headers or {})

    def body(self) -> dict[str, dict[str, str]]:
        """The PRO-03 error body."""
        return {"error": {"code": self.code, "message": self.message, "path": self.path}}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(message={self.message!r}, path={self.path!r})"


def _printable(text: str) -> str:
    """Escape lone surrogates (from a refused key, say) so the error body encodes as UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class InternalError(ApiError):
    """Never raised on purpose: the shape of the catch-all 500 answer."""


class StorageUnavailable(ApiError):
    """The storage refused (a full disk, a read-only file, another process's lock): the
    operator's condition, retryable; nothing of the request was stored (storagefaults.py)."""

    status = 503
    code = "storage_unavailable"


class InvalidJSON(ApiError):
    status = 400
    code = "invalid_json"


class Unauthorized(ApiError):
    status = 401
    code = "unauthorized"

    def __init__(self, message: str, path: str = "Authorization") -> None:
        super().__init__(message, path, headers={"WWW-Authenticate": "Bearer"})


class Forbidden(ApiError):
    status = 403
    code = "forbidden"


class NotFound(ApiError):
    status = 404
    code = "not_found"


class MethodNotAllowed(ApiError):
    status = 405
    code = "method_not_allowed"


class Conflict(ApiError):
    status = 409
    code = "conflict"


class ExecutorOffline(Conflict):
    """EXE-02: a claim by an executor with no heartbeat in the last 60 s."""

    code = "executor_offline"


class BodyTooLarge(ApiError):
    status = 413
    code = "body_too_large"


class ValidationFailed(ApiError):
    status = 422
    code = "validation_failed"


class RemovedField(ApiError):
    """DEF-03: a removed setting (`max_result_tokens`, `max_result_bytes`); there is no alias."""

    status = 422
    code = "removed_field"


class CapabilityDisabled(ApiError):
    """CAP-02: a tool bound to an operation its declaration does not enable."""

    status = 422
    code = "capability_disabled"


class PolicyLoosens(ApiError):
    """CAP-09: a local policy that would loosen a declared bound."""

    status = 422
    code = "policy_loosens"


class UnknownBinding(ApiError):
    """DEF-06: a `binding_id` that names no binding of the caller's tenant."""

    status = 422
    code = "unknown_binding"
