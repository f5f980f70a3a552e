"""Alembic, driven from code: the runtime's migrations and each service's, one branch each.

The runtime's own tables (`idempotency`, `tasks`) are migrated by kumitate/storage/migrations/versions
(branch `kumitate`). Every service that keeps tables owns a version directory next to its code,
`<handlers>/<service>/migrations/`, whose first revision carries the branch label `<service>`: Alembic
reads all of them as one script directory (`version_locations`) and `upgrade heads` applies every
branch. The services are those of the project (kumitate.project): its `handlers/` directory, not the
subset an instance serves, so every instance of a deployment expects the same set of revisions and the
database holds the runtime's tables and the project's services' only.

`ensure` runs at start-up: with auto-migration it upgrades to the heads under a lock (so two instances
starting together migrate once), and in every case it refuses to start when the database's revisions
are not this release's heads, with one line that says what to do.

Alembic (and the Mako and Pygments it brings) is imported only when there is something to do: the
expected heads are read from the scripts' `revision` / `down_revision` lines (`Migrations.expected`),
so a database already at them starts without Alembic, which is most of a restart's import time saved.

Databases of the releases before the split (one linear chain that also created the bundled services'
tables) are carried over: a service's first script names the revision of that chain it takes over
(`replaces`), a database at it is read as at the runtime's `SPLIT_FROM`, and the service's first
revision adopts a table that an earlier release already created instead of creating it, so every row
stays where it is.
"""

from __future__ import annotations

import argparse
import ast
import fcntl
import os
import re
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, exc, text

from kumitate.storage import carry

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from kumitate.project import Project

__all__ = [
    "HEAD",
    "RUNTIME_BRANCH",
    "SPLIT_FROM",
    "DatabaseUnreachableError",
    "Migrations",
    "RevisionError",
    "SchemaMismatchError",
    "StartupError",
    "current",
    "ensure",
    "head",
    "new_revision",
    "upgrade",
]

HEAD = "0007_task_input"
"""The newest revision of the runtime's own branch (a test holds it equal to Alembic's head of it)."""
RUNTIME_BRANCH = "kumitate"
"""The branch label of the runtime's chain (0001 -> 0006_tasks -> 0007_task_input)."""
SCRIPT_LOCATION = "kumitate.storage:migrations"
RUNTIME_VERSIONS = Path(__file__).with_name("migrations") / "versions"
SERVICE_MIGRATIONS = "migrations"
"""A service's version directory, inside its handlers package: `<handlers>/<service>/migrations/`."""
SPLIT_FROM = "0001"
"""Where the runtime's chain stood before the revisions that created services' tables, when it was one
chain: a database at a revision a service's script `replaces` is read as at this one (its service's
branch then adopts the tables that revision created)."""
ADVISORY_LOCK_ID = 0x6B756D69  # "kumi": one PostgreSQL advisory lock for schema changes
_ASSIGNMENT = r"^{name}\s*(?::[^=\n]*)?=\s*(.+?)\s*$"
_REVISION = re.compile(_ASSIGNMENT.format(name="revision"), re.MULTILINE)
_DOWN_REVISION = re.compile(_ASSIGNMENT.format(name="down_revision"), re.MULTILINE)
_REPLACES = re.compile(_ASSIGNMENT.format(name="replaces"), re.MULTILINE)


class StartupError(RuntimeError):
    """The database cannot be used at start-up; the message is one line that says what to do."""


class SchemaMismatchError(StartupError):
    """The database's schema revisions are not the ones this release expects."""


class DatabaseUnreachableError(StartupError):
    """The configured database does not answer."""


