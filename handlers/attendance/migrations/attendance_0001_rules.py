"""attendance rules: append-only versions per thread (was var/attendance/attendance.sqlite3)

Revision ID: attendance_0001
Revises:
Create Date: 2026-11-24 (as 0002_attendance of the runtime; its own branch since 2026-12-07)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "attendance_0001"
down_revision = None
branch_labels = ("attendance",)
depends_on = None
replaces = "0002_attendance"
"""The revision of the runtime's one chain that created these tables before the services owned their
migrations: a database found at it is read as at the runtime's `0001` (kumitate.storage.migrate)."""


def _adopted(table: str) -> bool:
    """The table exists already: a release before the services owned their migrations created it (its
    revision 0002_attendance); it is adopted as it is, every row kept."""
    return sa.inspect(op.get_bind()).has_table(table)


def upgrade() -> None:
    if _adopted("attendance_rules"):
        return
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
