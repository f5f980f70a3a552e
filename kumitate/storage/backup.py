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
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import secrets
import shutil
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from kumitate.storage.engine import SQLITE_FILE

MANIFEST = "kumitate-backup.json"
FORMAT = 2
"""The manifest's format: 2 lists every file with its size and SHA-256; a manifest without `format` (1)
was written by a release before checksums."""
EXPORT_DIR = "export-dir"
"""Where a backup keeps the export directory when it lies outside the data dir."""
TRANSIENT_SUFFIXES = ("-wal", "-shm", "-journal", ".migrate.lock", ".tmp")
TRANSIENT_PREFIXES = (".kumitate-health-probe",)
DUCKDB_SUFFIX = ".duckdb"
CHUNK = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")


class BackupError(RuntimeError):
    """A backup or restore that cannot go ahead; the message is one line that says why."""


@dataclass(frozen=True, slots=True)
class Report:
    """What a backup or restore did: the database's fate, how many files were copied, what to know."""

    database: str
    """What happened to the database: `copied (revision …)` or what to do instead (PostgreSQL)."""
    files: int
    """How many files besides the database were copied."""
    warnings: tuple[str, ...] = ()
    """One line each: what a restore could not check or left out (the command prints them on stderr)."""


@dataclass(frozen=True, slots=True)
class _Entry:
    path: str
    size: int | None = None
    sha256: str | None = None


@dataclass(slots=True)
class _Manifest:
    format: int
    database: str
    database_file: str | None
    revision: str | None
    files: list[_Entry] | None
    """None for a manifest of format 1 (no list: every file of the backup is restored)."""


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
    entries: list[dict[str, Any]] = []
    found: str | None = None
    if postgres:
        database = "not copied: the database is PostgreSQL, back it up with pg_dump (docs/deployment.md, Backups)"
    elif source.is_file():
        live = sqlite3.connect(f"file:{source}?mode=rw", uri=True)
        with closing(live), closing(sqlite3.connect(target / SQLITE_FILE)) as copy:
            live.backup(copy)
            copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        found = revision(target / SQLITE_FILE)
        database = f"copied (revision {found or 'none'})"
        entries.append(_describe(target / SQLITE_FILE, SQLITE_FILE))
    else:
        database = f"not copied: there is no {source}"
    for path, relative in _files(data_dir, skip={source}):
        entries += _copied(path, target, relative)
    outside = export_dir is not None and not export_dir.resolve().is_relative_to(data_dir.resolve())
    if outside and export_dir is not None and export_dir.is_dir():
        for path, relative in _files(export_dir, skip=set()):
            entries += _copied(path, target, f"{EXPORT_DIR}/{relative}")
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


def restore(source: Path, data_dir: Path, *, export_dir: Path | None, settings: Any = None) -> Report:
    """Check the backup `source` made by `backup`, copy it into a new directory beside the empty (or
    absent) data directory `data_dir` (exports into one beside `export_dir` when it lies outside), check
    the copies, then rename them into place. Any refusal leaves both directories as they were. The schema
    revisions known are those of the project `settings` names (KUMITATE_PROJECT), as at start-up."""
    manifest = _read_manifest(source)
    if data_dir.exists() and any(data_dir.iterdir()):
        raise BackupError(f"the data directory {data_dir} is not empty: restore onto a fresh one")
    outside = export_dir is not None and not export_dir.resolve().is_relative_to(data_dir.resolve())
    if outside and export_dir is not None and export_dir.exists() and any(export_dir.iterdir()):
        raise BackupError(f"the export directory {export_dir} is not empty: restore onto a fresh one")
    plan, warnings = _plan(source, manifest)
    stages: list[_Stage] = []
    try:
        stages.append(_Stage(data_dir))
        if outside and export_dir is not None:
            stages.append(_Stage(export_dir))
        files, revision_found = _copy_and_check(source, plan, manifest, stages, data_dir, export_dir, settings)
        if export_dir is None and any(e.path.startswith(f"{EXPORT_DIR}/") for e in plan):
            warnings.append(f"the backup's {EXPORT_DIR}/ was not restored: no export directory is configured")
        _commit(stages)
    except BaseException as error:
        for stage in reversed(stages):  # the last made first: it may lie in a parent the first one made
            stage.discard()
        if isinstance(error, OSError):
            raise BackupError(f"cannot restore {source}: {_one_line(error)}") from error
        raise
    if revision_found:
        return Report(f"revision {revision_found}", files, tuple(warnings))
    warnings.append(
        "the backup holds no database: the next start begins with the sample data (with PostgreSQL, "
        "pg_restore its dump first)"
    )
    return Report(f"no database in the backup ({manifest.database})", files, tuple(warnings))


