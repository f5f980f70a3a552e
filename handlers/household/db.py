"""The SQLite store: the seed's `transactions` and `duplicate_checks` tables (stdlib sqlite3).

Two columns are added to the seed's `transactions`: `is_transfer` (振替) so that
transfers never count as spending, and `external_id` (the export's ID column).
Amounts are whole yen, stored as integers in the DECIMAL-affinity column.
Every aggregate reads through `ACTIVE` / `EXPENSE` so that a transaction marked
as a duplicate disappears everywhere at once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kumitate.context import commit_gate

SCHEMA = """
CREATE TABLE IF NOT EXISTS transactions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source_file TEXT NOT NULL,
    row_number INTEGER NOT NULL,
    date DATE NOT NULL,
    amount DECIMAL(12, 2) NOT NULL,
    description TEXT,
    category_major TEXT,
    category_minor TEXT,
    account TEXT,
    memo TEXT,
    is_target INTEGER DEFAULT 1,
    is_transfer INTEGER DEFAULT 0,
    external_id TEXT,
    is_duplicate INTEGER DEFAULT 0,
    duplicate_of INTEGER,
    duplicate_checked INTEGER DEFAULT 0,
    duplicate_checked_at TIMESTAMP,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    UNIQUE(source_file, row_number),
    FOREIGN KEY(duplicate_of) REFERENCES transactions(id)
);
CREATE INDEX IF NOT EXISTS idx_date_amount ON transactions(date, amount);
CREATE INDEX IF NOT EXISTS idx_is_duplicate ON transactions(is_duplicate);
CREATE INDEX IF NOT EXISTS idx_duplicate_of ON transactions(duplicate_of);
CREATE INDEX IF NOT EXISTS idx_date_range ON transactions(date);

CREATE TABLE IF NOT EXISTS duplicate_checks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    transaction_id_1 INTEGER NOT NULL,
    transaction_id_2 INTEGER NOT NULL,
    detection_date_tolerance INTEGER,
    detection_amount_tolerance_abs DECIMAL(12, 2),
    detection_amount_tolerance_pct DECIMAL(5, 2),
    similarity_score DECIMAL(5, 4),
    detected_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    user_decision TEXT,
    decided_at TIMESTAMP,
    FOREIGN KEY(transaction_id_1) REFERENCES transactions(id),
    FOREIGN KEY(transaction_id_2) REFERENCES transactions(id),
    UNIQUE(transaction_id_1, transaction_id_2)
);
CREATE INDEX IF NOT EXISTS idx_decision ON duplicate_checks(user_decision);

-- beyond the seed: aggregates kept in step with every write (import, confirm, restore), so a
-- trend over years reads a few hundred rows instead of every transaction
CREATE TABLE IF NOT EXISTS monthly_spending (
    month TEXT NOT NULL,
    category_major TEXT NOT NULL,
    category_minor TEXT NOT NULL,
    amount INTEGER NOT NULL,
    PRIMARY KEY (month, category_major, category_minor)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS active_months (month TEXT PRIMARY KEY) WITHOUT ROWID;
"""

#: rows that exist for every aggregate (not marked as a duplicate)
ACTIVE = "is_duplicate = 0"
#: spending: counted (計算対象=1), money out, not a transfer (振替=1), not a duplicate
EXPENSE = "is_duplicate = 0 AND is_target = 1 AND is_transfer = 0 AND amount < 0"
#: income: counted, money in, not a transfer, not a duplicate
INCOME = "is_duplicate = 0 AND is_target = 1 AND is_transfer = 0 AND amount > 0"


def refresh_aggregates(con: sqlite3.Connection, month: str | None = None) -> None:
    """Rebuild monthly_spending / active_months, for one month ('YYYY-MM') or all; call inside the write."""
    if month is None:
        where, params = "", []
        con.execute("DELETE FROM monthly_spending")
        con.execute("DELETE FROM active_months")
    else:
        year, mon = int(month[:4]), int(month[5:7])
        nxt = f"{year + mon // 12:04d}-{mon % 12 + 1:02d}-01"
        where, params = " AND date >= ? AND date < ?", [f"{month}-01", nxt]
        con.execute("DELETE FROM monthly_spending WHERE month = ?", (month,))
        con.execute("DELETE FROM active_months WHERE month = ?", (month,))
    con.execute(
        "INSERT INTO monthly_spending SELECT substr(date, 1, 7), category_major, category_minor, "
        f"-SUM(amount) FROM transactions WHERE {EXPENSE}{where} GROUP BY 1, 2, 3",
        params,
    )
    con.execute(
        f"INSERT INTO active_months SELECT DISTINCT substr(date, 1, 7) FROM transactions WHERE {ACTIVE}{where}", params
    )


class Database:
    """Opens short-lived connections; handlers run in worker threads, so none is shared."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self.connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(SCHEMA)
            if (
                con.execute("SELECT 1 FROM transactions LIMIT 1").fetchone()
                and not con.execute("SELECT 1 FROM active_months LIMIT 1").fetchone()
            ):
                refresh_aggregates(con)  # a database from before the aggregates existed

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        con.row_factory = sqlite3.Row
        con.execute("PRAGMA foreign_keys=ON")
        con.execute("PRAGMA synchronous=NORMAL")
        try:
            yield con
        finally:
            con.close()

    @contextmanager
    def transaction(self, foreign_keys: bool = True) -> Iterator[sqlite3.Connection]:
        """One atomic write: BEGIN IMMEDIATE … COMMIT, rolled back on any exception.

        `foreign_keys=False` skips the reference checks, for a write that only refers to rows it has
        itself read inside the same transaction (they cannot fail there).
        """
        with self.connect() as con:
            if not foreign_keys:
                con.execute("PRAGMA foreign_keys=OFF")  # only takes effect outside a transaction
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
                with commit_gate():
                    con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
