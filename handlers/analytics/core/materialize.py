"""materialize: named results that later queries reuse, on every instance and across restarts.

Why a stored result rather than a plain view: a view re-runs its query every time, so it
would not make anything faster; this computes once. The result is written as a Parquet
file under the shared export directory (`<export dir>/views/`), registered in the
database (store.ViewRegistry), and each worker process (connection.py) exposes every
registered file as a DuckDB view `mat_<name>` in its in-memory catalog
(connection.VIEWS_CATALOG). `sync` brings the borrowed worker's views in line with the
registry at the start of every call, so a view built by one worker or instance is usable
by the next, and a restarted instance (or a replaced worker) finds its views again.

Names cannot collide with the database's tables: the view is called `mat_<name>` (name
lower-cased, letters/digits/underscore), and a name whose prefixed form equals a
database table is refused with CONFLICT. Materializing an existing name again replaces
it (new data, new expiry). At most `max_views` live at once across all instances; the
oldest is evicted (and named in the result) to make room. Expired ones are dropped on
every call and by the periodic sweep.

Each build writes a new file (`<view>-<random hex>.parquet`), so no build can clobber
another's or a file being read; the registry row is switched to it in one transaction
under the call's commit gate (a call past its deadline registers nothing, and the file
goes), and the file it replaced is deleted only after this worker's views point at the
new one (another worker re-points its view at its next call, before it reads).
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from generated.errors import ConflictError, InvalidInputError, RowLimitExceededError
from kumitate.context import progress

from ..store import ViewRegistry, ViewRow
from .connection import VIEWS_CATALOG, WorkerConnection
from .exports import epoch_rfc3339
from .source import quote_ident, wrap_query

log = logging.getLogger("kumitate.analytics")

PREFIX = "mat_"
QUALIFIER = f"{VIEWS_CATALOG}.main."
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")
ORPHAN_AGE_S = 3600  # a view file no row names, older than this, was left by a build that died


def public(row: ViewRow) -> dict[str, Any]:
    return {"view": row.view, "rows": row.rows, "columns": row.columns, "expires_at": epoch_rfc3339(row.expires_at)}


def view_name(name: str) -> str:
    if not NAME.match(name or ""):
        raise InvalidInputError(
            "name must start with a letter and hold only letters, digits and underscores (at most 40)."
        )
    return PREFIX + name.lower()


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class Materializer:
    """The registered views, exposed on each worker's DuckDB when a call borrows it."""

    def __init__(
        self,
        directory: Path,
        registry: ViewRegistry,
        *,
        clock: Callable[[], datetime],
        max_views: int = 10,
        max_rows: int = 5_000_000,
    ):
        self.directory = directory
        self.registry = registry
        self.clock = clock
        self.max_views = max_views
        self.max_rows = max_rows

    def _now(self) -> float:
        return self.clock().timestamp()

    def sync(self, con: WorkerConnection) -> list[ViewRow]:
        """Drop expired views, expose the registered ones on `con`'s worker; return the live ones, oldest first."""
        return self._sync(con)[0]

    def _sync(self, con: WorkerConnection) -> tuple[list[ViewRow], int]:
        rows = self.registry.all()
        now = self._now()
        expired = [r.view for r in rows if r.expires_at <= now]
        dropped = self.registry.remove_expired(expired, now) if expired else []
        for gone in dropped:
            self._unlink(gone.file)
        live = [r for r in rows if r.expires_at > now]
        self._expose(con, {r.view: r.file for r in live})
        return [r for r in live if r.view in con.exposed], len(dropped)

    def _expose(self, con: WorkerConnection, wanted: dict[str, str]) -> None:
        """Make the worker's catalog match `wanted` (one call at a time uses a worker: no lock needed)."""
        exposed = con.exposed
        for view in [v for v in exposed if v not in wanted]:
            con.execute(f"DROP VIEW IF EXISTS {QUALIFIER}{quote_ident(view)}")
            del exposed[view]
        for view, file in wanted.items():
            if exposed.get(view) == file:
                continue
            path = _literal(str(self.directory / file))
            try:
                con.execute(
                    f"CREATE OR REPLACE VIEW {QUALIFIER}{quote_ident(view)} AS SELECT * FROM read_parquet({path})"
                )
            except duckdb.IOException:  # replaced or evicted by another instance since the registry was read
                log.info("analytics view file gone while exposing it; the next call retries")
                con.execute(f"DROP VIEW IF EXISTS {QUALIFIER}{quote_ident(view)}")
                exposed.pop(view, None)
                continue
            exposed[view] = file

    @staticmethod
    def names(live: list[ViewRow]) -> dict[str, str]:
        """Live view names (lower -> real) for table_or_query resolution."""
        return {r.view: r.view for r in live}

    def live(self) -> list[dict[str, Any]]:
        """The live views, from the registry alone (no DuckDB connection needed), oldest first."""
        now = self._now()
        return [public(r) for r in self.registry.all() if r.expires_at > now]

    def create(
        self,
        con: WorkerConnection,
        name: str,
        sql: str,
        *,
        ttl_seconds: int,
        user_tables: set[str],
    ) -> dict[str, Any]:
        """Write the result to a new Parquet file and register it (replacing a view of that name)."""
        view = view_name(name)
        if view in user_tables:
            raise ConflictError(f"{view!r} is a table of the database; choose another name.")
        self.directory.mkdir(parents=True, exist_ok=True)
        file = f"{view}-{secrets.token_hex(8)}.parquet"
        path = self.directory / file
        try:
            columns = [str(r[0]) for r in con.execute(f"DESCRIBE SELECT * FROM {wrap_query(sql)} AS q").fetchall()]
            rows = int(
                con.execute(
                    f"COPY (SELECT * FROM {wrap_query(sql)} AS q LIMIT {self.max_rows + 1}) "
                    f"TO {_literal(str(path))} (FORMAT parquet, COMPRESSION zstd)"
                ).fetchall()[0][0]
            )
            if rows > self.max_rows:
                raise RowLimitExceededError(
                    f"The query returns more than {self.max_rows:,} rows, the materialize limit. "
                    "Aggregate or filter it (WHERE, GROUP BY) first.",
                    details={"max_rows": self.max_rows},
                )
            progress(2, 3, "publishing the table")
            now = self._now()
            row = ViewRow(view, file, rows, columns, now, now + ttl_seconds)
            swap = self.registry.put(row, max_views=self.max_views, now=now)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        self.sync(con)
        for old in swap.displaced:
            self._unlink(old.file)
        return {**public(row), "replaced": swap.replaced, "evicted": swap.evicted}

    def drop(self, con: WorkerConnection, name: str) -> dict[str, Any]:
        """Drop one view now (before its TTL); `dropped` is False when no live view has that name."""
        view = name.lower() if name.lower().startswith(PREFIX) and NAME.match(name[len(PREFIX) :]) else view_name(name)
        self.sync(con)
        row = self.registry.remove(view)
        if row is None:
            return {"view": view, "dropped": False}
        self.sync(con)
        self._unlink(row.file)
        return {"view": view, "dropped": True}

    def drop_expired(self, con: WorkerConnection) -> int:
        """Drop every expired view and orphaned file; return how many views went."""
        dropped = self._sync(con)[1]
        self._sweep_orphans()
        return dropped

    def _sweep_orphans(self) -> None:
        if not self.directory.is_dir():
            return
        known = self.registry.files()
        cutoff = self._now() - ORPHAN_AGE_S
        for path in self.directory.glob(f"{PREFIX}*.parquet"):
            try:
                if path.name not in known and path.stat().st_mtime < cutoff:
                    path.unlink(missing_ok=True)
            except OSError:
                continue

    def _unlink(self, file: str) -> None:
        (self.directory / file).unlink(missing_ok=True)
