"""A restore's checks of the staged copies, before anything is renamed into place: SQLite's integrity
check and a schema revision this kumitate knows, and that every DuckDB file opens and reads."""

from __future__ import annotations

import importlib
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

from kumitate.storage.backup.manifest import Manifest
from kumitate.storage.backup.report import BackupError, one_line

if TYPE_CHECKING:
    from kumitate.settings.storage import DeploySettings


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


def check_sqlite(staged: Path, original: Path, manifest: Manifest, settings: DeploySettings | None) -> str:
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
                raise BackupError(f"{original} fails SQLite's integrity check: {one_line(problems[0])}{more}")
            versions = _versions(conn)
    except sqlite3.DatabaseError as error:
        raise BackupError(f"{original} is not a readable SQLite database ({one_line(error)})") from None
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


def _known_revisions(settings: DeploySettings | None) -> tuple[str, set[str]]:
    """This project's heads and every revision a start can migrate from: the scripts of the runtime's and
    the services' version directories, and the revisions of earlier releases they are read as."""
    from kumitate.storage.migrate import Migrations, head

    migrations = Migrations.discover(settings)
    return head(migrations), set(migrations.known())


def check_duckdb(staged: Path, original: Path) -> None:
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
        reason = one_line(str(error).replace(str(staged), str(original)))
        raise BackupError(f"{original} is not a readable DuckDB database ({reason})") from None


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