@dataclass(frozen=True, slots=True)
class Migrations:
    """The version directories a database is migrated with: the runtime's, then each service's by name."""

    services: Mapping[str, Path] = field(default_factory=dict)
    """Service name (its branch label) -> its version directory."""

    @classmethod
    def of(cls, project: Project) -> Migrations:
        """The runtime's migrations and those of every service of `project` that has a
        `handlers/<service>/migrations/` directory."""
        handlers = project.handlers
        found = sorted(p for p in handlers.glob(f"*/{SERVICE_MIGRATIONS}") if p.is_dir()) if handlers.is_dir() else []
        return cls({p.parent.name: p for p in found})

    @classmethod
    def discover(cls, settings: Any = None) -> Migrations:
        """The migrations of the project `settings` names (KUMITATE_PROJECT), else of the project around
        the working directory, else of this source checkout (as the runtime finds its project)."""
        from kumitate.project import Project

        load = getattr(settings, "load_project", None)
        return cls.of(load() if callable(load) else Project.discover())

    @property
    def locations(self) -> list[Path]:
        """Every version directory, the runtime's first."""
        return [RUNTIME_VERSIONS, *self.services.values()]

    def expected(self) -> frozenset[str] | None:
        """The heads, read from the scripts without Alembic (None when a script is not in the plain form
        `revision = "…"` / `down_revision = …`: then only Alembic can tell)."""
        revisions: set[str] = set()
        parents: set[str] = set()
        for directory in self.locations:
            for script in directory.glob("*.py"):
                if script.name == "__init__.py" or script.name.startswith(".#"):
                    continue
                source = script.read_text(encoding="utf-8")
                found, down = _REVISION.search(source), _DOWN_REVISION.search(source)
                if found is None or down is None:
                    return None
                try:
                    revision, parent = ast.literal_eval(found.group(1)), ast.literal_eval(down.group(1))
                except (ValueError, SyntaxError):
                    return None
                if not isinstance(revision, str):
                    return None
                revisions.add(revision)
                parent = () if parent is None else (parent,) if isinstance(parent, str) else parent
                if not isinstance(parent, tuple | list) or not all(isinstance(p, str) for p in parent):
                    return None
                parents.update(parent)
        return frozenset(revisions - parents)

    def replaced(self) -> frozenset[str]:
        """Revisions of the runtime's one chain before the split that a service's first script took over
        (its module-level `replaces = "…"`): known, and read as `SPLIT_FROM`."""
        found: set[str] = set()
        for directory in self.services.values():
            for script in directory.glob("*.py"):
                match = _REPLACES.search(script.read_text(encoding="utf-8"))
                if match is not None:
                    value = ast.literal_eval(match.group(1))
                    found.update((value,) if isinstance(value, str) else value)
        return frozenset(found)

    def known(self) -> frozenset[str]:
        """Every revision a database may be at for these migrations to take it: their scripts' and those
        the services' scripts replace."""
        return frozenset(s.revision for s in self.scripts().walk_revisions()) | self.replaced()

    def config(self, connection: Connection | None = None) -> Config:
        """The Alembic configuration of these version directories, on `connection` when given."""
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", SCRIPT_LOCATION)
        cfg.set_main_option("path_separator", "os")
        locations = os.pathsep.join(str(p) for p in self.locations)
        cfg.set_main_option("version_locations", locations.replace("%", "%%"))
        cfg.attributes["connection"] = connection
        return cfg

    def scripts(self) -> ScriptDirectory:
        """Alembic's view of every version directory."""
        from alembic.script import ScriptDirectory

        return ScriptDirectory.from_config(self.config())

    def heads(self) -> frozenset[str]:
        """The newest revision of every branch, as Alembic reads them: what the code expects."""
        return frozenset(self.scripts().get_heads())


def shown(revisions: frozenset[str] | set[str] | None) -> str | None:
    """Revisions as one sorted, comma-separated string (the runtime's first: digits sort before letters)."""
    return ", ".join(sorted(revisions)) if revisions else None


