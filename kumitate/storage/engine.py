"""Open the engine: the one place that knows URLs, pool settings and SQLite pragmas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

SQLITE_FILE = "kumitate.sqlite3"


def database_url(configured: str | None, data_dir: Path) -> str:
    """KUMITATE_DATABASE_URL with the psycopg 3 driver made explicit, or the embedded SQLite file."""
    if not configured:
        return f"sqlite+pysqlite:///{data_dir / SQLITE_FILE}"
    url = make_url(configured)
    if url.drivername in {"postgresql", "postgres"}:
        url = url.set(drivername="postgresql+psycopg")
    return url.render_as_string(hide_password=False)


def create(url: str, *, busy_timeout_ms: int = 5000) -> Engine:
    if make_url(url).get_backend_name() == "sqlite":
        return _sqlite(url, busy_timeout_ms)
    # pre_ping: a PostgreSQL restart must cost one reconnect, not one failed call per pooled connection.
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20, pool_recycle=1800)


def _sqlite(url: str, busy_timeout_ms: int) -> Engine:
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection: Any, _record: Any) -> None:
        # sqlite3's own transaction handling is off: SQLAlchemy emits BEGIN (below), so DDL is
        # transactional and writers take the lock at BEGIN, not at their first write.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        # IMMEDIATE: a read-then-write transaction cannot fail half-way with SQLITE_BUSY on upgrade
        # (two writers each holding a read lock); readers ask for a plain deferred BEGIN.
        mode = "" if conn.get_execution_options().get("kumitate_read_only") else " IMMEDIATE"
        conn.exec_driver_sql(f"BEGIN{mode}")

    return engine
