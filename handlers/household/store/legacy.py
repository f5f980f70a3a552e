"""Bring a household database of an earlier release (`<data dir>/household/household.db`) into the store.

Before the storage layer, household kept its own SQLite file. On the first start of this release
its transactions and duplicate checks are copied, ids and decisions unchanged, into the storage
layer's tables (the SQLite file `kumitate.sqlite3`, or PostgreSQL), in one transaction, and the
old file is renamed `household.db.imported-<UTC time>` (kept as a backup, never read again, never
overwritten: kumitate.storage.carry), and one line says so. The copy runs
only into an empty household store: when the store already holds rows (another instance copied
first, or data was imported since) the old file is left where it is and a warning is logged.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, bindparam, inspect, select, text, update

from kumitate.storage import carry
from kumitate.storage import engine as engines

from . import Store, refresh_aggregates
from .tables import checks, transactions

log = logging.getLogger(__name__)

LEGACY_FILE = "household.db"
BATCH = 10_000
NEXT_ID = "COALESCE(MAX(id), 0) + 1, false"
#: the columns an older file may lack (it was created before they existed), with their value then
_DEFAULTS: dict[str, Any] = {"is_target": 1, "is_transfer": 0, "is_duplicate": 0, "duplicate_checked": 0}


def migrate(store: Store, state_dir: Path) -> int:
    """Copy an old household.db into an empty store; returns the transactions copied (0: nothing to do)."""
    path = state_dir / LEGACY_FILE
    if not path.is_file():
        return 0
    with store.write() as conn:
        if conn.execute(select(transactions.c.id).limit(1)).first() is not None:
            log.warning(
                "household: %s was not copied: the store already holds transactions (rename or remove the file)",
                path,
            )
            return 0
        if not path.is_file():  # another process copied it while this one waited for the lock
            return 0
        copied, decided = _copy(conn, path)
        refresh_aggregates(conn)
        if store.dialect == "postgresql":  # explicit ids leave the identity sequences behind
            for table in (transactions, checks):
                conn.execute(
                    text(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), {NEXT_ID}) FROM {table.name}")
                )
        kept = carry.keep_original(path)
    carry.announce(
        "household",
        f"copied {copied} transactions and {decided} duplicate checks from {path} into the storage layer"
        f" (ids and decisions unchanged); the original is kept as {kept.name if kept else path.name}",
        rows=copied,
        kept=str(kept),
    )
    return copied


def _copy(conn: Connection, path: Path) -> tuple[int, int]:
    """(transactions, duplicate checks) copied."""
    old = engines.create(f"sqlite+pysqlite:///{path}")
    try:
        with old.connect() as source:
            tables = set(inspect(source).get_table_names())
            counts = [
                _copy_table(source, conn, name, target) if name in tables else 0
                for name, target in (("transactions", transactions), ("duplicate_checks", checks))
            ]
            return counts[0], counts[1]
    finally:
        old.dispose()


def _copy_table(source: Connection, target_conn: Connection, name: str, target: Any) -> int:
    present = {c["name"] for c in inspect(source).get_columns(name)}
    columns = [c.name for c in target.columns if c.name in present]
    result = source.execute(text(f"SELECT {', '.join(columns)} FROM {name} ORDER BY id"))
    copied = 0
    marks: list[dict[str, int]] = []
    while batch := result.fetchmany(BATCH):
        rows = [_row(dict(zip(columns, r, strict=True)), target) for r in batch]
        # a mark may point at a later row: set the marks once every row is in (foreign keys hold throughout)
        marks += [{"tid": r["id"], "of": r.pop("duplicate_of")} for r in rows if r.get("duplicate_of") is not None]
        for r in rows:
            r.pop("duplicate_of", None)
        target_conn.execute(target.insert(), rows)
        copied += len(rows)
    if marks:
        mark = update(target).where(target.c.id == bindparam("tid")).values(duplicate_of=bindparam("of"))
        target_conn.execute(mark, marks)
    return copied


def _row(values: dict[str, Any], target: Any) -> dict[str, Any]:
    """Values as this release stores them: flags 0/1, whole yen, ISO text dates and timestamps."""
    for column, default in _DEFAULTS.items():
        if column in target.c:
            values[column] = default if values.get(column) is None else int(values[column])
    for column, value in list(values.items()):
        if value is None:
            continue
        if column == "amount":
            values[column] = int(value)
        elif column == "date":
            values[column] = str(value)[:10]
        elif column.endswith("_at"):
            values[column] = str(value)[:19]
    return values