def revision(path: Path) -> str | None:
    """The schema revisions stored in a SQLite file (one per branch, sorted, comma-separated, as
    kumitate.storage.migrate shows them), opened without creating anything; None when it has none."""
    with closing(sqlite3.connect(f"file:{path}?mode=rw", uri=True)) as conn:
        return _shown(_versions(conn))


def _versions(conn: sqlite3.Connection) -> set[str]:
    try:
        return {str(row[0]) for row in conn.execute("SELECT version_num FROM alembic_version") if row[0]}
    except sqlite3.OperationalError:  # no version table: never migrated
        return set()


def _shown(revisions: set[str]) -> str | None:
    return ", ".join(sorted(revisions)) if revisions else None


# -- the manifest ------------------------------------------------------------------------------------
def _read_manifest(source: Path) -> _Manifest:
    """The manifest, its shape checked: anything else is refused before a file is copied."""
    path = source / MANIFEST
    if not path.is_file():
        raise BackupError(f"{source} is not a kumitate backup (no {MANIFEST})")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise BackupError(f"{path} is not valid JSON ({_one_line(error)}): the backup is damaged") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("database"), str):
        raise BackupError(f"{path} is not a kumitate backup manifest (no `database` line)")
    if "format" not in raw:  # a release before checksums: {"created_at", "database", "files": <count>}
        if not isinstance(raw.get("files"), int):
            raise BackupError(f"{path} is not a kumitate backup manifest (`files` is not a count)")
        copied = raw["database"].startswith("copied")
        return _Manifest(1, raw["database"], SQLITE_FILE if copied else None, None, None)
    fmt = raw["format"]
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt > FORMAT or fmt < 2:
        raise BackupError(f"{path} has format {fmt!r}, which this kumitate does not read (it reads 1 to {FORMAT})")
    database_file, found, files = raw.get("database_file"), raw.get("schema_revision"), raw.get("files")
    if database_file not in (None, SQLITE_FILE) or not isinstance(found, str | None) or not isinstance(files, list):
        raise BackupError(f"{path} is not a kumitate backup manifest (database_file, schema_revision or files)")
    entries = [_entry(item, path) for item in files]
    listed = {e.path for e in entries}
    if len(listed) != len(entries):
        raise BackupError(f"{path} lists a file twice: the backup is damaged")
    if (database_file is not None) != (SQLITE_FILE in listed):
        raise BackupError(f"{path} disagrees with itself about {SQLITE_FILE}: the backup is damaged")
    return _Manifest(fmt, raw["database"], database_file, found, entries)


def _entry(item: object, manifest: Path) -> _Entry:
    if not isinstance(item, dict):
        raise BackupError(f"{manifest} is not a kumitate backup manifest (a file entry is not an object)")
    path, size, digest = item.get("path"), item.get("size"), item.get("sha256")
    if not isinstance(path, str) or not _safe(path):
        raise BackupError(f"{manifest} lists the path {path!r}, which is not inside the backup")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise BackupError(f"{manifest} gives {path} no size")
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        raise BackupError(f"{manifest} gives {path} no SHA-256")
    return _Entry(path, size, digest)


def _safe(relative: str) -> bool:
    """A relative path that stays inside the backup (a manifest never names `..` or an absolute path)."""
    parts = PurePosixPath(relative).parts
    return bool(parts) and not relative.startswith("/") and ".." not in parts and "\\" not in relative


def _plan(source: Path, manifest: _Manifest) -> tuple[list[_Entry], list[str]]:
    """The files to restore, each checked present; files the manifest does not list are left out (warned)."""
    here = [relative for _, relative in _files(source, skip={source / MANIFEST})]
    if manifest.files is None:
        plan = [_Entry(relative) for relative in here]
        if manifest.database_file and not (source / SQLITE_FILE).is_file():
            raise BackupError(
                f"{source} has no {SQLITE_FILE}, which its manifest says was copied: the backup is damaged"
            )
        return plan, [
            f"the backup's manifest has no checksums (written by an earlier kumitate): the database and DuckDB "
            f"files were checked, the other {sum(not _checkable(e.path) for e in plan)} files were not"
        ]
    for entry in manifest.files:
        if not (source / entry.path).is_file():
            raise BackupError(f"{source} has no {entry.path}, which its manifest lists: the backup is damaged")
    listed = {e.path for e in manifest.files}
    extra = [relative for relative in here if relative not in listed]
    if not extra:
        return manifest.files, []
    return manifest.files, [
        f"{len(extra)} files in the backup are not in its manifest and were left out ({extra[0]}, …)"
    ]


