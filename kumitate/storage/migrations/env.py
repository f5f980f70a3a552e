"""Alembic environment: kumitate passes the connection in (kumitate/storage/migrate.py); no alembic.ini."""

from __future__ import annotations

from alembic import context

from kumitate.storage.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "run migrations with `kumitate db upgrade` (kumitate.storage.migrate), which passes a connection"
    )
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
