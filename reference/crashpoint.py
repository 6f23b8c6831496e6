"""A deliberate crash inside a write transaction, for crash tests of `arck serve --db FILE`.

A SIGKILL that lands while a transaction is being written leaves the database file partly
rewritten and a *hot* rollback journal beside it, which the next process to open the file
must roll back. Killing a server from outside at random moments rarely lands there (the
engine's transactions are short), so `arm` makes it certain: the `at`-th write transaction
of this process kills the process just before its COMMIT, after its changes were written.

To have them written, the connection's page cache is cut to one page: a transaction that
changes more than one page then spills its changed pages into the database file (the rollback
journal written and synced first) before it commits, as a commit cut off halfway would leave
them. Tests only (`arck serve --crash-at-commit N`); nothing else arms it.
"""

from __future__ import annotations

import os
import signal

from arck.reference.store import Store

__all__ = ["arm"]


def arm(store: Store, at: int) -> None:
    """Kill this process with SIGKILL inside its `at`-th write transaction (1 = the first)."""
    if at < 1:
        raise ValueError(f"at must be >= 1, not {at}")
    store.read("PRAGMA cache_size = 1")
    seen = 0

    def before_commit() -> None:
        nonlocal seen
        seen += 1
        if seen >= at:
            os.kill(os.getpid(), signal.SIGKILL)

    store.before_commit = before_commit
