"""The runtime's own revisions (branch `kumitate`: the `idempotency` and `tasks` tables), found by path
(kumitate/storage/migrate/branches.py `RUNTIME_VERSIONS`); each module is one alembic revision."""
