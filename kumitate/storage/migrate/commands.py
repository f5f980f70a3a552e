"""What the database is at, and bringing it to the heads: `current`, `upgrade` and, at start-up, `ensure`.

`ensure` runs at start-up: with auto-migration it upgrades to the heads under a lock (so two instances
starting together migrate once), and in every case it refuses to start when the database's revisions
are not this release's heads, with one line that says what to do.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from sqlalchemy import Connection, Engine, exc, text

from kumitate.storage import carry
from kumitate.storage.migrate.branches import SPLIT_FROM, Migrations, shown
from kumitate.storage.migrate.errors import SchemaMismatchError, reachable, where
from kumitate.storage.migrate.lock import schema_lock


def current(engine: Engine) -> str | None:
    """The revisions the database is at (one per branch), or None for a database never migrated."""
    with engine.connect() as conn:
        return shown(_versions(conn))


def upgrade(engine: Engine, migrations: Migrations | None = None) -> tuple[str | None, str]:
    """Apply pending migrations of every branch (idempotent); returns (revisions before, revisions after).

    A SQLite file that already holds data is copied first (`kumitate.sqlite3.pre-upgrade-<UTC time>`,
    never over an earlier copy); PostgreSQL is left to pg_dump (docs/deployment.md, Upgrading)."""
    from alembic import command

    migrations = migrations or Migrations.discover()
    expected = migrations.heads()
    with schema_lock(engine) as conn:
        found = _versions(conn)
        before = shown(found)
        _check_known(found, engine, migrations)
        if found != expected:
            _keep_copy(engine, before)
            replaced = found & migrations.replaced()
            for old in sorted(replaced):  # one at most: the one chain had one row
                conn.execute(text("DELETE FROM alembic_version WHERE version_num = :old"), {"old": old})
            if replaced and SPLIT_FROM not in found:
                conn.execute(text("INSERT INTO alembic_version (version_num) VALUES (:new)"), {"new": SPLIT_FROM})
            command.upgrade(migrations.config(conn), "heads")
            conn.commit()
    after = shown(expected)
    assert after is not None
    return before, after


def ensure(engine: Engine, *, auto_upgrade: bool, migrations: Migrations | None = None) -> None:
    """Refuse a database this release does not know (before taking the migration lock: a newer database is
    left exactly as it was), else migrate it when allowed (saying so) and check it is at the heads."""
    migrations = migrations or Migrations.discover()
    with reachable(engine):
        expected = migrations.expected()
        if expected is not None and _read_versions(engine) == expected:
            return
        _check_known(_read_versions(engine), engine, migrations)
        if auto_upgrade:
            before, after = upgrade(engine, migrations)
            if before != after:
                done = f"created at revision {after}" if before is None else f"upgraded from {before} to {after}"
                carry.announce("database", f"schema {done} ({where(engine)})", revision=after)
        found, wanted = _read_versions(engine), migrations.heads()
    _check_known(found, engine, migrations)
    if found != wanted:
        raise SchemaMismatchError(
            f"database schema is at revision {shown(found) or 'none'} but this kumitate needs {shown(wanted)} "
            f"({where(engine)}): run `kumitate db upgrade`, or let start-up migrate (KUMITATE_DB_MIGRATE=auto)"
        )


def _read_versions(engine: Engine) -> frozenset[str]:
    with engine.connect() as conn:
        return _versions(conn)


def _versions(conn: Connection) -> frozenset[str]:
    """The rows of alembic_version, read with one query (empty when there is no version table yet)."""
    try:
        rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except (exc.ProgrammingError, exc.OperationalError):
        conn.rollback()  # PostgreSQL refuses anything more in a transaction after an error
        return frozenset()
    return frozenset(rows)


def _check_known(found: frozenset[str], engine: Engine, migrations: Migrations) -> None:
    if not found or found == migrations.expected():
        return
    unknown = sorted(found - migrations.known())
    if unknown:
        raise SchemaMismatchError(
            f"database schema revision {', '.join(unknown)} is newer than this kumitate, or of a service this "
            f"project does not have (heads {shown(migrations.heads())}) ({where(engine)}): "
            "upgrade kumitate on every instance, or point it at another database"
        )


def _keep_copy(engine: Engine, before: str | None) -> None:
    """Before a SQLite file that holds data is migrated, a copy of it beside it (SQLite's backup API)."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or before is None or not database or database == ":memory:":
        return
    path = Path(database)
    if not path.is_file():
        return
    copy = carry.reserve(path, "pre-upgrade")
    with closing(sqlite3.connect(f"file:{path}?mode=rw", uri=True)) as live, closing(sqlite3.connect(copy)) as kept:
        live.backup(kept)
        kept.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
    carry.announce(
        "database",
        f"kept a copy of {path} at revision {before} before migrating it, as {copy.name}",
        revision=before,
        kept=str(copy),
    )
