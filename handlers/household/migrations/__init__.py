"""household's migrations: one Alembic branch (label `household`), applied by `kumitate db upgrade` (docs/writing-a-service.md)."""
