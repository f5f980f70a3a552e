"""Alembic environment: kumitate passes the connection in (kumitate/storage/migrate/); no alembic.ini.

One environment for every branch (the runtime's and each service's version directory). The metadata
compared by autogenerate is the runtime's unless `kumitate db revision --service NAME` passes the
service's (`target_metadata`), with `include_object` keeping the comparison to that service's tables.
"""

from __future__ import annotations

from alembic import context

from kumitate.storage.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "run migrations with `kumitate db upgrade` (kumitate.storage.migrate), which passes a connection"
    )
context.configure(
    connection=connection,
    target_metadata=context.config.attributes.get("target_metadata", metadata),
    include_object=context.config.attributes.get("include_object"),
    render_as_batch=True,
)
with context.begin_transaction():
    context.run_migrations()
