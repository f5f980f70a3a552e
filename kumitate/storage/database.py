"""Transactions: one helper that commits under the current call's commit gate."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, Insert, Table, exc
from sqlalchemy.dialects import postgresql, sqlite

from kumitate.context import commit_gate
from kumitate.deploy import DeploySettings
from kumitate.errors import ToolError
from kumitate.faults import STORAGE_RETRY_AFTER_MS
from kumitate.storage import engine as engines
from kumitate.storage import migrate

T = TypeVar("T")


class Database:
    """An engine plus the two ways to use it: `transaction()` to change, `read()` to look.

    A lost or locked database is STORAGE_UNAVAILABLE (503, retryable) to the caller, never INTERNAL:
    the call may simply be retried once PostgreSQL is back or the SQLite lock is released.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """BEGIN … COMMIT; the COMMIT waits for the commit gate (a timed-out call rolls back instead)."""
        with _unavailable_as_tool_error(), self.engine.connect() as conn:
            trans = conn.begin()
            try:
                yield conn
                with commit_gate():
                    trans.commit()
            finally:
                if trans.is_active:
                    trans.rollback()

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only transaction (on SQLite a deferred BEGIN, so readers never queue behind writers)."""
        with _unavailable_as_tool_error(), self.engine.connect() as conn:
            conn = conn.execution_options(kumitate_read_only=True)
            with conn.begin():
                yield conn

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking storage code off the event loop (the current call's context goes along)."""
        return await asyncio.to_thread(fn, *args)

    def insert_ignore(self, table: Table, values: Mapping[str, Any]) -> Insert:
        """INSERT … ON CONFLICT DO NOTHING, the same on both engines; add `.returning(...)` to learn who won
        (rowcount is not reliable for it on every driver)."""
        dialect_insert = postgresql.insert if self.dialect == "postgresql" else sqlite.insert
        return dialect_insert(table).values(**values).on_conflict_do_nothing()

    def close(self) -> None:
        self.engine.dispose()


@contextmanager
def _unavailable_as_tool_error() -> Iterator[None]:
    try:
        yield
    except (exc.OperationalError, exc.InterfaceError) as error:
        raise ToolError(
            f"storage is unavailable ({type(error.orig).__name__ if error.orig else 'connection lost'}); retry shortly",
            code="STORAGE_UNAVAILABLE",
            details={"retry_after_ms": STORAGE_RETRY_AFTER_MS},  # Retry-After, as for any other storage failure
        ) from error


def open_database(data_dir: Path, deploy: DeploySettings | None = None) -> Database:
    """Open the configured database and bring its schema to this release (or refuse to start)."""
    deploy = deploy or DeploySettings.from_env()
    url = engines.database_url(deploy.database_url, data_dir)
    engine = engines.create(url, busy_timeout_ms=deploy.sqlite_busy_timeout_ms)
    try:
        migrate.ensure(engine, auto_upgrade=deploy.db_migrate == "auto")
    except BaseException:
        engine.dispose()
        raise
    return Database(engine)
