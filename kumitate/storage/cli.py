"""`kumitate db upgrade | current | backup PATH | restore PATH`: the storage layer's schema and data.

`current` only looks: with the embedded default it opens an existing file without creating anything.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a `db` command runs: `kumitate serve` and `mcp` never load them here
    from kumitate.settings import Settings

ACTIONS = {
    "upgrade": "apply pending migrations",
    "current": "print the schema revision (creates nothing)",
    "backup": "copy the database and the data dir's files into PATH (a new directory), consistent while serving",
    "restore": "check the backup in PATH (manifest, checksums, databases), then put it in place of a fresh data dir",
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `kumitate db` (upgrade, revision, backup, restore) to the command line."""
    db = sub.add_parser("db", help="database schema and data: upgrade, show the revision, back up, restore")
    db.add_argument("action", choices=list(ACTIONS), help="; ".join(f"{k}: {v}" for k, v in ACTIONS.items()))
    db.add_argument("path", nargs="?", type=Path, help="the backup directory (backup, restore)")
    db.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from kumitate.settings import Settings
    from kumitate.storage import engine as engines
    from kumitate.storage import migrate

    settings = Settings.from_env()
    if args.action in {"backup", "restore"}:
        return _copy(args.action, args.path, settings)
    url = engines.database_url(settings.database_url, settings.data_dir)
    if args.action == "current" and not settings.database_url:
        return _current_file(settings.data_dir / engines.SQLITE_FILE, url)
    engine = engines.create(url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
    where = engine.url.render_as_string(hide_password=True)
    try:
        with migrate.reachable(engine):
            if args.action == "upgrade":
                before, after = migrate.upgrade(engine)
                done = f"{before or 'empty'} -> {after}" if before != after else f"at {after}, nothing to do"
                print(f"{where}: {done}")
            else:
                print(f"{where}: at {migrate.current(engine) or 'none'} (this kumitate needs {migrate.head()})")
    finally:
        engine.dispose()
    return 0


def _current_file(path: Path, url: str) -> int:
    from kumitate.storage import backup as backups
    from kumitate.storage import migrate

    if not path.is_file():
        print(f"{url}: no database yet, nothing created (this kumitate needs {migrate.head()})")
    else:
        print(f"{url}: at {backups.revision(path) or 'none'} (this kumitate needs {migrate.head()})")
    return 0


def _copy(action: str, path: Path | None, settings: Settings) -> int:
    from kumitate.clients.analytics import ExportLocation
    from kumitate.storage import backup as backups

    if path is None:
        raise SystemExit(f"kumitate db {action}: give the backup directory, e.g. kumitate db {action} /backups/today")
    export_dir = ExportLocation.from_env(settings.env).export_dir
    try:
        if action == "backup":
            report = backups.backup(
                settings.data_dir, path, export_dir=export_dir, postgres=bool(settings.database_url)
            )
            print(f"backed up {settings.data_dir} into {path}: database {report.database}, {report.files} files")
        else:
            report = backups.restore(path, settings.data_dir, export_dir=export_dir, settings=settings)
            for warning in report.warnings:
                print(f"kumitate db restore: warning: {warning}", file=sys.stderr)
            print(f"restored {path} into {settings.data_dir}: {report.database}, {report.files} files")
    except backups.BackupError as error:
        raise SystemExit(f"kumitate db {action}: {error}") from None
    return 0
