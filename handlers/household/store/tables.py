"""The household tables on the storage layer (SQLAlchemy Core; created by handlers/household/migrations/).

The seed's `transactions` and `duplicate_checks`, prefixed `household_` because they share one
database with every other service. Beyond the seed: `is_transfer` (振替, never spending) and
`external_id` (the export's ID column) on transactions, and two aggregates kept in step with every
write (`monthly_spending`, `active_months`) so that a trend over years reads a few hundred rows.

Portable on purpose: dates are ISO text (`YYYY-MM-DD`), amounts whole yen (BIGINT), timestamps UTC
text (`YYYY-MM-DD HH:MM:SS`, as SQLite's CURRENT_TIMESTAMP wrote them), so both engines store and
answer the very same values. Ids never come back after a delete (AUTOINCREMENT / IDENTITY), so a
duplicate decision cannot end up naming another row.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

transactions = Table(
    "household_transactions",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), Identity(), primary_key=True),
    Column("source_file", Text, nullable=False),
    Column("row_number", Integer, nullable=False),
    Column("date", String(10), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("description", Text),
    Column("category_major", Text),
    Column("category_minor", Text),
    Column("account", Text),
    Column("memo", Text),
    Column("is_target", Integer, nullable=False, default=1),
    Column("is_transfer", Integer, nullable=False, default=0),
    Column("external_id", Text),
    Column("is_duplicate", Integer, nullable=False, default=0),
    Column("duplicate_of", BigInteger, ForeignKey("household_transactions.id")),
    Column("duplicate_checked", Integer, nullable=False, default=0),
    Column("duplicate_checked_at", String(19)),
    Column("created_at", String(19), default=lambda: now()),
    Column("updated_at", String(19), default=lambda: now()),
    UniqueConstraint("source_file", "row_number", name="household_transactions_row"),
    sqlite_autoincrement=True,
)
Index("household_tx_date_amount", transactions.c.date, transactions.c.amount)
Index("household_tx_is_duplicate", transactions.c.is_duplicate)
Index("household_tx_duplicate_of", transactions.c.duplicate_of)

checks = Table(
    "household_duplicate_checks",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), Identity(), primary_key=True),
    Column("transaction_id_1", BigInteger, ForeignKey("household_transactions.id"), nullable=False),
    Column("transaction_id_2", BigInteger, ForeignKey("household_transactions.id"), nullable=False),
    Column("detection_date_tolerance", Integer),
    Column("detection_amount_tolerance_abs", Float),
    Column("detection_amount_tolerance_pct", Float),
    Column("similarity_score", Float),
    Column("detected_at", String(19), default=lambda: now()),
    Column("user_decision", String(20)),
    Column("decided_at", String(19)),
    UniqueConstraint("transaction_id_1", "transaction_id_2", name="household_checks_pair"),
    sqlite_autoincrement=True,
)
Index("household_checks_decision", checks.c.user_decision)
Index("household_checks_second", checks.c.transaction_id_2)

monthly_spending = Table(
    "household_monthly_spending",
    metadata,
    Column("month", String(7), primary_key=True),
    Column("category_major", Text, primary_key=True),
    Column("category_minor", Text, primary_key=True),
    Column("amount", BigInteger, nullable=False),
)

active_months = Table("household_active_months", metadata, Column("month", String(7), primary_key=True))


def now() -> str:
    """UTC now in SQLite's CURRENT_TIMESTAMP format, the one every stored timestamp has."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
