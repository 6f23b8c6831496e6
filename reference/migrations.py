"""Store revisions, and the one migration so far: token budgets to byte budgets (DEF-07).

A store records the revisions it was brought to in `store_revisions`. Revision 0 is a store
written before byte budgets existed (no record at all): its published tools carry a
token-based budget, `max_result_tokens`, and perhaps the old receipt-rejection limit
`max_result_bytes`, and no `max_result_context_bytes`. Revision 1 is today's layout.

`migrate` runs when an app starts on a store (`create_app`): once per store, in one
transaction with its record, each tool still in the old layout is rewritten to the 16,384-byte
default — not converted from its tokens (a token is no fixed number of bytes) — and its removed
settings dropped. Nothing else is touched: execution and formal histories, receipts and the
budgets recorded on tool calls already planned stay as they were committed (docs/profile.md,
"Stored configuration and its migration").

`downgrade` writes the old layout back into a store (named tool sets, or all), so that the next
start meets what an upgrade from revision 0 meets: the in-process target's `legacy_restart`
step and `python -m arck.reference.migrations downgrade --db FILE --tokens N` for a file that
`arck serve --db FILE` then starts on.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections.abc import Callable, Sequence
from typing import Any

from arck.reference.models import DEFAULT_BUDGET
from arck.reference.store import _TRIGGER, Store

__all__ = ["LEGACY_KEYS", "NAME", "REVISION", "TOKEN_BUDGET", "downgrade", "main", "migrate",
           "migrated_tool", "revision", "rewrite_tool_sets"]

REVISION = 1
NAME = "byte-budgets"
TOKEN_BUDGET = "max_result_tokens"  # the token-based budget of revision 0
LEGACY_KEYS = (TOKEN_BUDGET, "max_result_bytes")  # settings revision 1 removed (DEF-03)
BUDGET = "max_result_context_bytes"
SCHEMA = """
CREATE TABLE IF NOT EXISTS store_revisions (
    revision INTEGER PRIMARY KEY, name TEXT NOT NULL, tool_sets INTEGER NOT NULL);
