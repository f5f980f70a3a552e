"""analytics: the export handle registry and the materialized-view registry, shared by every instance

Revision ID: analytics_0001
Revises:
Create Date: 2026-11-24 (as 0003_analytics of the runtime; its own branch since 2026-12-07)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "analytics_0001"
down_revision = None
branch_labels = ("analytics",)
depends_on = None
replaces = "0003_analytics"
"""The revision of the runtime's one chain that created these tables before the services owned their
migrations: a database found at it is read as at the runtime's `0001` (kumitate.storage.migrate)."""


def _adopted(table: str) -> bool:
    """The table exists already: a release before the services owned their migrations created it (its
    revision 0003_analytics); it is adopted as it is, every row kept."""
    return sa.inspect(op.get_bind()).has_table(table)


def upgrade() -> None:
    if _adopted("analytics_exports"):
        return
    op.create_table(
        "analytics_exports",
        sa.Column("handle", sa.String(32), primary_key=True),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column(
            "state", sa.String(10), nullable=False, comment="writing (a byte reservation) or ready (the handle exists)"
        ),
        sa.Column("format", sa.String(16), nullable=False),
        sa.Column("mime_type", sa.String(100), nullable=False),
        sa.Column("rows", sa.BigInteger, nullable=False),
        sa.Column(
            "size_bytes", sa.BigInteger, nullable=False, comment="reserved bytes while writing, then the file's size"
        ),
        sa.Column("columns", sa.Text, nullable=False, comment="JSON list of column names"),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False, comment="reservation lease while writing, then the TTL"),
    )
    op.create_index("analytics_exports_owner", "analytics_exports", ["owner", "expires_at"])
    op.create_index("analytics_exports_expiry", "analytics_exports", ["expires_at"])
    op.create_table(
        "analytics_views",
        sa.Column("view", sa.String(64), primary_key=True),
        sa.Column("file", sa.String(255), nullable=False, comment="Parquet file name under <export dir>/views"),
        sa.Column("rows", sa.BigInteger, nullable=False),
        sa.Column("columns", sa.Text, nullable=False, comment="JSON list of column names"),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("analytics_views")
    op.drop_index("analytics_exports_expiry", table_name="analytics_exports")
    op.drop_index("analytics_exports_owner", table_name="analytics_exports")
    op.drop_table("analytics_exports")
