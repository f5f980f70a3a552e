"""Issue 43: the services own their tables and migrations. A database of the release before (one linear chain
at 0007_task_input that also created the five services' tables) upgrades in place: every row of every
service kept, the SQLite file copied first, each service's branch adopting the table it finds; a project
gets the runtime's tables and its own services' only; newer revisions are refused and left untouched."""

from __future__ import annotations

import gzip
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from kumitate.serving.deploy import DeploySettings
from kumitate.storage import SchemaMismatchError, migrate, open_database
from kumitate.storage import engine as engines
from tests.storage import pre_split

RUNTIME_TABLES = {"alembic_version", "idempotency", "tasks"}


def deploy(database_url: str | None, **extra: object) -> DeploySettings:
    return DeploySettings.model_validate({"database_url": database_url} | extra)


@contextmanager
def announced() -> Iterator[list[str]]:
    """The lines a start-up step logs at the default level (kumitate.storage.carry.announce)."""
    records: list[logging.LogRecord] = []
    catcher = logging.Handler()
    catcher.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("kumitate.calls")
    level = logger.level
    logger.addHandler(catcher)
    logger.setLevel(logging.INFO)
    lines: list[str] = []
    try:
        yield lines
    finally:
        logger.removeHandler(catcher)
        logger.setLevel(level)
        lines += [r.getMessage() for r in records if "upgrade" in getattr(r, "fields", {})]


def old_data_dir(target: Path) -> Path:
    """The data dir the release before wrote (its own `kumitate db upgrade`, then pre_split.insert)."""
    target.mkdir(parents=True)
    packed = (pre_split.FIXTURE / "kumitate.sqlite3.gz").read_bytes()
    (target / engines.SQLITE_FILE).write_bytes(gzip.decompress(packed))
    return target


def test_a_data_dir_of_the_release_before_keeps_every_row_and_a_copy_of_its_database(tmp_path: Path) -> None:
    data_dir = old_data_dir(tmp_path / "var")
    with closing(sqlite3.connect(data_dir / engines.SQLITE_FILE)) as old:
        assert old.execute("SELECT version_num FROM alembic_version").fetchall() == [(pre_split.OLD_HEAD,)]
    with announced() as lines:
        db = open_database(data_dir, deploy(None))
    try:
        assert migrate.current(db.engine) == migrate.head()
        assert pre_split.read(db.engine) == pre_split.ROWS
    finally:
        db.close()
    copies = list(data_dir.glob("kumitate.sqlite3.pre-upgrade-2*"))
    assert len(copies) == 1, copies
    with closing(sqlite3.connect(copies[0])) as kept:  # the database as it was, untouched by the migration
        assert kept.execute("SELECT version_num FROM alembic_version").fetchall() == [(pre_split.OLD_HEAD,)]
        assert kept.execute("SELECT count(*) FROM household_transactions").fetchone() == (2,)
    assert lines[0] == (
        f"database: kept a copy of {data_dir / engines.SQLITE_FILE} at revision {pre_split.OLD_HEAD}"
        f" before migrating it, as {copies[0].name}"
    )
    assert lines[1].startswith(f"database: schema upgraded from {pre_split.OLD_HEAD} to {migrate.head()} (")
    with announced() as again:  # a second start changes nothing, copies nothing, says nothing
        open_database(data_dir, deploy(None)).close()
    assert again == [] and len(list(data_dir.glob("kumitate.sqlite3.pre-upgrade-*"))) == 1


def test_the_release_before_upgrades_in_place_on_both_engines(database_url: str | None, tmp_path: Path) -> None:
    """Its seven scripts (verbatim) build the old schema, on SQLite or PostgreSQL; this release adopts it."""
    old = engines.create(engines.database_url(database_url, tmp_path))
    try:
        pre_split.build(old)
        pre_split.insert(old)
    finally:
        old.dispose()
    db = open_database(tmp_path, deploy(database_url))
    try:
        with db.engine.connect() as conn:
            versions = set(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
        assert versions == {migrate.HEAD, "analytics_0001", "attendance_0001", "household_0001", "yana_0001"}
        assert pre_split.read(db.engine) == pre_split.ROWS
    finally:
        db.close()


def test_a_database_older_than_the_last_release_upgrades_through_the_old_revisions(tmp_path: Path) -> None:
    """At 0004_household (no yana, no tasks yet): read as the runtime's 0001, the rest is created or adopted."""
    old = engines.create(engines.database_url(None, tmp_path))
    with old.connect() as conn:
        from alembic import command
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", str(pre_split.FIXTURE))
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0004_household")
        conn.commit()
        conn.execute(text("INSERT INTO attendance_rules VALUES ('t', 1, '{}', '2026-01-01T00:00:00.000Z')"))
        conn.commit()
    old.dispose()
    db = open_database(tmp_path, deploy(None))
    try:
        assert migrate.current(db.engine) == migrate.head()
        assert {"tasks", "yana_labels", "household_transactions"} <= set(inspect(db.engine).get_table_names())
        with db.read() as conn:
            assert conn.execute(text("SELECT thread_id FROM attendance_rules")).scalars().all() == ["t"]
            assert "questions" in {c["name"] for c in inspect(conn).get_columns("tasks")}
    finally:
        db.close()


def test_a_project_gets_the_runtime_s_tables_and_its_own_services_only(tmp_path: Path) -> None:
    """A project whose only service keeps no tables (stays) gets idempotency and tasks, nothing else."""
    (tmp_path / "project" / "handlers" / "stays").mkdir(parents=True)
    from kumitate.project import Project

    migrations = migrate.Migrations.of(Project.at(tmp_path / "project"))
    assert migrations.services == {}
    db = open_database(tmp_path / "var", deploy(None), migrations)
    try:
        assert set(inspect(db.engine).get_table_names()) == RUNTIME_TABLES
        assert migrate.current(db.engine) == migrate.HEAD
    finally:
        db.close()


def test_a_revision_this_release_does_not_know_is_refused_and_left_untouched(tmp_path: Path) -> None:
    db = open_database(tmp_path, deploy(None))
    with db.transaction() as conn:
        conn.execute(text("INSERT INTO alembic_version VALUES ('loans_0001')"))
    db.close()
    before = (tmp_path / engines.SQLITE_FILE).read_bytes()
    with pytest.raises(SchemaMismatchError) as refused:
        open_database(tmp_path, deploy(None))
    message = str(refused.value)
    assert "\n" not in message and "revision loans_0001 is newer than this kumitate, or of a service" in message
    assert (tmp_path / engines.SQLITE_FILE).read_bytes() == before
    assert not list(tmp_path.glob("*.pre-upgrade-*"))


def test_a_database_behind_with_migration_off_names_every_branch(tmp_path: Path) -> None:
    data_dir = old_data_dir(tmp_path / "var")
    with pytest.raises(SchemaMismatchError) as refused:
        open_database(data_dir, deploy(None, db_migrate="off"))
    message = str(refused.value)
    assert f"at revision {pre_split.OLD_HEAD} but this kumitate needs {migrate.head()}" in message
    assert "kumitate db upgrade" in message and not list(data_dir.glob("*.pre-upgrade-*"))
