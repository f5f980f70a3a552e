"""idempotency keys: one row per (tool, principal, key); a claim while the first call runs

The root of the runtime's own branch (label `kumitate`): idempotency, then tasks. The services' tables
are migrated by their own branches (handlers/<service>/migrations/).

Revision ID: 0001
Revises:
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = ("kumitate",)
depends_on = None


def upgrade() -> None:
    op.create_table(
        "idempotency",
        sa.Column("tool", sa.String(200), primary_key=True),
        sa.Column("principal", sa.String(255), primary_key=True),
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("status", sa.Integer, nullable=True, comment="NULL while the first call runs (a claim)"),
        sa.Column("body", sa.Text, nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False, comment="claim lease while running, then the key's TTL"),
    )
    op.create_index("idempotency_expiry", "idempotency", ["expires_at"])


def downgrade() -> None:
    op.drop_index("idempotency_expiry", table_name="idempotency")
    op.drop_table("idempotency")
