"""tasks: long-running tool calls started as tasks, readable from every instance

Revision ID: 0006_tasks
Revises: 0001 (0005_yana before the services owned their migrations)
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_tasks"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("tool", sa.String(200), nullable=False, comment="service.tool"),
        sa.Column(
            "principal", sa.String(255), nullable=False, comment="who started it: the only caller who may read it"
        ),
        sa.Column("status", sa.String(16), nullable=False, comment="working, completed, failed or cancelled"),
        sa.Column(
            "progress", sa.Text, nullable=True, comment="JSON {done, total, message}: the latest progress report"
        ),
        sa.Column(
            "result",
            sa.Text,
            nullable=True,
            comment="JSON body of the outcome (bounded): the result or the error envelope",
        ),
        sa.Column("http_status", sa.Integer, nullable=True),
        sa.Column("run_id", sa.String(100), nullable=False),
        sa.Column("trace_id", sa.String(100), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.Column(
            "lease_until",
            sa.Float,
            nullable=False,
            comment="renewed while its instance runs it; past it, the task is lost",
        ),
        sa.Column("expires_at", sa.Float, nullable=False, comment="when the finished task is forgotten"),
        comment="long-running tool calls started as tasks (kumitate.tasks)",
    )
    op.create_index("tasks_expiry", "tasks", ["expires_at"])


def downgrade() -> None:
    op.drop_index("tasks_expiry", table_name="tasks")
    op.drop_table("tasks")
