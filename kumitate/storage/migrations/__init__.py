"""Alembic migrations of the storage layer (packaged: read from the installed kumitate, never from specs/)."""
