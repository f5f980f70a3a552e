"""`kumitate db backup PATH` / `kumitate db restore PATH`: the embedded default's data, consistent while serving.

What a data dir holds: the storage layer's SQLite file (every service's relational state), copied with
SQLite's online backup API (a consistent snapshot while instances write); then every other file under the
data dir (analytics' DuckDB file, which serving only reads; export and view files, household charts, yana's
ingested images and journal, the `.imported-*` originals of earlier releases) and the export directory
when KUMITATE_EXPORT_DIR puts it elsewhere. The database is copied first: a handle in it whose file
expired meanwhile reads as not found, a file newer than the snapshot is swept as an orphan. The manifest,
written last, lists every file with its size and SHA-256 and names the schema revision.

A restore checks before it replaces: the manifest's shape, every listed file's size and checksum (hashed
as it is copied), SQLite's integrity check and a schema revision this kumitate knows, and that every
DuckDB file opens and reads. It copies into a new directory beside the data dir and renames that into
place only when everything passed, so a refused restore leaves the data dir as it was (absent or empty).
A backup of an earlier release has no checksums: its database and DuckDB files are checked, the other
files cannot be, and the restore says so in a warning.

With PostgreSQL (KUMITATE_DATABASE_URL) the files are backed up and the database is left to pg_dump
(docs/deployment.md, Backups). A restore goes onto a fresh data dir only; the next start migrates an older
backup's schema (and the restore refuses a newer one).

One module per job: `manifest.py` reads and checks the manifest and plans what a restore copies,
`files.py` walks a data dir and copies a file while hashing it, `verify.py` checks the staged database
and DuckDB files, `stage.py` stages a restore beside its target and renames it into place, `report.py`
holds what the commands are told (Report, BackupError).
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

from kumitate.storage.backup.files import CHUNK as CHUNK
from kumitate.storage.backup.files import TRANSIENT_PREFIXES as TRANSIENT_PREFIXES
from kumitate.storage.backup.files import TRANSIENT_SUFFIXES as TRANSIENT_SUFFIXES
from kumitate.storage.backup.files import copied, copy, describe, files
from kumitate.storage.backup.manifest import (
    DUCKDB_SUFFIX,
    EXPORT_DIR,
    FORMAT,
    MANIFEST,
    Entry,
    Manifest,
    plan,
    read_manifest,
)
from kumitate.storage.backup.report import BackupError, Report, one_line
from kumitate.storage.backup.stage import Stage, commit
from kumitate.storage.backup.verify import check_duckdb, check_sqlite, revision
from kumitate.storage.engine import SQLITE_FILE

if TYPE_CHECKING:
    from kumitate.settings.storage import DeploySettings


def backup(data_dir: Path, target: Path, *, export_dir: Path | None, postgres: bool) -> Report:
    """Copy the data directory into the new directory `target`, with a manifest: the SQLite database
    consistently (SQLite's backup API, while it is in use), the other files, and the exports when they
    live outside it, each with its size and SHA-256. PostgreSQL is left to pg_dump."""
    if target.exists() and any(target.iterdir()):
        raise BackupError(f"{target} is not empty: back up into a new directory")
    if target.resolve().is_relative_to(data_dir.resolve()):
        raise BackupError(f"{target} is inside the data directory {data_dir}: back up somewhere else")
    target.mkdir(parents=True, exist_ok=True)
    source = data_dir / SQLITE_FILE
    entries: list[dict[str, str | int]] = []
    found: str | None = None
    if postgres:
        database = "not copied: the database is PostgreSQL, back it up with pg_dump (docs/deployment.md, Backups)"
    elif source.is_file():
        live = sqlite3.connect(f"file:{source}?mode=rw", uri=True)
        with closing(live), closing(sqlite3.connect(target / SQLITE_FILE)) as snapshot:
            live.backup(snapshot)
            snapshot.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        found = revision(target / SQLITE_FILE)
        database = f"copied (revision {found or 'none'})"
        entries.append(describe(target / SQLITE_FILE, SQLITE_FILE))
    else:
        database = f"not copied: there is no {source}"
    for path, relative in files(data_dir, skip={source}):
        entries += copied(path, target, relative)
    outside = export_dir is not None and not export_dir.resolve().is_relative_to(data_dir.resolve())
    if outside and export_dir is not None and export_dir.is_dir():
        for path, relative in files(export_dir, skip=set()):
            entries += copied(path, target, f"{EXPORT_DIR}/{relative}")
    manifest = {
        "format": FORMAT,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "database": database,
        "database_file": SQLITE_FILE if database.startswith("copied") else None,
        "schema_revision": found,
        "files": entries,
    }
    written = target / f"{MANIFEST}.tmp"
    written.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    written.replace(target / MANIFEST)  # last: a backup with a manifest is whole
    return Report(database, len(entries) - database.startswith("copied"))


def restore(source: Path, data_dir: Path, *, export_dir: Path | None, settings: DeploySettings | None = None) -> Report:
    """Check the backup `source` made by `backup`, copy it into a new directory beside the empty (or
    absent) data directory `data_dir` (exports into one beside `export_dir` when it lies outside), check
    the copies, then rename them into place. Any refusal leaves both directories as they were. The schema
    revisions known are those of the project `settings` names (KUMITATE_PROJECT), as at start-up."""
    manifest = read_manifest(source)
    if data_dir.exists() and any(data_dir.iterdir()):
        raise BackupError(f"the data directory {data_dir} is not empty: restore onto a fresh one")
    outside = export_dir is not None and not export_dir.resolve().is_relative_to(data_dir.resolve())
    if outside and export_dir is not None and export_dir.exists() and any(export_dir.iterdir()):
        raise BackupError(f"the export directory {export_dir} is not empty: restore onto a fresh one")
    planned, warnings = plan(source, manifest)
    stages: list[Stage] = []
    try:
        stages.append(Stage(data_dir))
        if outside and export_dir is not None:
            stages.append(Stage(export_dir))
        count, revision_found = _copy_and_check(source, planned, manifest, stages, data_dir, export_dir, settings)
        if export_dir is None and any(e.path.startswith(f"{EXPORT_DIR}/") for e in planned):
            warnings.append(f"the backup's {EXPORT_DIR}/ was not restored: no export directory is configured")
        commit(stages)
    except BaseException as error:
        for stage in reversed(stages):  # the last made first: it may lie in a parent the first one made
            stage.discard()
        if isinstance(error, OSError):
            raise BackupError(f"cannot restore {source}: {one_line(error)}") from error
        raise
    if revision_found:
        return Report(f"revision {revision_found}", count, tuple(warnings))
    warnings.append(
        "the backup holds no database: the next start begins with the sample data (with PostgreSQL, "
        "pg_restore its dump first)"
    )
    return Report(f"no database in the backup ({manifest.database})", count, tuple(warnings))


# -- copying and checking ----------------------------------------------------------------------------
def _copy_and_check(
    source: Path,
    planned: list[Entry],
    manifest: Manifest,
    stages: list[Stage],
    data_dir: Path,
    export_dir: Path | None,
    settings: DeploySettings | None,
) -> tuple[int, str | None]:
    """Copy each planned file into its stage, comparing size and SHA-256 as it is copied; then check the
    staged database and DuckDB files. Returns how many files besides the database, and its revision."""
    exports = _export_root(stages, data_dir, export_dir)
    done: list[tuple[str, Path]] = []
    for entry in planned:
        if entry.path.startswith(f"{EXPORT_DIR}/"):
            if exports is None:
                continue
            target = exports / entry.path.removeprefix(f"{EXPORT_DIR}/")
        else:
            target = stages[0].dir / entry.path
        size, digest = copy(source / entry.path, target)
        if entry.size is not None and size != entry.size:
            raise BackupError(
                f"{source / entry.path} is {size} bytes, its manifest says {entry.size}: the backup is damaged"
            )
        if entry.sha256 is not None and digest != entry.sha256:
            raise BackupError(
                f"{source / entry.path} does not match its SHA-256 in the manifest: the backup is damaged"
            )
        done.append((entry.path, target))
    found: str | None = None
    database = stages[0].dir / SQLITE_FILE
    if manifest.database_file is not None or database.is_file():
        found = check_sqlite(database, source / SQLITE_FILE, manifest, settings)
    for relative, target in done:
        if relative.endswith(DUCKDB_SUFFIX):
            check_duckdb(target, source / relative)
    return len(done) - (found is not None), found


def _export_root(stages: list[Stage], data_dir: Path, export_dir: Path | None) -> Path | None:
    if export_dir is None:
        return None
    if len(stages) > 1:
        return stages[1].dir
    return stages[0].dir / export_dir.resolve().relative_to(data_dir.resolve())
