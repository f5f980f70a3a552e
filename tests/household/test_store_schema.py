"""The tables the household store queries (handlers/household/store/tables.py) are the ones its migrations create."""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from handlers.household.store import tables
from kumitate.serving.deploy import DeploySettings
from kumitate.storage import open_database


def test_the_migrated_schema_matches_the_store_tables(database_url: str, tmp_path: Path) -> None:
    db = open_database(tmp_path, DeploySettings.model_validate({"database_url": database_url or None}))
    try:
        with db.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), tables.metadata)
    finally:
        db.close()
    # the other stores' tables show up as "remove" (they are not in this metadata); nothing of household may
    assert [d for d in diff if "household_" in repr(d)] == []
