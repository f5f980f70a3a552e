"""The sandboxed DuckDB connection and the deadline every query runs under.

One read-only connection serves the whole process. It is also the sandbox: the
recipe from LIBRARY-NOTES §5 (allowed_directories = the exports directory, external
access off, configuration locked) is applied right after opening, before any user
SQL can run. A single connection is used on purpose: materialized views are TEMP
tables, and DuckDB temp objects are visible only on the connection that made them.
Calls are therefore serialised by a lock; each holds it for at most its deadline.

The database file must not be open read-write anywhere in this process when it is
opened here (DuckDB refuses two configurations of one file), so generation happens
first, on its own connection, which is closed before `open_sandbox` runs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from kumitate.errors import ToolError

log = logging.getLogger("kumitate.analytics")


def _quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def open_sandbox(
    db_path: Path, exports_dir: Path, *, memory_limit: str = "4GB", threads: int | None = None
) -> duckdb.DuckDBPyConnection:
    """Open `db_path` read-only with file access limited to `exports_dir`."""
    config: dict[str, str | bool | int | float | list[str]] = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "memory_limit": memory_limit,
    }
    if threads:
        config["threads"] = threads
    con = duckdb.connect(str(db_path), read_only=True, config=config)
    allowed = str(exports_dir.resolve()) + "/"
    con.execute(f"SET allowed_directories = [{_quote_literal(allowed)}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


class _Watchdog:
    """One long-lived thread that interrupts the connection when the armed deadline passes.

    A thread per call (threading.Timer) costs ~1.5 ms to start on a small machine,
    which is most of the service's overhead on a small export; one watchdog waiting on
    a Condition costs microseconds to arm. `interrupt()` runs while holding the
    condition and `disarm()` takes it too, so once disarm returns no interrupt from
    this call can land on the next caller's query.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="analytics-deadline", daemon=True)
        self._thread.start()

    def arm(self, seconds: float) -> None:
        with self._cond:
            self._deadline = time.monotonic() + seconds
            self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._deadline = None

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                self._deadline = None
                log.info("analytics query interrupted by deadline")
                self._con.interrupt()


class QueryRunner:
    """Serialises access to the sandboxed connection and enforces a deadline.

    `session()` holds the lock and arms the watchdog, which calls `con.interrupt()`
    when the deadline passes; DuckDB then raises InterruptException in the running
    query and the connection stays usable.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, *, timeout_s: float = 10.0, scrub: tuple[str, ...] = ()):
        self.con = con
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._watchdog = _Watchdog(con)
        self._scrub = tuple(s for s in scrub if s)

    @contextmanager
    def session(self, timeout_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """Hold the connection for one tool call; map DuckDB failures to catalogued errors."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        started = time.monotonic()
        if not self._lock.acquire(timeout=limit):
            raise ToolError(
                f"The analytics engine is busy with another query; retry in a few seconds (waited {limit:g} s).",
                code="REQUEST_TIMEOUT",
            )
        try:
            self._watchdog.arm(max(0.01, limit - (time.monotonic() - started)))
            try:
                yield self.con
            except duckdb.InterruptException as exc:
                raise ToolError(
                    f"The query did not finish within {limit:g} s and was cancelled. Filter more (WHERE on "
                    "activity_id or a time range), aggregate in SQL, or materialize an intermediate result.",
                    code="QUERY_TIMEOUT",
                ) from exc
            except duckdb.Error as exc:
                raise self.map_error(exc) from exc
        finally:
            self._watchdog.disarm()
            self._lock.release()

    def close(self) -> None:
        self._watchdog.stop()
        self.con.close()

    def map_error(self, exc: duckdb.Error) -> ToolError:
        """Turn a DuckDB exception into a catalogued error with a scrubbed message."""
        text = str(exc).strip()
        for secret in self._scrub:
            text = text.replace(secret, "<server>")
        first = text.splitlines()[0] if text else type(exc).__name__
        if isinstance(exc, duckdb.PermissionException):
            return ToolError(f"The query tried something the sandbox forbids: {first}", code="UNSAFE_QUERY")
        if isinstance(exc, duckdb.OutOfMemoryException):
            return ToolError(
                "The query needs more memory than the service allows; filter or aggregate first.",
                code="SQL_ERROR",
            )
        detail = "\n".join(text.splitlines()[:4])
        return ToolError(f"DuckDB rejected the query: {detail}", code="SQL_ERROR")
