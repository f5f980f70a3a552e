"""Each transaction of a call is bounded by what is left of its deadline, on both engines."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from kumitate.context import CallContext, bound, state_of
from kumitate.errors import ToolError
from kumitate.serving.deploy import DeploySettings
from kumitate.storage import Database, open_database
from kumitate.storage import engine as engines


def deploy(url: str | None, **kw: object) -> DeploySettings:
    return DeploySettings.model_validate({"database_url": url, **kw})


@contextmanager
def call_with(seconds: float | None) -> Iterator[CallContext]:
    deadline = None if seconds is None else time.monotonic() + seconds
    ctx = CallContext(service="demo", tool="t", transport="http", run_id="r", trace_id="t", deadline=deadline)
    with bound(ctx):
        yield ctx


def timed_failure(db: Database, sql: str, seconds: float | None) -> tuple[ToolError, float]:
    started = time.monotonic()
    with call_with(seconds), pytest.raises(ToolError) as failed, db.transaction() as conn:
        conn.execute(text(sql))
    return failed.value, time.monotonic() - started


@pytest.mark.postgres
def test_postgres_statements_end_at_the_calls_deadline_and_the_limit_stays_in_that_transaction(
    postgres_url: str, tmp_path: Path
) -> None:
    from tests.servers import fresh_pg_database

    db = open_database(tmp_path, deploy(fresh_pg_database(postgres_url, tmp_path.name)))
    error, seconds = timed_failure(db, "SELECT pg_sleep(10)", 0.5)
    assert error.code == "STORAGE_UNAVAILABLE" and "the call's deadline" in error.message, error.message
    assert seconds < 2.0
    with call_with(3.0), db.read() as conn:
        assert conn.scalar(text("SHOW statement_timeout")) not in {"0", None}
    with db.read() as conn:  # outside a call, and on a connection a bounded call used: no limit
        assert conn.scalar(text("SHOW statement_timeout")) == "0"
    db.close()


@pytest.mark.postgres
def test_postgres_lock_waits_end_at_the_bound_of_a_call_without_deadline(postgres_url: str, tmp_path: Path) -> None:
    from tests.servers import fresh_pg_database

    url = fresh_pg_database(postgres_url, tmp_path.name)
    db = open_database(tmp_path, deploy(url, db_timeout_ms=500))
    holder = create_engine(engines.database_url(url, tmp_path)).connect()
    holder.execute(text("LOCK TABLE idempotency IN ACCESS EXCLUSIVE MODE"))
    try:
        error, seconds = timed_failure(db, "SELECT count(*) FROM idempotency", None)
    finally:
        holder.rollback()
        holder.close()
    assert error.code == "STORAGE_UNAVAILABLE" and "KUMITATE_DB_TIMEOUT_MS" in error.message, error.message
    assert seconds < 2.0
    db.close()


def test_sqlite_waits_for_a_writer_no_longer_than_the_deadline(tmp_path: Path) -> None:
    db = open_database(tmp_path, deploy(None, sqlite_busy_timeout_ms=10000))
    writer = sqlite3.connect(tmp_path / engines.SQLITE_FILE, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        error, seconds = timed_failure(db, "SELECT 1", 0.3)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert error.code == "STORAGE_UNAVAILABLE" and seconds < 2.0, (error.message, seconds)
    with db.transaction() as conn:  # the busy timeout is back to the setting outside a call
        assert conn.scalar(text("PRAGMA busy_timeout")) == 10000
    db.close()


def test_waiting_for_a_pooled_connection_ends_at_the_deadline_with_503(tmp_path: Path) -> None:
    db = open_database(tmp_path, deploy(None))
    taken = 0
    while db._free.acquire(blocking=False):  # every connection out, as if held by stuck calls
        taken += 1
    try:
        error, seconds = timed_failure(db, "SELECT 1", 0.3)
    finally:
        for _ in range(taken):
            db._free.release()
    assert error.code == "STORAGE_UNAVAILABLE" and f"all {taken} database connections are busy" in error.message
    assert error.details["retry_after_ms"] > 0 and 0.25 < seconds < 2.0
    db.close()


def test_the_watchdog_interrupts_a_query_that_outlives_its_bound(tmp_path: Path) -> None:
    """SQLite's form of the cut (PostgreSQL's is tested frozen, tests/storage/test_frozen_database.py)."""
    db = open_database(tmp_path, deploy(None, commit_grace_ms=0))
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    result: list[BaseException] = []

    def run() -> None:
        try:
            with call_with(0.2), db.read() as conn:
                conn.execute(text(endless))
        except BaseException as exc:
            result.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive() and isinstance(result[0], ToolError)
    assert result[0].code == "STORAGE_UNAVAILABLE"
    db.close()


def test_housekeeping_commits_past_the_calls_deadline_and_outside_its_gate(tmp_path: Path) -> None:
    """A reservation given back by a call past its deadline must still commit: housekeeping is bounded by
    the storage time-out, not the call's deadline, and its COMMIT does not count as the call's commit."""
    db = open_database(tmp_path)
    try:
        with db.housekeeping() as conn:
            conn.execute(text("CREATE TABLE kept (n INTEGER)"))
        with call_with(0.0) as ctx:
            with db.housekeeping() as conn:
                conn.execute(text("INSERT INTO kept VALUES (1)"))
            assert state_of(ctx).time_out()  # no commit of the call began: it can still be timed out
            with pytest.raises(ToolError), db.transaction() as conn:  # the call's own change is refused
                conn.execute(text("INSERT INTO kept VALUES (2)"))
        with db.read() as conn:
            assert conn.execute(text("SELECT n FROM kept")).scalars().all() == [1]
    finally:
        db.close()
