"""One-time import of the rules file of releases before the storage layer.

Those releases kept rules in `<data dir>/attendance/attendance.sqlite3` (table
`thread_attendance_rules`, same columns). At start-up its rows are copied into the storage layer's
`attendance_rules` (rows already there are kept, so an interrupted or concurrent import is harmless)
and the file is renamed to `attendance.sqlite3.imported`, which is then no longer read.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing, suppress
from pathlib import Path

from handlers.attendance.store import RuleStore

LEGACY_FILE = "attendance.sqlite3"
IMPORTED_SUFFIX = ".imported"


def import_legacy(store: RuleStore, service_dir: Path) -> int:
    """Copy the old file's rows into the store and retire the file; returns the rows written."""
    path = service_dir / LEGACY_FILE
    if not path.exists():
        return 0
    # Read-write, so a write-ahead log left beside it is applied (and folded in when it closes).
    with closing(sqlite3.connect(path)) as old:
        try:
            rows = old.execute(
                "SELECT thread_id, version, rule_json, saved_at FROM thread_attendance_rules ORDER BY thread_id, version"
            ).fetchall()
        except sqlite3.OperationalError:
            rows = []  # an empty file (no table yet)
    written = 0
    with store.db.transaction() as conn:
        for thread_id, version, rule_json, saved_at in rows:
            written += store.insert(conn, thread_id, version, rule_json, saved_at)
    # FileNotFoundError: another instance sharing the data directory retired it at the same moment.
    with suppress(FileNotFoundError):
        path.rename(path.with_name(LEGACY_FILE + IMPORTED_SUFFIX))
    return written
