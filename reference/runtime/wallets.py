"""Wallet rows and their money moves, as conditional updates (BIL-01..04).

Each move is one UPDATE whose WHERE clause states the invariant it needs (enough available,
enough reserved), so two workers or two processes racing on one wallet cannot overdraw it: the
loser's update matches no row. Callers run them inside the store's transaction with the run's
own changes. `balance` = deposits − charges; `reserved` includes cost-pending reservations.
"""

from __future__ import annotations

import sqlite3

from arck.reference.runtime.wire import Wallet
from arck.reference.store import Store

__all__ = ["SCHEMA", "Wallets"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS wallets (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, tenant TEXT NOT NULL, name TEXT NOT NULL,
    balance INTEGER NOT NULL CHECK (balance >= 0),
    reserved INTEGER NOT NULL CHECK (reserved >= 0 AND reserved <= balance),
    charged INTEGER NOT NULL CHECK (charged >= 0));
"""
MAX_BALANCE = 2**62


class Wallets:
    def __init__(self, store: Store) -> None:
        self.store = store
        store.install(SCHEMA)

    def create(self, tenant: str, name: str) -> Wallet:
        with self.store.transaction() as db:
            new_id = Store.insert(
                db, "wallets", "wal", ("tenant", "name", "balance", "reserved", "charged"),
                (tenant, name, 0, 0, 0),
            )
        return Wallet(wallet_id=new_id, name=name, balance=0, reserved=0, available=0, charged=0)

    def get(self, tenant: str, wallet_id: str) -> Wallet | None:
        rows = self.store.read(
            "SELECT name, balance, reserved, charged FROM wallets WHERE id = ? AND tenant = ?",
            (wallet_id, tenant),
        )
        if not rows:
            return None
        name, balance, reserved, charged = rows[0]
        return Wallet(
            wallet_id=wallet_id, name=name, balance=balance, reserved=reserved,
            available=balance - reserved, charged=charged,
        )

    def deposit(self, tenant: str, wallet_id: str, amount: int) -> bool:
        """False when the balance would pass 2**62 (the caller answers 422)."""
        with self.store.transaction() as db:
            done = db.execute(
                "UPDATE wallets SET balance = balance + ? WHERE id = ? AND tenant = ? "
                "AND balance + ? <= ?",
                (amount, wallet_id, tenant, amount, MAX_BALANCE),
            )
            return done.rowcount == 1

    @staticmethod
    def available(db: sqlite3.Connection, wallet_id: str) -> int:
        row = db.execute(
            "SELECT balance - reserved FROM wallets WHERE id = ?", (wallet_id,)
        ).fetchone()
        return int(row[0])

    @staticmethod
    def reserve(db: sqlite3.Connection, wallet_id: str, amount: int) -> bool:
        """BIL-01/02: hold `amount`, only if the available balance covers it."""
        done = db.execute(
            "UPDATE wallets SET reserved = reserved + ? WHERE id = ? AND balance - reserved >= ?",
            (amount, wallet_id, amount),
        )
        return done.rowcount == 1

    @staticmethod
    def release(db: sqlite3.Connection, wallet_id: str, amount: int) -> None:
        """Give back a reservation whose call was never processed (no charge)."""
        db.execute(
            "UPDATE wallets SET reserved = reserved - ? WHERE id = ? AND reserved >= ?",
            (amount, wallet_id, amount),
        )

    @staticmethod
    def settle(db: sqlite3.Connection, wallet_id: str, reservation: int, charge: int) -> int:
        """BIL-04: charge reported usage, release the rest; returns what was collected.

        A charge above the reservation (usage beyond the channel's capacity) is collected only
        as far as the balance not held for other calls covers it; the balance never goes below
        zero and the shortfall is reported by the caller.
        """
        row = db.execute(
            "SELECT balance, reserved FROM wallets WHERE id = ?", (wallet_id,)
        ).fetchone()
        balance, reserved = int(row[0]), int(row[1])
        collected = min(charge, balance - (reserved - reservation))
        done = db.execute(
            "UPDATE wallets SET balance = balance - ?, reserved = reserved - ?, "
            "charged = charged + ? WHERE id = ? AND reserved >= ? AND balance - ? >= reserved - ?",
            (collected, reservation, collected, wallet_id, reservation, collected, reservation),
        )
        if done.rowcount != 1:
            raise RuntimeError(f"wallet {wallet_id}: settlement lost its reservation")
        return collected
