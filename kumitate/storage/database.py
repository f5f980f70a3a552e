"""Transactions: one helper that commits under the current call's commit gate."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Connection, Engine, Insert, Table, exc
from sqlalchemy.dialects import postgresql, sqlite

from kumitate.context import commit_gate, current_call
from kumitate.errors import ToolError
from kumitate.faults import STORAGE_RETRY_AFTER_MS
from kumitate.serving.deploy import DeploySettings
from kumitate.serving.threads import started_pool
from kumitate.storage import bounds, migrate
from kumitate.storage import engine as engines

T = TypeVar("T")
CUT_MARGIN_S = 0.5
"""The watchdog cuts a connection this long after its bound at the earliest: the deadline step, which
answers at the bound, speaks first (and names the database as what held the call)."""


class Database:
    """An engine plus the two ways to use it: `transaction()` to change, `read()` to look.

    A lost, locked or hung database is STORAGE_UNAVAILABLE (503, retryable) to the caller, never
    INTERNAL: the call may simply be retried once PostgreSQL is back or the SQLite lock is released.
    Every transaction run for a call is bounded (kumitate.storage.bounds): waiting for one of the
    pool's connections, each statement and lock wait, and the connection itself (the watchdog).
    """

    def __init__(self, engine: Engine, *, timeout_s: float = 30.0, grace_s: float = 2.0) -> None:
        self.engine = engine
        self.timeout_s = timeout_s
        """KUMITATE_DB_TIMEOUT_MS: the bound of a transaction in a call without a deadline."""
        self.grace_s = grace_s
        """KUMITATE_COMMIT_GRACE_MS: how long past its bound a connection may still finish a commit."""
        self.slots = engines.slots(engine)
        self._free = threading.BoundedSemaphore(self.slots)
        self._threads: ThreadPoolExecutor | None = None
        self._threads_lock = threading.Lock()

    @property
    def dialect(self) -> str:
        """The SQL dialect in use: `sqlite` or `postgresql`."""
        return self.engine.dialect.name

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """BEGIN … COMMIT; the COMMIT waits for the commit gate (a timed-out call rolls back instead).
        A call already past its deadline is refused before it takes a connection: it could only roll back."""
        call = current_call()
        if call is not None:
            call.check_deadline()
        with self._connection(max(self.grace_s, CUT_MARGIN_S)) as conn:
            trans = conn.begin()
            try:
                yield conn
                with commit_gate():
                    trans.commit()
            finally:
                if trans.is_active:
                    trans.rollback()

    @contextmanager
    def housekeeping(self) -> Iterator[Connection]:
        """BEGIN … COMMIT outside the current call's commit gate and deadline, bounded by the storage
        time-out instead: bookkeeping a call must commit or give back whatever its deadline says (a
        quota reservation taken or returned), which through the gate would count as the call's commit."""
        grace = max(self.grace_s, CUT_MARGIN_S)
        with bounds.within(self.timeout_s), self._connection(grace) as conn, conn.begin():
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only transaction (on SQLite a deferred BEGIN, so readers never queue behind writers)."""
        with self._connection(CUT_MARGIN_S) as conn:
            conn = conn.execution_options(kumitate_read_only=True)
            with conn.begin():
                yield conn

    @contextmanager
    def _connection(self, grace_s: float) -> Iterator[Connection]:
        """A pooled connection under the current bound; `grace_s`: how long past it a commit may finish."""
        bound = bounds.bound_for(self.timeout_s, grace_s)
        with _unavailable_as_tool_error(bound):
            with bounds.waiting_on_storage():
                self._take_slot(bound)
            try:
                try:
                    with bounds.applied(bound), bounds.waiting_on_storage():
                        conn = self.engine.connect()
                except BaseException:
                    bounds.disarm(bound)  # whatever the checkout armed, it never goes out armed
                    raise
                try:
                    yield conn
                finally:
                    bounds.disarm(bound)  # before the connection goes back to the pool
                    conn.close()
            finally:
                self._free.release()

    def _take_slot(self, bound: bounds.Bound | None) -> None:
        """One of the pool's connections, waiting no longer than the bound (outside a call: the storage
        time-out): the pool itself never makes a caller wait, so its wait cannot outlast a deadline."""
        wait = bound.remaining_s() if bound is not None else self.timeout_s
        if not self._free.acquire(timeout=wait):
            raise ToolError(
                f"all {self.slots} database connections are busy (waited {round(wait * 1000)} ms); retry shortly",
                code="STORAGE_UNAVAILABLE",
                details={"retry_after_ms": STORAGE_RETRY_AFTER_MS},
            )

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """Run blocking storage code off the event loop, on the storage layer's own threads (never
        asyncio's default pool, which DNS look-ups share); the current call's context goes along."""
        call = partial(contextvars.copy_context().run, fn, *args)
        return await asyncio.get_running_loop().run_in_executor(self._pool(), call)

    def _pool(self) -> ThreadPoolExecutor:
        """Started on first use (most scripts never need it), every thread at once (kumitate.serving.threads)."""
        with self._threads_lock:
            if self._threads is None:
                self._threads = started_pool(self.slots, "kumitate-storage")
            return self._threads

    @contextmanager
    def within(self, seconds: float) -> Iterator[None]:
        """Bound the transactions opened inside to `seconds` from now (a readiness check's limit)."""
        with bounds.within(seconds):
            yield

    def insert_ignore(self, table: Table, values: Mapping[str, object]) -> Insert:
        """INSERT … ON CONFLICT DO NOTHING, the same on both engines; add `.returning(...)` to learn who won
        (rowcount is not reliable for it on every driver)."""
        dialect_insert = postgresql.insert if self.dialect == "postgresql" else sqlite.insert
        return dialect_insert(table).values(**values).on_conflict_do_nothing()

    def close(self) -> None:
        """Stop the database threads and close every pooled connection."""
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
        self.engine.dispose()


@contextmanager
def _unavailable_as_tool_error(bound: bounds.Bound | None = None) -> Iterator[None]:
    try:
        yield
    except (exc.OperationalError, exc.InterfaceError, exc.TimeoutError) as error:
        if bound is not None and bound.exhausted():
            raise bound.error() from error
        orig = getattr(error, "orig", None)
        raise ToolError(
            f"storage is unavailable ({type(orig).__name__ if orig else 'connection lost'}); retry shortly",
            code="STORAGE_UNAVAILABLE",
            details={"retry_after_ms": STORAGE_RETRY_AFTER_MS},
        ) from error


def open_database(
    data_dir: Path, deploy: DeploySettings | None = None, migrations: migrate.Migrations | None = None
) -> Database:
    """Open the configured database and bring its schema to this release (or refuse to start): the
    runtime's migrations and those of the project's services (`migrations`, by default those of the
    project `deploy` names, else the one around the working directory: migrate.Migrations.discover)."""
    deploy = deploy or DeploySettings.from_env()
    url = engines.database_url(deploy.database_url, data_dir)
    engine = engines.create(url, busy_timeout_ms=deploy.sqlite_busy_timeout_ms)
    try:
        migrations = migrations or migrate.Migrations.discover(deploy)
        migrate.ensure(engine, auto_upgrade=deploy.db_migrate == "auto", migrations=migrations)
    except BaseException:
        engine.dispose()
        raise
    return Database(engine, timeout_s=deploy.db_timeout_ms / 1000, grace_s=deploy.commit_grace_ms / 1000)
