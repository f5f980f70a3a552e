"""Alembic, driven from code: the migrations ship inside the package (kumitate/storage/migrations).

`ensure` runs at start-up: with auto-migration it upgrades to head under a lock (so two instances
starting together migrate once), and in every case it refuses to start when the database's schema
revision is not this release's head, with one line that says what to do.

Alembic (and the Mako and Pygments it brings) is imported only when there is something to do: a
database already at `HEAD` starts without it, which is most of a restart's import time saved.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, exc, text

from kumitate.storage import carry

if TYPE_CHECKING:
    from alembic.config import Config

HEAD = "0007_task_input"
"""The newest revision in kumitate/storage/migrations (a test holds it equal to Alembic's head): a
database found at it needs no migration, so start-up need not load Alembic to learn so."""
SCRIPT_LOCATION = "kumitate.storage:migrations"
ADVISORY_LOCK_ID = 0x6B756D69  # "kumi": one PostgreSQL advisory lock for schema changes


class StartupError(RuntimeError):
    """The database cannot be used at start-up; the message is one line that says what to do."""


class SchemaMismatchError(StartupError):
    """The database's schema revision is not the one this release expects."""


class DatabaseUnreachableError(StartupError):
    """The configured database does not answer."""


def config(connection: Connection | None = None) -> Config:
    """The Alembic configuration of the packaged migrations, on `connection` when given."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    cfg.attributes["connection"] = connection
    return cfg


def head() -> str:
    """The newest revision of the packaged migrations: what the code expects."""
    from alembic.script import ScriptDirectory

    revision = ScriptDirectory.from_config(config()).get_current_head()
    assert revision is not None, "kumitate/storage/migrations has no revision"
    return revision


def current(engine: Engine) -> str | None:
    """The revision the database is at, or None for a database never migrated."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Apply pending migrations (idempotent); returns (revision before, revision after)."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    with _schema_lock(engine) as conn:
        before = MigrationContext.configure(conn).get_current_revision()
        _check_known(before, engine)
        if before != head():
            command.upgrade(config(conn), "head")
            conn.commit()
    return before, head()


@contextmanager
def reachable(engine: Engine) -> Iterator[None]:
    """Turn "connection refused" and friends into one line naming the database (password hidden)."""
    try:
        yield
    except exc.OperationalError as error:
        reason = str(error.orig or error).strip().splitlines()[0]
        raise DatabaseUnreachableError(
            f"cannot open the database {_where(engine)}: {reason} (check KUMITATE_DATABASE_URL and that it is running)"
        ) from error


def ensure(engine: Engine, *, auto_upgrade: bool) -> None:
    """Refuse a database this release does not know (before taking the migration lock: a newer database is
    left exactly as it was), else migrate it when allowed (saying so) and check it is at head."""
    with reachable(engine):
        if _at_head(engine):
            return
        _check_known(current(engine), engine)
        if auto_upgrade:
            before, after = upgrade(engine)
            if before != after:
                done = f"created at revision {after}" if before is None else f"upgraded from {before} to {after}"
                carry.announce("database", f"schema {done} ({_where(engine)})", revision=after)
        found, expected = current(engine), head()
    _check_known(found, engine)
    if found != expected:
        raise SchemaMismatchError(
            f"database schema is at revision {found or 'none'} but this kumitate needs {expected} "
            f"({_where(engine)}): run `kumitate db upgrade`, or let start-up migrate (KUMITATE_DB_MIGRATE=auto)"
        )


def _at_head(engine: Engine) -> bool:
    """The database is at `HEAD`, read with one query (False when it has no version table yet)."""
    with engine.connect() as conn:
        try:
            versions = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
        except (exc.ProgrammingError, exc.OperationalError):
            return False
    return versions == [HEAD]


def _check_known(found: str | None, engine: Engine) -> None:
    if found is None:
        return
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(config())
    if found not in {s.revision for s in scripts.walk_revisions()}:
        raise SchemaMismatchError(
            f"database schema revision {found} is newer than this kumitate (head {head()}) "
            f"({_where(engine)}): upgrade kumitate on every instance, or point it at another database"
        )


def _where(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=True)


@contextmanager
def _schema_lock(engine: Engine) -> Iterator[Connection]:
    """One migrator at a time: an advisory lock on PostgreSQL, a lock file beside the SQLite file."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:id)"), {"id": ADVISORY_LOCK_ID})
            conn.commit()
            try:
                yield conn
            finally:
                conn.rollback()
                conn.execute(text("SELECT pg_advisory_unlock(:id)"), {"id": ADVISORY_LOCK_ID})
                conn.commit()
        return
    database = engine.url.database
    lock_path = Path(f"{database}.migrate.lock") if database and database != ":memory:" else None
    if lock_path is None:
        with engine.connect() as conn:
            yield conn
        return
    with lock_path.open("a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            with engine.connect() as conn:
                yield conn
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)