def head(migrations: Migrations | None = None) -> str:
    """Every branch's newest revision, as one string: what the code expects."""
    revisions = shown((migrations or Migrations.discover()).heads())
    assert revisions is not None, "kumitate/storage/migrations has no revision"
    return revisions


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
    with _schema_lock(engine) as conn:
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
                carry.announce("database", f"schema {done} ({_where(engine)})", revision=after)
        found, wanted = _read_versions(engine), migrations.heads()
    _check_known(found, engine, migrations)
    if found != wanted:
        raise SchemaMismatchError(
            f"database schema is at revision {shown(found) or 'none'} but this kumitate needs {shown(wanted)} "
            f"({_where(engine)}): run `kumitate db upgrade`, or let start-up migrate (KUMITATE_DB_MIGRATE=auto)"
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
            f"project does not have (heads {shown(migrations.heads())}) ({_where(engine)}): "
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


class RevisionError(ValueError):
    """A service's next migration cannot be written; the message says why in one line."""


def new_revision(project: Project, service: str, message: str, *, autogenerate: bool = True) -> tuple[Path, bool]:
    """Write `service`'s next migration into `<handlers>/<service>/migrations/` (the directory and the
    branch are made for its first); returns the file and whether it was autogenerated.

    Autogenerate compares the `metadata` of the service's `store` module (`handlers.<service>.store`)
    with a scratch SQLite database migrated to every head, never with a live one: what it writes is
    the difference between the declared tables and what the migrations already make, for this
    service's tables only. A service without that metadata (or with `autogenerate=False`) gets an
    empty migration to fill in."""
    import importlib
    import tempfile

    from alembic import command
    from sqlalchemy import MetaData, create_engine

    if not re.fullmatch(r"[a-z][a-z0-9_]{0,31}", service) or service == RUNTIME_BRANCH:
        raise RevisionError(f"service name {service!r} must be snake_case (a-z first) and not {RUNTIME_BRANCH!r}")
    package = project.handlers / service
    if not package.is_dir():
        raise RevisionError(f"no service {service!r} here: {package} does not exist")
    directory = package / SERVICE_MIGRATIONS
    first = not directory.is_dir()
    if first:
        directory.mkdir()
        (directory / "__init__.py").write_text(
            f'"""{service}\'s migrations: one Alembic branch (label `{service}`), applied by `kumitate db upgrade`."""\n',
            encoding="utf-8",
        )
    migrations = Migrations.of(project)
    metadata: MetaData | None = None
    if autogenerate:
        project.activate()
        try:
            store = importlib.import_module(f"handlers.{service}.store")
        except ModuleNotFoundError as error:
            if error.name not in {f"handlers.{service}.store", f"handlers.{service}"}:
                raise
        else:
            found = getattr(store, "metadata", None)
            metadata = found if isinstance(found, MetaData) else None
    number = 1 + sum(1 for p in directory.glob("*.py") if p.name != "__init__.py")
    with tempfile.TemporaryDirectory(prefix="kumitate-revision-") as scratch:
        engine = create_engine(f"sqlite:///{Path(scratch) / 'scratch.sqlite3'}")
        try:
            with engine.connect() as conn:
                command.upgrade(migrations.config(conn), "heads")
                conn.commit()
                cfg = migrations.config(conn)
                cfg.cmd_opts = argparse.Namespace(quiet=True)  # the command line says what was written
                if metadata is not None:
                    tables = set(metadata.tables)
                    cfg.attributes["target_metadata"] = metadata
                    cfg.attributes["include_object"] = lambda obj, name, kind, reflected, compare_to: (
                        (name if kind == "table" else getattr(getattr(obj, "table", None), "name", None)) in tables
                    )
                cfg.set_main_option("file_template", "%%(rev)s_%%(slug)s")
                script = command.revision(
                    cfg,
                    message=message,
                    autogenerate=metadata is not None,
                    head="base" if first else f"{service}@head",
                    branch_label=service if first else None,
                    version_path=str(directory),
                    rev_id=f"{service}_{number:04d}",
                )
        finally:
            engine.dispose()
    assert script is not None and not isinstance(script, list)
    return Path(script.path), metadata is not None
