"""attendance rules: append-only versions per thread (was var/attendance/attendance.sqlite3)

Revision ID: 0002_attendance
Revises: 0001
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_attendance"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "attendance_rules",
        sa.Column("thread_id", sa.String(100), primary_key=True),
        sa.Column("version", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("rule_json", sa.Text, nullable=False, comment="the normalised AttendanceRule, canonical JSON"),
        sa.Column("saved_at", sa.String(40), nullable=False, comment="UTC instant, RFC 3339 with milliseconds"),
        comment="attendance: append-only rule versions per thread; the current rule is the highest version",
    )


def downgrade() -> None:
    op.drop_table("attendance_rules")