def _checkable(relative: str) -> bool:
    return relative == SQLITE_FILE or relative.endswith(DUCKDB_SUFFIX)


# -- copying and checking ----------------------------------------------------------------------------
def _copy_and_check(
    source: Path,
    plan: list[_Entry],
    manifest: _Manifest,
    stages: list[_Stage],
    data_dir: Path,
    export_dir: Path | None,
    settings: Any,
) -> tuple[int, str | None]:
    """Copy each planned file into its stage, comparing size and SHA-256 as it is copied; then check the
    staged database and DuckDB files. Returns how many files besides the database, and its revision."""
    exports = _export_root(stages, data_dir, export_dir)
    copied: list[tuple[str, Path]] = []
    for entry in plan:
        if entry.path.startswith(f"{EXPORT_DIR}/"):
            if exports is None:
                continue
            target = exports / entry.path.removeprefix(f"{EXPORT_DIR}/")
        else:
            target = stages[0].dir / entry.path
        size, digest = _copy(source / entry.path, target)
        if entry.size is not None and size != entry.size:
            raise BackupError(
                f"{source / entry.path} is {size} bytes, its manifest says {entry.size}: the backup is damaged"
            )
        if entry.sha256 is not None and digest != entry.sha256:
            raise BackupError(
                f"{source / entry.path} does not match its SHA-256 in the manifest: the backup is damaged"
            )
        copied.append((entry.path, target))
    found: str | None = None
    database = stages[0].dir / SQLITE_FILE
    if manifest.database_file is not None or database.is_file():
        found = _check_sqlite(database, source / SQLITE_FILE, manifest, settings)
    for relative, target in copied:
        if relative.endswith(DUCKDB_SUFFIX):
            _check_duckdb(target, source / relative)
    return len(copied) - (found is not None), found


def _export_root(stages: list[_Stage], data_dir: Path, export_dir: Path | None) -> Path | None:
    if export_dir is None:
        return None
    if len(stages) > 1:
        return stages[1].dir
    return stages[0].dir / export_dir.resolve().relative_to(data_dir.resolve())


def _check_sqlite(staged: Path, original: Path, manifest: _Manifest, settings: Any) -> str:
    """The staged copy passes SQLite's integrity check and carries a schema revision this kumitate knows."""
    if not staged.is_file() or staged.stat().st_size == 0:
        raise BackupError(
            f"{original} is {'empty (0 bytes)' if staged.is_file() else 'missing'}: the backup is damaged"
        )
    try:
        with closing(sqlite3.connect(f"file:{staged}?mode=ro", uri=True)) as conn:
            problems = [str(row[0]) for row in conn.execute("PRAGMA integrity_check").fetchall()]
            if problems != ["ok"]:
                more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
                raise BackupError(f"{original} fails SQLite's integrity check: {_one_line(problems[0])}{more}")
            versions = _versions(conn)
    except sqlite3.DatabaseError as error:
        raise BackupError(f"{original} is not a readable SQLite database ({_one_line(error)})") from None
    found = _shown(versions)
    if found is None:
        raise BackupError(f"{original} has no schema revision (no alembic_version row): not a kumitate database")
    if manifest.revision is not None and manifest.revision != found:
        raise BackupError(f"{original} is at revision {found}, its manifest says {manifest.revision}")
    heads, known = _known_revisions(settings)
    unknown = _shown(versions - known)
    if unknown:
        raise BackupError(
            f"{original} is at schema revision {unknown}, which this kumitate does not know (it is at "
            f"{heads}): restore it with the release that wrote it, or a newer one"
        )
    return found


def _known_revisions(settings: Any) -> tuple[str, set[str]]:
    """This project's heads and every revision a start can migrate from: the scripts of the runtime's and
    the services' version directories, and the revisions of earlier releases they are read as."""
    from kumitate.storage import migrate

    migrations = migrate.Migrations.discover(settings)
    return migrate.head(migrations), set(migrations.known())


def _check_duckdb(staged: Path, original: Path) -> None:
    """The staged copy opens read-only, and every table in it answers a row count.

    DuckDB is no dependency of the runtime: a data dir holds a DuckDB file only where a service that writes
    one is installed, and with it DuckDB. Imported by name, so the runtime's declared imports stay its own."""
    try:
        duckdb = importlib.import_module("duckdb")
    except ImportError:
        raise BackupError(f"cannot check {original}: duckdb is not installed (pip install duckdb)") from None
    try:
        with duckdb.connect(str(staged), read_only=True) as conn:
            tables = conn.execute(
                "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database()"
            ).fetchall()
            for schema, table in tables:
                conn.execute(f"SELECT count(*) FROM {_quoted(schema)}.{_quoted(table)}").fetchone()
    except duckdb.Error as error:
        reason = _one_line(str(error).replace(str(staged), str(original)))
        raise BackupError(f"{original} is not a readable DuckDB database ({reason})") from None


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _one_line(error: object) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 200 else text[:199] + "…"


