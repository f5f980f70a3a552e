"""Open the engine: the one place that knows URLs, pool settings and SQLite pragmas."""

from __future__ import annotations

import functools
import math
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from kumitate.storage import bounds

if TYPE_CHECKING:
    import psycopg
    from psycopg.abc import PQGen
    from psycopg.rows import TupleRow
    from sqlalchemy import Connection
    from sqlalchemy.engine import Dialect
    from sqlalchemy.pool import ConnectionPoolEntry

RV = TypeVar("RV")

__all__ = [
    "CONNECT_TIMEOUT_S",
    "KEEPALIVES",
    "MAX_OVERFLOW",
    "POOL_SIZE",
    "SQLITE_FILE",
    "WAIT_INTERVAL_S",
    "create",
    "database_url",
    "slots",
]

SQLITE_FILE = "kumitate.sqlite3"
POOL_SIZE = {"postgresql": 10, "sqlite": 5}
MAX_OVERFLOW = {"postgresql": 20, "sqlite": 10}
CONNECT_TIMEOUT_S = 5
"""libpq's connect_timeout (a call's remaining deadline lowers it, to libpq's floor of 2 s): a
server that accepts the TCP connection but never answers (frozen) is given up on."""
WAIT_INTERVAL_S = 1.0
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}
"""TCP keepalives: a server host or network path that went away is noticed on an idle pooled
connection within about 25 s, not the kernel's two hours. A URL's own values win."""


def slots(engine: Engine) -> int:
    """How many connections the engine's pool hands out at once."""
    name = engine.dialect.name
    return POOL_SIZE.get(name, 5) + MAX_OVERFLOW.get(name, 10)


def database_url(configured: str | None, data_dir: Path) -> str:
    """KUMITATE_DATABASE_URL with the psycopg 3 driver made explicit, or the embedded SQLite file."""
    if not configured:
        return f"sqlite+pysqlite:///{data_dir / SQLITE_FILE}"
    url = make_url(configured)
    if url.drivername in {"postgresql", "postgres"}:
        url = url.set(drivername="postgresql+psycopg")
    return url.render_as_string(hide_password=False)


def create(url: str, *, busy_timeout_ms: int = 5000) -> Engine:
    """The engine, with kumitate.storage.bounds installed: each checkout pings (a PostgreSQL restart
    costs one reconnect, not one failed call per pooled connection) and applies the current bound."""
    engine = _sqlite(url, busy_timeout_ms) if make_url(url).get_backend_name() == "sqlite" else _postgres(url)
    bounds.install(engine, busy_timeout_ms)
    return engine


def _postgres(url: str) -> Engine:
    engine = create_engine(
        url,
        pool_size=POOL_SIZE["postgresql"],
        max_overflow=MAX_OVERFLOW["postgresql"],
        pool_timeout=CONNECT_TIMEOUT_S,
        pool_recycle=1800,
    )

    @event.listens_for(engine, "do_connect")
    def _connect(
        _dialect: Dialect, _record: ConnectionPoolEntry, cargs: list[str], cparams: dict[str, Any]
    ) -> psycopg.Connection[TupleRow]:
        for key, value in KEEPALIVES.items():
            cparams.setdefault(key, value)
        timeout = float(cparams.get("connect_timeout") or CONNECT_TIMEOUT_S)
        bound = bounds.current()
        if bound is not None:
            timeout = min(timeout, bound.remaining_s())
        cparams["connect_timeout"] = max(2, math.ceil(timeout))
        return _quiet_connection().connect(*cargs, **cparams)

    return engine


def _wal(cursor: sqlite3.Cursor, busy_timeout_ms: int) -> None:
    """Switch a file to WAL once (the mode is stored in the file). Switching needs the file to itself, and
    SQLite answers "database is locked" at once, without its busy handler, while instances starting
    together create or migrate it: retry until the busy timeout instead of failing the start."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while cursor.execute("PRAGMA journal_mode").fetchone()[0].lower() not in ("wal", "memory"):
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


@functools.cache
def _quiet_connection() -> type[psycopg.Connection[TupleRow]]:
    """psycopg's connection class, made at the first PostgreSQL connection (SQLite never imports psycopg).

    psycopg wakes a thread blocked on the server every 0.1 s to look for Ctrl-C, which only the main
    thread ever receives; with many threads held by a hung server those wake-ups take the GIL from the
    event loop ten times a second each. Once a second is enough for the main thread."""
    import psycopg
    from psycopg.rows import TupleRow

    class QuietConnection(psycopg.Connection[TupleRow]):
        def wait(self, gen: PQGen[RV], interval: float = WAIT_INTERVAL_S, timeout: float | None = None) -> RV:
            return super().wait(gen, interval, timeout)

    return QuietConnection


def _sqlite(url: str, busy_timeout_ms: int) -> Engine:
    database = make_url(url).database
    pool: dict[str, int] = {}
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
        pool = {"pool_size": POOL_SIZE["sqlite"], "max_overflow": MAX_OVERFLOW["sqlite"]}
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000}, **pool)

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
        # sqlite3's own transaction handling is off: SQLAlchemy emits BEGIN (below), so DDL is
        # transactional and writers take the lock at BEGIN, not at their first write.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        _wal(cursor, busy_timeout_ms)
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # IMMEDIATE: a read-then-write transaction cannot fail half-way with SQLITE_BUSY on upgrade
        # (two writers each holding a read lock); readers ask for a plain deferred BEGIN.
        mode = "" if conn.get_execution_options().get("kumitate_read_only") else " IMMEDIATE"
        conn.exec_driver_sql(f"BEGIN{mode}")

    return engine
