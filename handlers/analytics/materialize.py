"""materialize: named in-memory tables that later queries can reuse.

Why a table rather than a view: a view re-runs its query every time, so it would not
make anything faster; a table computes once. The database file is read-only; the
tables live in the sandbox's in-memory catalog (connection.VIEWS_CATALOG), which every
pooled connection sees (TEMP tables would be visible on one connection only), so they
vanish with the process (the tool description says so).

Names cannot collide with the database's tables: the table is called
`mat_<name>` (name lower-cased, letters/digits/underscore), and a name whose
prefixed form equals a database table is refused with CONFLICT. Materializing an
existing name again replaces it (new data, new expiry). At most `max_views` live at
once; the oldest is evicted (and named in the result) to make room. Expired ones
are dropped on every call and by the periodic sweep.

The table is built under a scratch name outside the user namespace
(`_build_<random hex>`: a user name always starts with `mat_`, so no view can be
clobbered by another's build), then swapped in. The swap (drop the old table,
rename the new one) is one DuckDB transaction, so it either happens entirely or
not at all, and the registry is only updated once it has committed. Swaps and drops
are serialised by one lock (catalog changes from two connections at once could
conflict); builds, which run the user's query, are not.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import duckdb

from kumitate.context import commit_gate, progress
from kumitate.errors import ToolError

from .connection import VIEWS_CATALOG
from .exports import rfc3339
from .source import quote_ident, wrap_query

PREFIX = "mat_"
BUILD_PREFIX = "_build_"  # cannot start a user view name (those start with PREFIX)
QUALIFIER = f"{VIEWS_CATALOG}.main."
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")


@dataclass(slots=True)
class View:
    view: str
    rows: int
    columns: list[str]
    created_at: datetime
    expires_at: datetime

    def public(self) -> dict[str, Any]:
        return {"view": self.view, "rows": self.rows, "columns": self.columns, "expires_at": rfc3339(self.expires_at)}


def view_name(name: str) -> str:
    if not NAME.match(name or ""):
        raise ToolError(
            "name must start with a letter and hold only letters, digits and underscores (at most 40).",
            code="INVALID_INPUT",
        )
    return PREFIX + name.lower()


class Materializer:
    """Registry of live materialized tables on the sandboxed connection."""

    def __init__(self, *, clock: Callable[[], datetime], max_views: int = 10, max_rows: int = 5_000_000):
        self.clock = clock
        self.max_views = max_views
        self.max_rows = max_rows
        self._views: dict[str, View] = {}
        self._mutex = threading.Lock()  # the registry
        self._ddl = threading.Lock()  # swaps and drops in the views catalog

    def names(self) -> dict[str, str]:
        """Live view names (lower -> real) for table_or_query resolution."""
        now = self.clock()
        with self._mutex:
            return {v: v for v, item in self._views.items() if item.expires_at > now}

    def live(self) -> list[dict[str, Any]]:
        now = self.clock()
        with self._mutex:
            live = [v for v in self._views.values() if v.expires_at > now]
        return [v.public() for v in sorted(live, key=lambda v: v.created_at)]

    def create(
        self,
        con: duckdb.DuckDBPyConnection,
        name: str,
        sql: str,
        *,
        ttl_seconds: int,
        user_tables: set[str],
    ) -> dict[str, Any]:
        """Build the table (under a scratch name, then swap it in) and register it."""
        view = view_name(name)
        if view in user_tables:
            raise ToolError(f"{view!r} is a table of the database; choose another name.", code="CONFLICT")
        self.drop_expired(con)
        scratch = BUILD_PREFIX + secrets.token_hex(8)
        con.execute(
            f"CREATE TABLE {QUALIFIER}{quote_ident(scratch)} AS "
            f"SELECT * FROM {wrap_query(sql)} AS q LIMIT {self.max_rows + 1}"
        )
        try:
            progress(2, 3, "publishing the table")
            rows = int(con.execute(f"SELECT count(*) FROM {QUALIFIER}{quote_ident(scratch)}").fetchall()[0][0])
            if rows > self.max_rows:
                raise ToolError(
                    f"The query returns more than {self.max_rows:,} rows, the materialize limit. "
                    "Aggregate or filter it (WHERE, GROUP BY) first.",
                    code="ROW_LIMIT_EXCEEDED",
                    details={"max_rows": self.max_rows},
                )
            columns = [str(r[0]) for r in con.execute(f"DESCRIBE {QUALIFIER}{quote_ident(scratch)}").fetchall()]
            with self._ddl:
                with commit_gate():
                    replaced, evicted, item = self._swap_in(con, view, scratch, rows, columns, ttl_seconds)
                _drop_tables(con, evicted)
        except BaseException:
            con.execute(f"DROP TABLE IF EXISTS {QUALIFIER}{quote_ident(scratch)}")
            raise
        return {**item.public(), "replaced": replaced, "evicted": evicted}

    def _swap_in(
        self, con: duckdb.DuckDBPyConnection, view: str, scratch: str, rows: int, columns: list[str], ttl_seconds: int
    ) -> tuple[bool, list[str], View]:
        """Replace any view of the same name with the built table and register it (the commit).

        Drop and rename run in one transaction: on any failure it rolls back, the old
        view (if any) stays as it was, and the caller drops the scratch table. Nothing
        is renamed without being registered.
        """
        with self._mutex:
            replaced = view in self._views
        now = self.clock()
        item = View(view, rows, columns, now, now + timedelta(seconds=ttl_seconds))
        con.execute("BEGIN TRANSACTION")
        try:
            # Unconditional: also clears a table of that name the registry does not know.
            con.execute(f"DROP TABLE IF EXISTS {QUALIFIER}{quote_ident(view)}")
            con.execute(f"ALTER TABLE {QUALIFIER}{quote_ident(scratch)} RENAME TO {quote_ident(view)}")
            con.execute("COMMIT")
        except BaseException:
            _rollback(con)
            raise
        evicted: list[str] = []
        with self._mutex:
            self._views.pop(view, None)
            self._views[view] = item
            while len(self._views) > self.max_views:
                oldest = min(self._views.values(), key=lambda v: v.created_at)
                evicted.append(oldest.view)
                del self._views[oldest.view]
        return replaced, evicted, item

    def _expired(self) -> list[str]:
        now = self.clock()
        with self._mutex:
            return [v for v, item in self._views.items() if item.expires_at <= now]

    def drop_expired(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        """Drop every expired table; return their names (cheap when none has expired)."""
        if not self._expired():
            return []
        with self._ddl:
            gone = self._expired()
            with self._mutex:
                for v in gone:
                    del self._views[v]
            _drop_tables(con, gone)
        return gone

    def drop(self, con: duckdb.DuckDBPyConnection, name: str) -> dict[str, Any]:
        """Drop one view now (before its TTL); `dropped` is False when no live view has that name."""
        view = name.lower() if name.lower().startswith(PREFIX) and NAME.match(name[len(PREFIX) :]) else view_name(name)
        self.drop_expired(con)
        with self._ddl:
            with self._mutex:
                item = self._views.get(view)
            if item is None:
                return {"view": view, "dropped": False}
            with commit_gate():
                _drop_tables(con, [view])
                with self._mutex:
                    self._views.pop(view, None)
        return {"view": view, "dropped": True}


def _drop_tables(con: duckdb.DuckDBPyConnection, views: list[str]) -> None:
    for v in views:
        con.execute(f"DROP TABLE IF EXISTS {QUALIFIER}{quote_ident(v)}")


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back the open transaction, if DuckDB still has one (an interrupt may have ended it)."""
    with contextlib.suppress(duckdb.Error):
        con.execute("ROLLBACK")
