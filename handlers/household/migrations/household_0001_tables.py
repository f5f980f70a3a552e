"""household: transactions, duplicate checks and the two aggregates (moved from var/household/household.db)

Revision ID: household_0001
Revises:
Create Date: 2026-11-24 (as 0004_household of the runtime; its own branch since 2026-12-07)

The table definitions the household store queries are handlers/household/store/tables.py; this script is
self-contained (a migration must keep creating what it created when the store's tables change) and
tests/household/test_store_schema.py checks that the two agree.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "household_0001"
down_revision = None
branch_labels = ("household",)
depends_on = None
replaces = "0004_household"
"""The revision of the runtime's one chain that created these tables before the services owned their
migrations: a database found at it is read as at the runtime's `0001` (kumitate.storage.migrate)."""

ID = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def _adopted(table: str) -> bool:
    """The table exists already: a release before the services owned their migrations created it (its
    revision 0004_household); it is adopted as it is, every row kept."""
    return sa.inspect(op.get_bind()).has_table(table)


def upgrade() -> None:
    if _adopted("household_transactions"):
        return
    op.create_table(
        "household_transactions",
        sa.Column("id", ID, sa.Identity(), primary_key=True),
        sa.Column("source_file", sa.Text, nullable=False),
        sa.Column("row_number", sa.Integer, nullable=False),
        sa.Column("date", sa.String(10), nullable=False),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("category_major", sa.Text),
        sa.Column("category_minor", sa.Text),
        sa.Column("account", sa.Text),
        sa.Column("memo", sa.Text),
        sa.Column("is_target", sa.Integer, nullable=False),
        sa.Column("is_transfer", sa.Integer, nullable=False),
        sa.Column("external_id", sa.Text),
        sa.Column("is_duplicate", sa.Integer, nullable=False),
        sa.Column("duplicate_of", sa.BigInteger, sa.ForeignKey("household_transactions.id")),
        sa.Column("duplicate_checked", sa.Integer, nullable=False),
        sa.Column("duplicate_checked_at", sa.String(19)),
        sa.Column("created_at", sa.String(19)),
        sa.Column("updated_at", sa.String(19)),
        sa.UniqueConstraint("source_file", "row_number", name="household_transactions_row"),
        sqlite_autoincrement=True,
    )
    op.create_index("household_tx_date_amount", "household_transactions", ["date", "amount"])
    op.create_index("household_tx_is_duplicate", "household_transactions", ["is_duplicate"])
    op.create_index("household_tx_duplicate_of", "household_transactions", ["duplicate_of"])
    op.create_table(
        "household_duplicate_checks",
        sa.Column("id", ID, sa.Identity(), primary_key=True),
        sa.Column("transaction_id_1", sa.BigInteger, sa.ForeignKey("household_transactions.id"), nullable=False),
        sa.Column("transaction_id_2", sa.BigInteger, sa.ForeignKey("household_transactions.id"), nullable=False),
        sa.Column("detection_date_tolerance", sa.Integer),
        sa.Column("detection_amount_tolerance_abs", sa.Float),
        sa.Column("detection_amount_tolerance_pct", sa.Float),
        sa.Column("similarity_score", sa.Float),
        sa.Column("detected_at", sa.String(19)),
        sa.Column("user_decision", sa.String(20)),
        sa.Column("decided_at", sa.String(19)),
        sa.UniqueConstraint("transaction_id_1", "transaction_id_2", name="household_checks_pair"),
        sqlite_autoincrement=True,
    )
    op.create_index("household_checks_decision", "household_duplicate_checks", ["user_decision"])
    op.create_index("household_checks_second", "household_duplicate_checks", ["transaction_id_2"])
    op.create_table(
        "household_monthly_spending",
        sa.Column("month", sa.String(7), primary_key=True),
        sa.Column("category_major", sa.Text, primary_key=True),
        sa.Column("category_minor", sa.Text, primary_key=True),
        sa.Column("amount", sa.BigInteger, nullable=False),
    )
    op.create_table("household_active_months", sa.Column("month", sa.String(7), primary_key=True))


def downgrade() -> None:
    op.drop_table("household_active_months")
    op.drop_table("household_monthly_spending")
    op.drop_index("household_checks_second", table_name="household_duplicate_checks")
    op.drop_index("household_checks_decision", table_name="household_duplicate_checks")
    op.drop_table("household_duplicate_checks")
    op.drop_index("household_tx_duplicate_of", table_name="household_transactions")
    op.drop_index("household_tx_is_duplicate", table_name="household_transactions")
    op.drop_index("household_tx_date_amount", table_name="household_transactions")
    op.drop_table("household_transactions")
