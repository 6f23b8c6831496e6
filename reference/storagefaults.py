"""Storage faults: the operator's conditions (a full disk, a file made read-only, another
process holding the database's lock, a damaged file), never a bug in the engine.

SQLite names them by result code. A request that meets one is answered 503
`storage_unavailable` with `Retry-After` (nothing of it was stored: its transaction rolled back
whole), the real cause is logged, and the workers back off and go on by themselves once the
fault clears (docs/profile.md, Storage faults). Any other SQLite error is a bug (500).
"""

from __future__ import annotations

import sqlite3

from arck.reference.errors import StorageUnavailable

__all__ = ["BUSY_TIMEOUT_S", "RETRY_AFTER_S", "is_storage_fault", "unavailable"]

# How long a statement waits for another connection's lock before SQLITE_BUSY: short, as the
# store is used on the event loop's thread (a longer wait would stall every request).
BUSY_TIMEOUT_S = 0.2
RETRY_AFTER_S = 1  # what a 503 tells the client to wait

# Primary result codes (https://sqlite.org/rescode.html) that the environment causes.
_FAULTS = {
    3: "SQLITE_PERM",
    5: "SQLITE_BUSY",
    6: "SQLITE_LOCKED",
    7: "SQLITE_NOMEM",
    8: "SQLITE_READONLY",
    10: "SQLITE_IOERR",
    11: "SQLITE_CORRUPT",
    13: "SQLITE_FULL",
    14: "SQLITE_CANTOPEN",
    15: "SQLITE_PROTOCOL",
    26: "SQLITE_NOTADB",
}


def is_storage_fault(exc: BaseException) -> bool:
    """Whether `exc` is SQLite reporting one of the environment's conditions."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.Error) and isinstance(code, int) and (code & 0xFF) in _FAULTS


def unavailable(exc: BaseException) -> StorageUnavailable:
    """The 503 answer for a storage fault, naming SQLite's condition."""
    code = getattr(exc, "sqlite_errorcode", 0) or 0
    name = getattr(exc, "sqlite_errorname", None) or _FAULTS.get(code & 0xFF, "SQLITE_ERROR")
    return StorageUnavailable(
        f"the engine's storage is unavailable ({name}: {exc}); nothing of this request was "
        f"stored: send it again after {RETRY_AFTER_S} s",
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )
