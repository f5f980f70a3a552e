"""`kumitate db backup PATH` / `kumitate db restore PATH`: the embedded default's data, consistent while serving.

What a data dir holds: the storage layer's SQLite file (every service's relational state), copied with
SQLite's online backup API (a consistent snapshot while instances write); then every other file under the
data dir (analytics' DuckDB file, which serving only reads; export and view files, household charts, yana's
ingested images and journal, the `.imported-*` originals of earlier releases) and the export directory
when KUMITATE_EXPORT_DIR puts it elsewhere. The database is copied first: a handle in it whose file
expired meanwhile reads as not found, a file newer than the snapshot is swept as an orphan.

With PostgreSQL (KUMITATE_DATABASE_URL) the files are backed up and the database is left to pg_dump
(docs/deployment.md, Backups). A restore goes onto a fresh data dir only; the next start migrates an older
backup's schema (and refuses a newer one).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from kumitate.storage.engine import SQLITE_FILE

MANIFEST = "kumitate-backup.json"
EXPORT_DIR = "export-dir"
"""Where a backup keeps the export directory when it lies outside the data dir."""
TRANSIENT_SUFFIXES = ("-wal", "-shm", "-journal", ".migrate.lock", ".tmp")
TRANSIENT_PREFIXES = (".kumitate-health-probe",)


class BackupError(RuntimeError):
    """A backup or restore that cannot go ahead; the message is one line that says why."""


@dataclass(frozen=True, slots=True)
class Report:
    """What a backup or restore did: the database's fate and how many files were copied."""

    database: str
    """What happened to the database: `copied (revision …)` or what to do instead (PostgreSQL)."""
    files: int


def backup(data_dir: Path, target: Path, *, export_dir: Path | None, postgres: bool) -> Report:
    """Copy the data directory into the new directory `target`, with a manifest: the SQLite database
    consistently (SQLite's backup API, while it is in use), the other files, and the exports when they
    live outside it. PostgreSQL is left to pg_dump."""
    if target.exists() and any(target.iterdir()):
        raise BackupError(f"{target} is not empty: back up into a new directory")
    if target.resolve().is_relative_to(data_dir.resolve()):
        raise BackupError(f"{target} is inside the data directory {data_dir}: back up somewhere else")
    target.mkdir(parents=True, exist_ok=True)
    source = data_dir / SQLITE_FILE
    if postgres:
        database = "not copied: the database is PostgreSQL, back it up with pg_dump (docs/deployment.md, Backups)"
    elif source.is_file():
        live = sqlite3.connect(f"file:{source}?mode=rw", uri=True)
        with closing(live), closing(sqlite3.connect(target / SQLITE_FILE)) as copy:
            live.backup(copy)
            copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        database = f"copied (revision {revision(target / SQLITE_FILE) or 'none'})"
    else:
        database = f"not copied: there is no {source}"
    files = _copy_tree(data_dir, target, skip={source})
    outside = export_dir is not None and not export_dir.resolve().is_relative_to(data_dir.resolve())
    if outside and export_dir is not None and export_dir.is_dir():
        files += _copy_tree(export_dir, target / EXPORT_DIR, skip=set())
    manifest = {"created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "database": database}
    (target / MANIFEST).write_text(json.dumps(manifest | {"files": files}, indent=1) + "\n", encoding="utf-8")
    return Report(database, files)


def restore(source: Path, data_dir: Path, *, export_dir: Path | None) -> Report:
    """Copy a backup made by `backup` into the empty data directory `data_dir` (exports to `export_dir`)."""
    if not (source / MANIFEST).is_file():
        raise BackupError(f"{source} is not a kumitate backup (no {MANIFEST})")
    if data_dir.exists() and any(data_dir.iterdir()):
        raise BackupError(f"the data directory {data_dir} is not empty: restore onto a fresh one")
    outside = export_dir is not None and not export_dir.resolve().is_relative_to(data_dir.resolve())
    if outside and export_dir is not None and export_dir.exists() and any(export_dir.iterdir()):
        raise BackupError(f"the export directory {export_dir} is not empty: restore onto a fresh one")
    files = _copy_tree(source, data_dir, skip={source / MANIFEST, source / EXPORT_DIR})
    if (source / EXPORT_DIR).is_dir() and export_dir is not None:
        files += _copy_tree(source / EXPORT_DIR, export_dir, skip=set())
    database = data_dir / SQLITE_FILE
    found = revision(database) if database.is_file() else None
    return Report(f"revision {found}" if found else "no database in the backup", files)


def _copy_tree(source: Path, target: Path, *, skip: set[Path]) -> int:
    """Copy the files under `source` (not the transient ones, not `skip`); how many."""
    copied = 0
    for path in sorted(source.rglob("*")):
        if path in skip or any(parent in skip for parent in path.parents) or not path.is_file():
            continue
        if path.name.endswith(TRANSIENT_SUFFIXES) or path.name.startswith(TRANSIENT_PREFIXES):
            continue
        if "tmp" in path.relative_to(source).parts[:-1]:  # analytics' spill directories
            continue
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copy2(path, destination)
        except FileNotFoundError:  # expired and removed while copying
            continue
        copied += 1
    return copied


def revision(path: Path) -> str | None:
    """The schema revision stored in a SQLite file, opened without creating anything."""
    with closing(sqlite3.connect(f"file:{path}?mode=rw", uri=True)) as conn:
        try:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        except sqlite3.OperationalError:
            return None
    return str(row[0]) if row else None