# -- files -------------------------------------------------------------------------------------------
def _files(source: Path, *, skip: set[Path]) -> Iterator[tuple[Path, str]]:
    """The files under `source` (not the transient ones, not `skip`), with their relative POSIX paths."""
    for path in sorted(source.rglob("*")):
        if path in skip or any(parent in skip for parent in path.parents) or not path.is_file():
            continue
        if path.name.endswith(TRANSIENT_SUFFIXES) or path.name.startswith(TRANSIENT_PREFIXES):
            continue
        if "tmp" in path.relative_to(source).parts[:-1]:  # analytics' spill directories
            continue
        yield path, path.relative_to(source).as_posix()


def _copied(path: Path, target: Path, relative: str) -> list[dict[str, Any]]:
    """Copy one file of a live data dir into the backup: its manifest entry, or none when it expired
    and was removed while copying."""
    try:
        size, digest = _copy(path, target / relative)
    except FileNotFoundError:
        return []
    return [{"path": relative, "size": size, "sha256": digest}]


def _describe(path: Path, relative: str) -> dict[str, Any]:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK):
            digest.update(chunk)
    return {"path": relative, "size": path.stat().st_size, "sha256": digest.hexdigest()}


def _copy(source: Path, target: Path) -> tuple[int, str]:
    """Copy `source` to `target` (times and mode too), hashing the bytes written: the size and SHA-256."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest, size = hashlib.sha256(), 0
    with source.open("rb") as reader, target.open("wb") as writer:
        while chunk := reader.read(CHUNK):
            digest.update(chunk)
            writer.write(chunk)
            size += len(chunk)
    shutil.copystat(source, target)
    return size, digest.hexdigest()


# -- staging -----------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Stage:
    """A new directory that becomes `final` with one rename once everything in it is checked.

    It lies beside `final` (the same file system, so the rename is atomic and replaces an empty `final`).
    When `final` is a mount point (a container's volume) it cannot be renamed over, and when its parent
    may not be written nothing can be made beside it: then the stage lies inside it and its entries are
    renamed into place one by one."""

    final: Path
    dir: Path = field(init=False)
    inside: bool = field(init=False)
    existed: bool = field(init=False)
    created: list[Path] = field(init=False, default_factory=list)
    moved: list[str] = field(init=False, default_factory=list)
    done: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.final = self.final.resolve()  # a symlinked data dir: restore where it points
        self.existed = self.final.is_dir()
        self.inside = self.existed and os.path.ismount(self.final)
        token = secrets.token_hex(4)
        if not self.inside:
            for parent in reversed(self.final.parents):
                if not parent.exists():
                    parent.mkdir()
                    self.created.append(parent)
            self.dir = self.final.parent / f".{self.final.name}.restore-{token}"
            try:
                self.dir.mkdir()
            except PermissionError:  # a data dir the service may write, in a directory it may not
                if not self.existed:
                    raise
                self.inside = True
            else:
                if self.existed:
                    shutil.copymode(self.final, self.dir)
        if self.inside:
            self.dir = self.final / f".kumitate-restore-{token}"
            self.dir.mkdir()

    def commit(self) -> None:
        if self.inside:
            try:
                for child in sorted(self.dir.iterdir()):
                    child.rename(self.final / child.name)
                    self.moved.append(child.name)
            except BaseException:
                self.undo()
                raise
            self.dir.rmdir()
        else:
            os.rename(self.dir, self.final)  # replaces an empty directory in one step
        self.done = True

    def undo(self) -> None:
        """Put a committed stage back where it was staged (a later stage's commit failed)."""
        if self.inside:
            self.dir.mkdir(exist_ok=True)
            for name in self.moved:
                (self.final / name).rename(self.dir / name)
        else:
            os.rename(self.final, self.dir)
            if self.existed:
                self.final.mkdir()
        self.done = False

    def discard(self) -> None:
        if self.done:
            return
        shutil.rmtree(self.dir, ignore_errors=True)
        for parent in reversed(self.created):
            try:
                parent.rmdir()
            except OSError:
                break


def _commit(stages: list[_Stage]) -> None:
    """The export directory first, the data dir last; a failure puts back what was already renamed."""
    for index, stage in enumerate(reversed(stages)):
        try:
            stage.commit()
        except BaseException:
            for earlier in list(reversed(stages))[:index]:
                earlier.undo()
            raise
