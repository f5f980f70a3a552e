"""attendance's migrations: one Alembic branch (label `attendance`), applied by `kumitate db upgrade` (docs/writing-a-service.md)."""
