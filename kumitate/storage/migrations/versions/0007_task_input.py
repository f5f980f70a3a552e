"""tasks: a task may wait for input (input_required): the questions it waits on and their answers

Revision ID: 0007_task_input
Revises: 0006_tasks
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_task_input"
down_revision = "0006_tasks"
branch_labels = None
depends_on = None

STATUS = "working, input_required, completed, failed or cancelled"
STATUS_BEFORE = "working, completed, failed or cancelled"


def _status_comment(comment: str) -> None:
    """Column comments are kept by PostgreSQL only (SQLite would rebuild the table for nothing)."""
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("tasks", "status", existing_type=sa.String(16), existing_nullable=False, comment=comment)


def upgrade() -> None:
    questions = "JSON {key: question} the task waits on (input_required)"
    answers = "JSON {key: answer} given to those questions, not yet taken"
    op.add_column("tasks", sa.Column("questions", sa.Text, nullable=True, comment=questions))
    op.add_column("tasks", sa.Column("answers", sa.Text, nullable=True, comment=answers))
    _status_comment(STATUS)


def downgrade() -> None:
    _status_comment(STATUS_BEFORE)
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("answers")
        batch.drop_column("questions")
