"""The analytics registries in the shared database (kumitate.storage): export handles and materialized views.

Files live in the export directory (KUMITATE_EXPORT_DIR, a volume every instance mounts); what exists,
who owns it and until when lives here, so every instance answers the same: a handle minted on one
instance is served by the next, a view built on one is visible on all, and both survive restarts.

Byte quotas are enforced here too: an export in progress is a `writing` row holding the bytes it was
granted (with a lease, so a crashed instance's grant runs out), and the check-and-reserve is one
transaction, serialised per principal (SQLite's write lock; a PostgreSQL advisory lock), so two
instances cannot both grant the last free bytes.

Taking or giving back a reservation, and removing an expired row, are housekeeping, not the call's
result: they commit at once, outside the call's commit gate (a call must stay subject to its deadline
while it holds a reservation, and a call past its deadline must still give back what it reserved). Only
`publish` and the view registry's `put`/`remove` commit under the gate.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Float,
    Index,
    MetaData,
    String,
    Table,
    Text,
    and_,
    bindparam,
    delete,
    exc,
    func,
    or_,
    select,
    text,
    update,
)

from generated.errors import StorageUnavailableError
from kumitate.errors import ToolError
from kumitate.storage import Database

from .storage_errors import storage_unavailable

metadata = MetaData()
"""analytics' tables (its migrations: handlers/analytics/migrations/; `kumitate db revision --service
analytics` compares this metadata with them)."""
exports_table = Table(
    "analytics_exports",
    metadata,
    Column("handle", String(32), primary_key=True),
    Column("owner", String(255), nullable=False),
    Column("state", String(10), nullable=False, comment="writing (a byte reservation) or ready (the handle exists)"),
    Column("format", String(16), nullable=False),
    Column("mime_type", String(100), nullable=False),
    Column("rows", BigInteger, nullable=False),
    Column("size_bytes", BigInteger, nullable=False, comment="reserved bytes while writing, then the file's size"),
    Column("columns", Text, nullable=False, comment="JSON list of column names"),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False, comment="reservation lease while writing, then the TTL"),
)
Index("analytics_exports_owner", exports_table.c.owner, exports_table.c.expires_at)
Index("analytics_exports_expiry", exports_table.c.expires_at)

views_table = Table(
    "analytics_views",
    metadata,
    Column("view", String(64), primary_key=True),
    Column("file", String(255), nullable=False, comment="Parquet file name under <export dir>/views"),
    Column("rows", BigInteger, nullable=False),
    Column("columns", Text, nullable=False, comment="JSON list of column names"),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
)

WRITING, READY = "writing", "ready"
VIEWS_LOCK = "analytics.views"


def _lock(conn: Connection, key: str) -> None:
    """Serialise writers on `key` until the transaction ends (SQLite's BEGIN IMMEDIATE already does)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": key})


@contextmanager
def _storage(transaction: AbstractContextManager[Connection]) -> Iterator[Connection]:
    """The storage layer's STORAGE_UNAVAILABLE, as the rest of analytics words it (with retry_after_ms)."""
    try:
        with transaction as conn:
            yield conn
    except StorageUnavailableError:
        raise
    except ToolError as error:
        if error.code != "STORAGE_UNAVAILABLE":
            raise
        raise storage_unavailable(error.__cause__ or error) from error
    except (exc.OperationalError, exc.InterfaceError) as error:
        raise storage_unavailable(error) from error


def _write(db: Database) -> AbstractContextManager[Connection]:
    return _storage(db.transaction())


def _read(db: Database) -> AbstractContextManager[Connection]:
    return _storage(db.read())


def _housekeeping(db: Database) -> AbstractContextManager[Connection]:
    """A transaction that commits regardless of the current call's deadline (see the module doc)."""
    return _storage(db.housekeeping())


@dataclass(frozen=True, slots=True)
class ExportRow:
    handle: str
    owner: str
    format: str
    mime_type: str
    rows: int
    size_bytes: int
    columns: list[str]
    created_at: float
    expires_at: float


_PUBLISH = update(exports_table).where(exports_table.c.handle == bindparam("published"))
"""Built once (its SET clause comes from the parameters): a statement made per call costs its cache key each time."""
_USAGE = select(func.coalesce(func.sum(exports_table.c.size_bytes), 0)).where(
    exports_table.c.owner == bindparam("owner"), exports_table.c.expires_at > bindparam("now")
)


class ExportRegistry:
    """Rows of `analytics_exports`; times are POSIX seconds from the service's clock."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @staticmethod
    def _usage(conn: Connection, owner: str, now: float) -> int:
        return int(conn.execute(_USAGE, {"owner": owner, "now": now}).scalar_one())

    def usage(self, owner: str, now: float) -> int:
        """Bytes of `owner`'s live exports plus what its exports in progress hold."""
        with _read(self.db) as conn:
            return self._usage(conn, owner, now)

    def reserve(
        self, handle: str, owner: str, *, now: float, lease_until: float, per_export: int, per_principal: int
    ) -> tuple[int, int]:
        """Grant `handle` what the quotas leave: (bytes used, bytes allowed); allowed <= 0 grants nothing.

        Housekeeping, not the call's result: it commits outside the call's commit gate. Under the gate the
        call would count as committing from here on, and the deadline could not end it while the COPY runs
        (issue 27); a call that ends any way gives the grant back (`remove`), a dead instance's lapses."""
        with _housekeeping(self.db) as conn:
            _lock(conn, f"analytics.quota:{owner}")
            used = self._usage(conn, owner, now)
            allowed = min(per_export, per_principal - used)
            if allowed > 0:
                conn.execute(
                    exports_table.insert(),  # values as parameters: the statement's cache key is not rebuilt per call
                    {
                        "handle": handle,
                        "owner": owner,
                        "state": WRITING,
                        "format": "",
                        "mime_type": "",
                        "rows": 0,
                        "size_bytes": allowed,
                        "columns": "[]",
                        "created_at": now,
                        "expires_at": lease_until,
                    },
                )
        return used, allowed

    def publish(self, row: ExportRow) -> None:
        """The reservation becomes the export: from this commit on the handle exists, on every instance."""
        with _write(self.db) as conn:
            conn.execute(
                _PUBLISH,
                {
                    "published": row.handle,
                    "state": READY,
                    "format": row.format,
                    "mime_type": row.mime_type,
                    "rows": row.rows,
                    "size_bytes": row.size_bytes,
                    "columns": json.dumps(row.columns),
                    "created_at": row.created_at,
                    "expires_at": row.expires_at,
                },
            )

    def adopt(self, row: ExportRow) -> bool:
        """Register a ready export made by a release before this registry; False when the handle is known."""
        values = {**asdict(row), "state": READY, "columns": json.dumps(row.columns)}
        with _write(self.db) as conn:
            added = conn.execute(self.db.insert_ignore(exports_table, values).returning(exports_table.c.handle))
            return added.first() is not None

    def published(self, handle: str) -> ExportRow | None:
        """A published export (live or expired), or None."""
        with _read(self.db) as conn:
            found = conn.execute(
                select(exports_table).where(exports_table.c.handle == handle, exports_table.c.state == READY)
            ).first()
        return None if found is None else _export_row(found._mapping)

    def remove(self, handle: str) -> None:
        with _housekeeping(self.db) as conn:
            conn.execute(delete(exports_table).where(exports_table.c.handle == handle))

    def expired(self, now: float) -> list[str]:
        """Handles past their TTL, or reservations past their lease."""
        with _read(self.db) as conn:
            return list(conn.execute(select(exports_table.c.handle).where(exports_table.c.expires_at <= now)).scalars())

    def handles(self) -> set[str]:
        with _read(self.db) as conn:
            return set(conn.execute(select(exports_table.c.handle)).scalars())


def _export_row(m: Any) -> ExportRow:
    return ExportRow(
        handle=m["handle"],
        owner=m["owner"],
        format=m["format"],
        mime_type=m["mime_type"],
        rows=int(m["rows"]),
        size_bytes=int(m["size_bytes"]),
        columns=list(json.loads(m["columns"])),
        created_at=float(m["created_at"]),
        expires_at=float(m["expires_at"]),
    )


@dataclass(frozen=True, slots=True)
class ViewRow:
    view: str
    file: str
    rows: int
    columns: list[str]
    created_at: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class Swap:
    """What one `put` changed: whether a view of that name was replaced, and the rows it displaced."""

    replaced: bool
    displaced: list[ViewRow]  # the replaced row (if any) and the evicted ones: their files can go
    evicted: list[str]


class ViewRegistry:
    """Rows of `analytics_views`: which Parquet file each live mat_* view reads."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def all(self) -> list[ViewRow]:
        """Every registered view, oldest first (expired ones too: the caller drops those)."""
        with _read(self.db) as conn:
            rows = conn.execute(select(views_table).order_by(views_table.c.created_at, views_table.c.view)).all()
        return [_view_row(r._mapping) for r in rows]

    def put(self, row: ViewRow, *, max_views: int, now: float) -> Swap:
        """Register `row` (replacing a view of that name), evicting the oldest beyond `max_views` live ones."""
        with _write(self.db) as conn:
            _lock(conn, VIEWS_LOCK)
            old = conn.execute(select(views_table).where(views_table.c.view == row.view)).first()
            displaced = [] if old is None else [_view_row(old._mapping)]
            conn.execute(delete(views_table).where(views_table.c.view == row.view))
            conn.execute(
                views_table.insert().values(
                    view=row.view,
                    file=row.file,
                    rows=row.rows,
                    columns=json.dumps(row.columns),
                    created_at=row.created_at,
                    expires_at=row.expires_at,
                )
            )
            live = conn.execute(
                select(views_table)
                .where(or_(views_table.c.expires_at > now, views_table.c.view == row.view))
                .order_by(views_table.c.created_at, views_table.c.view)
            ).all()
            evicted = [_view_row(r._mapping) for r in live if r.view != row.view][: max(0, len(live) - max_views)]
            if evicted:
                conn.execute(delete(views_table).where(views_table.c.view.in_([v.view for v in evicted])))
        return Swap(old is not None, displaced + evicted, [v.view for v in evicted])

    def remove(self, view: str, *, gated: bool = True) -> ViewRow | None:
        """Unregister `view`; its row (for the file) or None when it was not registered."""
        with _write(self.db) if gated else _housekeeping(self.db) as conn:
            _lock(conn, VIEWS_LOCK)
            found = conn.execute(select(views_table).where(views_table.c.view == view)).first()
            if found is not None:
                conn.execute(delete(views_table).where(views_table.c.view == view))
        return None if found is None else _view_row(found._mapping)

    def remove_expired(self, views: list[str], now: float) -> list[ViewRow]:
        """Unregister those of `views` that are still expired (another instance may have replaced one)."""
        with _housekeeping(self.db) as conn:
            _lock(conn, VIEWS_LOCK)
            condition = and_(views_table.c.view.in_(views), views_table.c.expires_at <= now)
            gone = conn.execute(select(views_table).where(condition)).all()
            conn.execute(delete(views_table).where(condition))
        return [_view_row(r._mapping) for r in gone]

    def files(self) -> set[str]:
        with _read(self.db) as conn:
            return set(conn.execute(select(views_table.c.file)).scalars())


def _view_row(m: Any) -> ViewRow:
    return ViewRow(
        view=m["view"],
        file=m["file"],
        rows=int(m["rows"]),
        columns=list(json.loads(m["columns"])),
        created_at=float(m["created_at"]),
        expires_at=float(m["expires_at"]),
    )
