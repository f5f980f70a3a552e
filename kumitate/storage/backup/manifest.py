"""The backup's manifest, `kumitate-backup.json`: its shape, read and checked before a file is copied,
and the plan of files a restore copies from it.

Format 2 lists every file with its size and SHA-256 and names the schema revision; a backup of an earlier
release (format 1, no `format` line) has no checksums: its database and DuckDB files are checked, the other
files cannot be, and the restore says so in a warning.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kumitate.storage.backup.files import files
from kumitate.storage.backup.report import BackupError, one_line
from kumitate.storage.engine import SQLITE_FILE

MANIFEST = "kumitate-backup.json"
FORMAT = 2
"""The manifest's format: 2 lists every file with its size and SHA-256; a manifest without `format` (1)
was written by a release before checksums."""
EXPORT_DIR = "export-dir"
"""Where a backup keeps the export directory when it lies outside the data dir."""
DUCKDB_SUFFIX = ".duckdb"
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Entry:
    """One file the manifest lists (a format-1 backup's files have no size or checksum to compare)."""

    path: str
    size: int | None = None
    sha256: str | None = None


@dataclass(slots=True)
class Manifest:
    """A manifest read and checked: what the backup says it holds."""

    format: int
    database: str
    database_file: str | None
    revision: str | None
    files: list[Entry] | None
    """None for a manifest of format 1 (no list: every file of the backup is restored)."""


def read_manifest(source: Path) -> Manifest:
    """The manifest, its shape checked: anything else is refused before a file is copied."""
    path = source / MANIFEST
    if not path.is_file():
        raise BackupError(f"{source} is not a kumitate backup (no {MANIFEST})")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise BackupError(f"{path} is not valid JSON ({one_line(error)}): the backup is damaged") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("database"), str):
        raise BackupError(f"{path} is not a kumitate backup manifest (no `database` line)")
    if "format" not in raw:  # a release before checksums: {"created_at", "database", "files": <count>}
        if not isinstance(raw.get("files"), int):
            raise BackupError(f"{path} is not a kumitate backup manifest (`files` is not a count)")
        copied = raw["database"].startswith("copied")
        return Manifest(1, raw["database"], SQLITE_FILE if copied else None, None, None)
    fmt = raw["format"]
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt > FORMAT or fmt < 2:
        raise BackupError(f"{path} has format {fmt!r}, which this kumitate does not read (it reads 1 to {FORMAT})")
    database_file, found, listing = raw.get("database_file"), raw.get("schema_revision"), raw.get("files")
    if database_file not in (None, SQLITE_FILE) or not isinstance(found, str | None) or not isinstance(listing, list):
        raise BackupError(f"{path} is not a kumitate backup manifest (database_file, schema_revision or files)")
    entries = [_entry(item, path) for item in listing]
    listed = {e.path for e in entries}
    if len(listed) != len(entries):
        raise BackupError(f"{path} lists a file twice: the backup is damaged")
    if (database_file is not None) != (SQLITE_FILE in listed):
        raise BackupError(f"{path} disagrees with itself about {SQLITE_FILE}: the backup is damaged")
    return Manifest(fmt, raw["database"], database_file, found, entries)


def _entry(item: object, manifest: Path) -> Entry:
    if not isinstance(item, dict):
        raise BackupError(f"{manifest} is not a kumitate backup manifest (a file entry is not an object)")
    path, size, digest = item.get("path"), item.get("size"), item.get("sha256")
    if not isinstance(path, str) or not _safe(path):
        raise BackupError(f"{manifest} lists the path {path!r}, which is not inside the backup")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise BackupError(f"{manifest} gives {path} no size")
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        raise BackupError(f"{manifest} gives {path} no SHA-256")
    return Entry(path, size, digest)


def _safe(relative: str) -> bool:
    """A relative path that stays inside the backup (a manifest never names `..` or an absolute path)."""
    parts = PurePosixPath(relative).parts
    return bool(parts) and not relative.startswith("/") and ".." not in parts and "\\" not in relative


def plan(source: Path, manifest: Manifest) -> tuple[list[Entry], list[str]]:
    """The files to restore, each checked present; files the manifest does not list are left out (warned)."""
    here = [relative for _, relative in files(source, skip={source / MANIFEST})]
    if manifest.files is None:
        planned = [Entry(relative) for relative in here]
        if manifest.database_file and not (source / SQLITE_FILE).is_file():
            raise BackupError(
                f"{source} has no {SQLITE_FILE}, which its manifest says was copied: the backup is damaged"
            )
        return planned, [
            f"the backup's manifest has no checksums (written by an earlier kumitate): the database and DuckDB "
            f"files were checked, the other {sum(not _checkable(e.path) for e in planned)} files were not"
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
