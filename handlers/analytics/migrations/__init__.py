"""analytics's migrations: one Alembic branch (label `analytics`), applied by `kumitate db upgrade` (docs/writing-a-service.md)."""
