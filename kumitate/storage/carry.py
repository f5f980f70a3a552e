"""Data carried over from an earlier release: the one way a start-up says what it changed, and keeps originals.

Every step that changes stored data at start-up (a schema migration, a file of an earlier release copied
into the storage layer, handles registered) logs one line at the default level through `announce`: what
was done, from where, how many rows, and where the original was kept. An original is never deleted and
never overwritten: `keep_original` renames it to `<name>.imported-<UTC time>` (with `-2`, `-3`... when
that name is taken), so a downgrade and a second upgrade keep both generations of backups. A database
file that a migration is about to change is copied first the same way (`reserve`, then SQLite's backup
API: kumitate.storage.migrate).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, closing
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kumitate.observability.calllog import log_info

if TYPE_CHECKING:
    from sqlalchemy import Connection, Insert, Table

__all__ = [
    "IDEMPOTENCY_FILE",
    "SQLITE_COMPANIONS",
    "UNOWNED",
    "announce",
    "import_idempotency",
    "keep_original",
    "reserve",
    "stamp",
]

UNOWNED = "(unowned)"
"""The owner of a handle made by a release without owners: readable by principals holding scope
`admin` or `*` (every caller when authentication is off, as the release that made it allowed)."""
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")
IDEMPOTENCY_FILE = "idempotency.sqlite3"


class _Storage(Protocol):
    """What `import_idempotency` uses of kumitate.storage.database.Database (which imports, through
    kumitate.storage.migrate, this module: naming it here would close an import circle)."""

    def transaction(self) -> AbstractContextManager[Connection]: ...

    def insert_ignore(self, table: Table, values: Mapping[str, object]) -> Insert: ...


def announce(step: str, message: str, **fields: object) -> None:
    """One line at the default log level for a start-up step that changed stored data."""
    log_info(f"{step}: {message}", upgrade=step, **fields)


def stamp() -> str:
    """The current UTC time as a file-name suffix (`20261128T093000Z`)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def keep_original(path: Path) -> Path | None:
    """Rename `path` (and the -wal/-shm files SQLite may have left beside it) to `<name>.imported-<time>`,
    never over an existing file; the new path, or None when another process moved it first."""
    base = f"{path.name}.imported-{stamp()}"
    for attempt in range(1, 1000):
        target = path.with_name(base if attempt == 1 else f"{base}-{attempt}")
        try:
            os.link(path, target)  # fails when `target` exists: an earlier backup is never replaced
        except FileExistsError:
            continue
        except FileNotFoundError:
            return None
        path.unlink(missing_ok=True)
        for suffix in SQLITE_COMPANIONS:
            companion = path.with_name(path.name + suffix)
            if companion.exists():
                companion.replace(target.with_name(target.name + suffix))
        return target
    raise FileExistsError(f"no free backup name for {path}")


def reserve(path: Path, kind: str) -> Path:
    """A new empty file `<name>.<kind>-<UTC time>` beside `path` (with `-2`, `-3`... when that name is
    taken), created exclusively: a copy written into it never replaces an earlier one."""
    base = f"{path.name}.{kind}-{stamp()}"
    for attempt in range(1, 1000):
        target = path.with_name(base if attempt == 1 else f"{base}-{attempt}")
        try:
            target.open("x").close()
        except FileExistsError:
            continue
        return target
    raise FileExistsError(f"no free name for a copy of {path}")


def import_idempotency(db: _Storage, data_dir: Path, clock: Callable[[], float] = time.time) -> int:
    """Copy the unexpired keys of an earlier release's `idempotency.sqlite3` into the storage layer's table
    (a retry after the upgrade still replays its first answer); returns the keys copied."""
    from kumitate.storage.schema import idempotency

    path = data_dir / IDEMPOTENCY_FILE
    if not path.is_file():
        return 0
    with closing(sqlite3.connect(path)) as old:  # read-write: a left-over write-ahead log is folded in
        try:
            rows = old.execute(
                "SELECT tool, principal, key, fingerprint, status, body, created_at, expires_at FROM idempotency"
                " WHERE expires_at > ?",
                (clock(),),
            ).fetchall()
        except sqlite3.Error:
            rows = []
    names = ("tool", "principal", "key", "fingerprint", "status", "body", "created_at", "expires_at")
    copied = 0
    with db.transaction() as conn:
        for row in rows:
            values = dict(zip(names, row, strict=True))
            copied += (
                conn.execute(db.insert_ignore(idempotency, values).returning(idempotency.c.key)).first() is not None
            )
    kept = keep_original(path)
    if kept is not None:
        announce(
            "idempotency",
            f"copied {copied} unexpired idempotency keys from {path} into the storage layer;"
            f" the original is kept as {kept.name}",
            rows=copied,
            kept=str(kept),
        )
    return copied
