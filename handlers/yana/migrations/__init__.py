"""yana's migrations: one Alembic branch (label `yana`), applied by `kumitate db upgrade` (docs/writing-a-service.md)."""
