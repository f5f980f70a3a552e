"""The analytics domain core: JSON-shaped dicts in, JSON-shaped dicts out.

Wires the pieces together: the database (generated on first start), the worker
processes that run every query in the sandbox under a memory bound and a deadline
(connection.py), the export store, the materialized views and the schema description. Transport-free and environment-free: the adapter
(`handlers/analytics/__init__.py`) hands it typed settings and the runtime's database,
converts the generated input models to dicts and back, and adds the export's `url`
(the caller's address, which only the call context knows).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from generated.analytics.bindings import RESOURCE_EXPORT_FILE as EXPORT_FILE
from generated.errors import InvalidInputError, NotFoundError, QueryTimeoutError
from kumitate.context import Principal, progress
from kumitate.storage import Database
from kumitate.storage.carry import announce

from ..store import ExportRegistry, ViewRegistry
from .checked import Checked, CheckedQueries
from .connection import (
    DEFAULT_POOL_SIZE,
    DEFAULT_WORKER_IDLE_MB,
    DEFAULT_WORKER_MEMORY_MB,
    QueryRunner,
    Sandbox,
    WorkerConnection,
)
from .exports import FORMATS, ExportQuota, ExportStore
from .histogram import MAX_BINS, compute_histogram
from .materialize import PREFIX as VIEW_PREFIX
from .materialize import Materializer
from .profile import PROFILE_MAX_BYTES, compute_profile
from .schema import describe_database
from .source import apply_date_range, resolve
from .sql_guard import check_select

log = logging.getLogger("kumitate.analytics")

VIEW_WORDS = (VIEW_PREFIX, "information_schema")
"""What SQL that reads a materialized view, or lists them, must contain (lower case)."""


def names_views(sql: str) -> bool:
    """Whether SQL may read or list materialized views (otherwise it reads only the database's own tables)."""
    return any(word in sql.lower() for word in VIEW_WORDS)


DB_FILE = "activities.duckdb"
EXPORT_MAX_ROWS = 1_000_000
SWEEP_ON_ACCESS_S = 30.0
MIN_VIEW_TTL_S = 60  # materialize ttl_seconds bounds (the spec's MaterializeInput)
MAX_VIEW_TTL_S = 86_400


LOCAL = Principal("local", frozenset({"*"}))  # direct (non-transport) callers: scripts, tests, benchmarks


def utcnow() -> datetime:
    return datetime.now(UTC)


def int_param(params: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    """An integer parameter within [low, high], or INVALID_INPUT.

    The transports validate inputs against the spec first; this keeps the core safe
    when it is called directly (a bad value would otherwise surface as a 500).
    """
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(str(value), 10)
        except ValueError:
            raise InvalidInputError(f"{key} must be an integer.") from None
    if not low <= value <= high:
        raise InvalidInputError(f"{key} must be between {low:,} and {high:,}.")
    return value


@dataclass(frozen=True, slots=True)
class Limits:
    """Every guard in one place (the tool specs quote these values)."""

    query_timeout_s: float = 10.0
    export_ttl_s: int = 3600
    export_max_rows: int = EXPORT_MAX_ROWS
    profile_max_bytes: int = PROFILE_MAX_BYTES
    max_views: int = 10
    materialize_max_rows: int = 5_000_000
    export_max_bytes: int = 100_000_000
    principal_export_bytes: int = 500_000_000
    pool_size: int = DEFAULT_POOL_SIZE
    worker_memory_mb: int = DEFAULT_WORKER_MEMORY_MB
    worker_idle_mb: int = DEFAULT_WORKER_IDLE_MB


class AnalyticsService:
    """One per process: owns the DuckDB worker processes (not the database it is given). Call `close()` when done."""

    def __init__(
        self,
        database: Database,
        service_dir: Path,
        *,
        db_path: Path | None = None,
        scale: float = 1.0,
        seed: int = 42,
        limits: Limits | None = None,
        clock: Callable[[], datetime] = utcnow,
        export_dir: Path | None = None,
    ) -> None:
        """`database` (the runtime's, `setup.database`) holds the export and view registries;
        `export_dir` their files (default `service_dir/exports`). Instances that share both serve
        each other's exports and views. The database belongs to the caller: `close()` leaves it open."""
        self.limits = limits or Limits()
        self.clock = clock
        self.db_path = Path(db_path) if db_path else Path(service_dir) / DB_FILE
        started = time.perf_counter()
        if not self.db_path.exists():  # the generator's numpy and pandas cost a restart 0.6 s: load them only here
            from samples.analytics import ensure_database

            if ensure_database(self.db_path, scale=scale, seed=seed):
                seconds = round(time.perf_counter() - started, 2)
                announce("analytics", f"generated the sample database {self.db_path} in {seconds} s", seconds=seconds)
        self.database = database
        exports_dir = Path(export_dir) if export_dir else Path(service_dir) / "exports"
        exports_dir.mkdir(parents=True, exist_ok=True)
        quota = ExportQuota(per_export=self.limits.export_max_bytes, per_principal=self.limits.principal_export_bytes)
        self.exports = ExportStore(
            exports_dir,
            ExportRegistry(self.database),
            clock=clock,
            ttl_seconds=self.limits.export_ttl_s,
            quota=quota,
            lease_seconds=max(900, int(self.limits.query_timeout_s * 10)),
        )
        self.exports.adopt_unowned()
        sandbox = Sandbox(
            self.db_path, exports_dir, Path(service_dir) / "tmp", memory_bytes=self.limits.worker_memory_mb << 20
        )
        scrub = (str(exports_dir.resolve()), str(Path(service_dir).resolve()), str(self.db_path.resolve()))
        self.runner = QueryRunner(
            sandbox,
            pool_size=self.limits.pool_size,
            timeout_s=self.limits.query_timeout_s,
            scrub=scrub,
            idle_bytes=self.limits.worker_idle_mb << 20,
        )
        self.views = Materializer(
            exports_dir / "views",
            ViewRegistry(self.database),
            clock=clock,
            max_views=self.limits.max_views,
            max_rows=self.limits.materialize_max_rows,
        )
        self.catalog = sandbox.catalog
        self._described: Future[list[dict[str, Any]]] = Future()
        threading.Thread(target=self._describe, name="analytics-describe", daemon=True).start()
        self.allowed_catalogs = frozenset({self.catalog.lower(), "temp", "main"})
        self._closed = threading.Event()
        self._last_sweep = float("-inf")
        self.checked = CheckedQueries()

    def _describe(self) -> None:
        """The database's tables, read by the first worker while the process goes on starting (a worker takes
        ~0.3 s to start, more on a loaded host): the first call that needs them waits for the rest."""
        try:
            with self.runner.session(timeout_s=60) as c:
                tables = describe_database(c)
        except BaseException as exc:
            self._described.set_exception(exc)
            return
        self._described.set_result(tables)  # once the worker is back in the pool, for the call that waits

    @property
    def tables(self) -> list[dict[str, Any]]:
        """The database's tables and their columns (analytics://schema)."""
        return self._described.result()

    @cached_property
    def user_tables(self) -> dict[str, str]:
        """The database's table names, lower case -> as written."""
        return {t["name"].lower(): t["name"] for t in self.tables}

    # -- helpers -----------------------------------------------------------------

    def _known_tables(self, con: WorkerConnection, sql: str) -> dict[str, str]:
        """The database's tables and the live views (exposed on this instance first: see Materializer.sync).

        SQL that cannot name a view (views are `mat_*`; `information_schema` lists them) is checked against
        the tables alone, without reading the view registry (a transaction per call: issue 32)."""
        if not names_views(sql):
            return self.user_tables
        return {**self.user_tables, **self.views.names(self.views.sync(con))}

    def _check(self, con: WorkerConnection, query: str) -> str:
        """The SQL guard's answer for the caller's query (sql_guard.check_select)."""
        return check_select(con, query, allowed_catalogs=self.allowed_catalogs, tables=self._known_tables(con, query))

    def _source(self, con: WorkerConnection, params: dict[str, Any]) -> Any:
        source = resolve(
            con,
            params["table_or_query"],
            tables=self._known_tables(con, params["table_or_query"]),
            allowed_catalogs=self.allowed_catalogs,
        )
        return apply_date_range(source, params.get("date_range"), params.get("date_column"))

    def _timeout(self, deadline: float | None) -> float:
        """The query deadline, never later than the caller's (a time.monotonic() value).

        The pipeline answers REQUEST_TIMEOUT at its own deadline (which an operator cap
        may set below query_timeout_s); interrupting DuckDB by then keeps a query nobody
        waits for from holding the connection that every other call needs. A call made while the
        start-up's table list is still being read waits for it first (and then gets its warm worker).
        """
        self._described.exception()
        limit = self.limits.query_timeout_s
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:  # nothing may start: an interrupt sent before a query begins would be lost
                raise QueryTimeoutError("The call's deadline has passed; no query was run.")
            limit = min(limit, max(0.01, left))
        return round(limit, 2)

    def _maybe_sweep_exports(self) -> None:
        """Sweep exports on access, at most every SWEEP_ON_ACCESS_S (per-handle expiry is always checked)."""
        now = time.monotonic()
        if now - self._last_sweep >= SWEEP_ON_ACCESS_S:
            self._last_sweep = now
            self.exports.sweep()

    # -- tools -------------------------------------------------------------------

    def export(
        self, params: dict[str, Any], *, deadline: float | None = None, principal: Principal = LOCAL
    ) -> dict[str, Any]:
        fmt = params.get("format", "parquet")
        if fmt not in FORMATS:
            raise InvalidInputError(f"format must be one of {', '.join(FORMATS)}.")
        max_rows = int_param(params, "max_rows", 100_000, 1, self.limits.export_max_rows)
        self._maybe_sweep_exports()
        query = params["query"]
        known = self.checked.get(query)
        with self.runner.user_session(timeout_s=self._timeout(deadline)) as con:
            progress(0, 3, "checking the query")
            sql = known.sql if known else self._check(con, query)
            progress(1, 3, "writing the export")
            meta = self.exports.write(
                con,
                sql,
                fmt=fmt,
                max_rows=max_rows,
                owner=principal.id,
                watch=self.runner.guarded,
                columns=known.columns if known else None,
            )
        if known is None and not names_views(query):
            self.checked.remember(query, Checked(sql, tuple(meta["columns"])))
        handle = meta["handle"]
        log.info("analytics export format=%s rows=%d bytes=%d", fmt, meta["rows"], meta["size_bytes"])
        return {
            "handle": handle,
            "rows": meta["rows"],
            "size_mb": round(meta["size_bytes"] / 1_000_000, 3),
            "columns": meta["columns"],
            "format": fmt,
            "mime_type": meta["mime_type"],
            "expires_at": meta["expires_at"],
            "resource_uri": EXPORT_FILE.uri.replace("{handle}", handle),
        }

    def profile(self, params: dict[str, Any], *, deadline: float | None = None) -> dict[str, Any]:
        with self.runner.user_session(timeout_s=self._timeout(deadline)) as con:
            source = self._source(con, params)
            return compute_profile(con, source, max_bytes=self.limits.profile_max_bytes, columns=params.get("columns"))

    def histogram(self, params: dict[str, Any], *, deadline: float | None = None) -> dict[str, Any]:
        with self.runner.user_session(timeout_s=self._timeout(deadline)) as con:
            source = self._source(con, params)
            return compute_histogram(con, source, params["column"], int_param(params, "bins", 20, 1, MAX_BINS))

    def materialize(self, params: dict[str, Any], *, deadline: float | None = None) -> dict[str, Any]:
        ttl = int_param(params, "ttl_seconds", 3600, MIN_VIEW_TTL_S, MAX_VIEW_TTL_S)
        with self.runner.user_session(timeout_s=self._timeout(deadline)) as con:
            progress(0, 3, "checking the query")
            sql = self._check(con, params["query"])
            progress(1, 3, "building the table")
            result = self.views.create(con, params["name"], sql, ttl_seconds=ttl, user_tables=set(self.user_tables))
        log.info("analytics materialize rows=%d evicted=%d", result["rows"], len(result["evicted"]))
        return result

    def drop_materialized(self, params: dict[str, Any], *, deadline: float | None = None) -> dict[str, Any]:
        with self.runner.session(timeout_s=self._timeout(deadline)) as con:
            result = self.views.drop(con, params["view"])
        log.info("analytics drop_materialized dropped=%s", result["dropped"])
        return result

    # -- resources ---------------------------------------------------------------

    def schema(self) -> dict[str, Any]:
        return {
            "tables": self.tables,
            "materialized": self.views.live(),
            "limits": {
                "query_timeout_s": self.limits.query_timeout_s,
                "export_max_rows": self.limits.export_max_rows,
                "export_ttl_s": self.limits.export_ttl_s,
                "export_max_bytes": self.limits.export_max_bytes,
                "principal_export_bytes": self.limits.principal_export_bytes,
                "profile_max_bytes": self.limits.profile_max_bytes,
                "max_materialized": self.limits.max_views,
                "query_memory_mb": self.limits.worker_memory_mb,
            },
        }

    def find_table(self, name: str) -> dict[str, Any] | None:
        """A table's schema entry by name, case-insensitive (as DuckDB resolves names)."""
        actual = self.user_tables.get(name.lower())
        return next((t for t in self.tables if t["name"] == actual), None)

    def table(self, name: str) -> dict[str, Any]:
        found = self.find_table(name)
        if found is None:
            raise NotFoundError(f"no table {name!r}; analytics://schema lists them")
        return dict(found)

    def column(self, table: str, name: str) -> dict[str, Any]:
        found = next((c for c in self.table(table)["columns"] if c["name"].lower() == name.lower()), None)
        if found is None:
            raise NotFoundError(f"no column {name!r} in {table!r}; analytics://schema lists them")
        return dict(found)

    def read_export(self, handle: str, principal: Principal = LOCAL) -> tuple[bytes, str]:
        """Bytes and MIME type of a live export `principal` may read (EXPORT_NOT_FOUND otherwise)."""
        return self.exports.read_bytes(handle, principal)

    # -- housekeeping --------------------------------------------------------------

    def sweep(self) -> dict[str, int]:
        """Drop expired exports and materialized views (runs periodically and on access)."""
        exports = self.exports.sweep()
        with self.runner.session(timeout_s=30) as con:
            views = self.views.drop_expired(con)
        return {"exports": exports, "views": views}

    def close(self) -> None:
        self._closed.set()
        with suppress(BaseException):
            self._described.exception()  # its worker is not started after the pool is closed
        self.runner.close()


class Sweeper:
    """A daemon thread that calls `service.sweep()` every `interval_s` seconds."""

    def __init__(self, service: AnalyticsService, interval_s: float = 300.0) -> None:
        self._service = service
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="analytics-sweeper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._service.sweep()
            except Exception:
                log.exception("analytics sweep failed")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