"""
Rule = Callable[[dict[str, Any]], "dict[str, Any] | None"]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def revision(store: Store) -> int:
    """The highest revision the store was brought to; 0 when it records none."""
    store.install(SCHEMA)
    rows = store.read("SELECT COALESCE(MAX(revision), 0) FROM store_revisions")
    return int(rows[0][0])


def migrated_tool(tool: dict[str, Any]) -> dict[str, Any] | None:
    """The tool as revision 1 stores it, or None when it is in that layout already.

    A tool of revision 0 carries a token budget (or the receipt-rejection limit, or no budget
    at all: the old default, in tokens); it gets the byte default, never its tokens × 4.
    """
    if BUDGET in tool and not any(key in tool for key in LEGACY_KEYS):
        return None
    kept = {k: v for k, v in tool.items() if k not in LEGACY_KEYS}
    kept[BUDGET] = DEFAULT_BUDGET
    return kept


def rewrite_tool_sets(db: sqlite3.Connection, rule: Rule, ids: Sequence[str] | None = None
                      ) -> list[str]:
    """Apply `rule` to each tool (None: unchanged) of the named tool sets, or of all, inside
    the caller's transaction: the ids of the tool sets changed.

    Published tool sets are immutable (DEF-04): their UPDATE trigger is dropped for this one
    write and made again, as the store makes it, before the transaction commits.
    """
    rows = db.execute("SELECT id, tools FROM tool_sets ORDER BY seq").fetchall()
    if ids is not None:
        unknown = sorted(set(ids) - {row[0] for row in rows})
        if unknown:
            raise ValueError(f"no tool set {', '.join(unknown)} in the store")
        rows = [row for row in rows if row[0] in set(ids)]
    changed: list[tuple[str, str]] = []
    for tool_set_id, text in rows:
        tools = json.loads(text)
        rewritten = [rule(tool) for tool in tools]
        if any(r is not None for r in rewritten):
            new = [t if r is None else r for t, r in zip(tools, rewritten, strict=True)]
            changed.append((tool_set_id, _dumps(new)))
    if changed:
        db.execute("DROP TRIGGER IF EXISTS tool_sets_no_UPDATE")
        for tool_set_id, text in changed:
            db.execute("UPDATE tool_sets SET tools = ? WHERE id = ?", (text, tool_set_id))
        db.execute(_TRIGGER.format(table="tool_sets", op="UPDATE").strip())
    return [tool_set_id for tool_set_id, _ in changed]


def migrate(store: Store) -> list[str] | None:
    """Bring the store to revision 1 once: the tool sets migrated (possibly none), or None
    when its record says it was done before (a second start changes nothing)."""
    store.install(SCHEMA)
    with store.transaction() as db:
        if db.execute("SELECT 1 FROM store_revisions WHERE revision = ?",
                      (REVISION,)).fetchone() is not None:
            return None
        migrated = rewrite_tool_sets(db, migrated_tool)
        db.execute("INSERT INTO store_revisions (revision, name, tool_sets) VALUES (?, ?, ?)",
                   (REVISION, NAME, len(migrated)))
    return migrated


def _legacy(tokens: int) -> Rule:
    def rule(tool: dict[str, Any]) -> dict[str, Any]:
        old = {k: v for k, v in tool.items() if k not in (BUDGET, *LEGACY_KEYS)}
        return {**old, TOKEN_BUDGET: tokens}

    return rule


def downgrade(store: Store, tool_set_ids: Sequence[str] | None, tokens: int) -> list[str]:
    """Write the named tool sets (None: all) as revision 0 stored them, each tool with the
    token budget `tokens` in place of its byte budget, and forget the store's revision record:
    the next start migrates (a test fixture; never on a store a running engine holds)."""
    if type(tokens) is not int or tokens < 1:
        raise ValueError(f"tokens must be a positive integer, not {tokens!r}")
    store.install(SCHEMA)
    with store.transaction() as db:
        changed = rewrite_tool_sets(db, _legacy(tokens), tool_set_ids)
        db.execute("DELETE FROM store_revisions")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m arck.reference.migrations downgrade|revision --db FILE ...`."""
    parser = argparse.ArgumentParser(
        prog="python -m arck.reference.migrations",
        description="Store revisions of the reference engine (docs/profile.md, DEF-07).")
    commands = parser.add_subparsers(dest="command", required=True)
    down = commands.add_parser(
        "downgrade", help="write tool sets back in the layout of revision 0 (token budgets); "
                          "the next `arck serve --db FILE` migrates them. Stop the server first.")
    down.add_argument("--db", required=True, help="the SQLite file of `arck serve --db`")
    down.add_argument("--tokens", type=int, required=True,
                      help="the token budget (max_result_tokens) each tool gets")
    down.add_argument("tool_set_ids", nargs="*", metavar="TOOL_SET_ID",
                      help="the tool sets to write back (default: every one)")
    shown = commands.add_parser("revision", help="print the store's revision (0: not migrated)")
    shown.add_argument("--db", required=True, help="the SQLite file of `arck serve --db`")
    args = parser.parse_args(argv)
    try:
        db = sqlite3.connect(f"file:{args.db}?mode=rw", uri=True)
        db.close()
    except sqlite3.Error as exc:
        print(f"--db {args.db}: not a usable SQLite database ({exc})", file=sys.stderr)
        return 2
    store = Store(args.db)
    try:
        if args.command == "revision":
            print(revision(store))
            return 0
        try:
            changed = downgrade(store, args.tool_set_ids or None, args.tokens)
        except ValueError as exc:
            print(f"downgrade: {exc}", file=sys.stderr)
            return 2
        print(f"{len(changed)} tool set(s) written back with max_result_tokens = "
              f"{args.tokens}: {', '.join(changed) or '-'}; the store is at revision 0")
        return 0
    finally:
        store.close()


if __name__ == "__main__":
    raise SystemExit(main())
