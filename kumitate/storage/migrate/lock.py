"""One migrator at a time, so two instances starting together migrate once."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, text

ADVISORY_LOCK_ID = 0x6B756D69  # "kumi": one PostgreSQL advisory lock for schema changes


@contextmanager
def schema_lock(engine: Engine) -> Iterator[Connection]:
    """One migrator at a time: an advisory lock on PostgreSQL, a lock file beside the SQLite file."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:id)"), {"id": ADVISORY_LOCK_ID})
            conn.commit()
            try:
                yield conn
            finally:
                conn.rollback()
                conn.execute(text("SELECT pg_advisory_unlock(:id)"), {"id": ADVISORY_LOCK_ID})
                conn.commit()
        return
    database = engine.url.database
    lock_path = Path(f"{database}.migrate.lock") if database and database != ":memory:" else None
    if lock_path is None:
        with engine.connect() as conn:
            yield conn
        return
    with lock_path.open("a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            with engine.connect() as conn:
                yield conn
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)
