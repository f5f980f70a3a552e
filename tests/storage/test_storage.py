"""The storage layer on both engines: migrations, the version check, transactions under the commit gate."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import select, text

from kumitate.context import CallContext, bound
from kumitate.errors import ToolError
from kumitate.serving.deploy import DeploySettings
from kumitate.storage import SchemaMismatchError, StartupError, migrate, open_database
from kumitate.storage import engine as engines
from kumitate.storage.schema import idempotency

REPO = Path(__file__).resolve().parents[2]


def deploy(url: str | None, **kw: object) -> DeploySettings:
    return DeploySettings.model_validate({"database_url": url, **kw})


def row(key: str) -> dict[str, object]:
    return {"tool": "t", "principal": "p", "key": key, "fingerprint": "f", "created_at": 0.0, "expires_at": 1.0}


def test_start_up_migrates_to_head_once(database_url: str | None, tmp_path: Path) -> None:
    db = open_database(tmp_path, deploy(database_url))
    assert migrate.current(db.engine) == migrate.head()
    assert migrate.upgrade(db.engine) == (migrate.head(), migrate.head())  # a second run changes nothing
    db.close()
    open_database(tmp_path, deploy(database_url)).close()


def test_head_names_the_newest_packaged_migration() -> None:
    assert migrate.head(migrate.Migrations()) == migrate.HEAD  # the runtime's own branch alone


def test_the_heads_read_without_alembic_are_alembic_s() -> None:
    """The fast path's expected heads (parsed from the scripts) are the ones Alembic finds, every branch."""
    migrations = migrate.Migrations.discover()
    assert set(migrations.services) == {"analytics", "attendance", "household", "yana"}
    assert migrations.expected() == migrations.heads()
    assert migrate.HEAD in migrations.heads()


def test_a_database_at_head_opens_without_loading_alembic(tmp_path: Path) -> None:
    """A restart's fast path: the version is read with one query, Alembic stays unimported."""
    open_database(tmp_path, deploy(None)).close()
    script = (
        "import sys; from pathlib import Path; from kumitate.serving.deploy import DeploySettings; "
        "from kumitate.storage import open_database; "
        f"open_database(Path({str(tmp_path)!r}), DeploySettings()).close(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('alembic', 'mako')))"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO)
    assert ran.stdout.strip() == "[]", ran.stdout


def test_a_database_behind_this_release_fails_start_up_when_migration_is_off(
    database_url: str | None, tmp_path: Path
) -> None:
    with pytest.raises(SchemaMismatchError) as exc:
        open_database(tmp_path, deploy(database_url, db_migrate="off"))
    message = str(exc.value)
    assert "\n" not in message and "revision none" in message and "kumitate db upgrade" in message


def test_a_database_ahead_of_this_release_fails_start_up(database_url: str | None, tmp_path: Path) -> None:
    db = open_database(tmp_path, deploy(database_url))
    with db.transaction() as conn:
        conn.execute(
            text("UPDATE alembic_version SET version_num = '9999_future' WHERE version_num = :head"),
            {"head": migrate.HEAD},
        )
    db.close()
    with pytest.raises(SchemaMismatchError, match=r"revision 9999_future is newer than this kumitate"):
        open_database(tmp_path, deploy(database_url))


def test_transactions_commit_or_roll_back(database_url: str | None, tmp_path: Path) -> None:
    db = open_database(tmp_path, deploy(database_url))
    with db.transaction() as conn:
        conn.execute(idempotency.insert().values(**row("kept")))
    with pytest.raises(RuntimeError), db.transaction() as conn:
        conn.execute(idempotency.insert().values(**row("lost")))
        raise RuntimeError("boom")
    with db.read() as conn:
        assert conn.execute(select(idempotency.c.key)).scalars().all() == ["kept"]
    db.close()


def test_a_call_past_its_deadline_commits_nothing(database_url: str | None, tmp_path: Path) -> None:
    db = open_database(tmp_path, deploy(database_url))
    late = CallContext("svc", "tool", "http", "r", "t", deadline=time.monotonic() - 1)
    with pytest.raises(ToolError) as exc, bound(late), db.transaction() as conn:
        conn.execute(idempotency.insert().values(**row("late")))
    assert exc.value.code == "REQUEST_TIMEOUT"
    with db.read() as conn:
        assert conn.execute(select(idempotency.c.key)).scalars().all() == []
    db.close()


@pytest.mark.postgres
def test_an_unreachable_database_is_storage_unavailable(postgres_url: str, tmp_path: Path) -> None:
    db = open_database(tmp_path, deploy(postgres_url))
    db.engine.dispose()
    db.engine = engines.create(postgres_url.replace(postgres_url.split("@")[1].split("/")[0], "127.0.0.1:1"))
    with pytest.raises(ToolError) as exc, db.transaction():
        pass
    assert exc.value.code == "STORAGE_UNAVAILABLE"


def test_sqlite_pragmas_are_set_in_one_place(tmp_path: Path) -> None:
    db = open_database(tmp_path, deploy(None, sqlite_busy_timeout_ms=1234))
    with db.read() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 1234
    assert Path(db.engine.url.database or "") == tmp_path / "kumitate.sqlite3"
    db.close()


def test_postgres_urls_use_psycopg_3() -> None:
    url = engines.database_url("postgresql://u:pw@db.example:5432/k", Path("/x"))
    assert url == "postgresql+psycopg://u:pw@db.example:5432/k"


@pytest.mark.slow
def test_kumitate_db_upgrade_and_a_one_line_start_up_failure(tmp_path: Path) -> None:
    env = {"KUMITATE_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    run = [sys.executable, "-m", "kumitate"]
    off = env | {"KUMITATE_DB_MIGRATE": "off"}
    refused = subprocess.run([*run, "serve", "--port", "0"], env=off, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert any(line.startswith("kumitate: database schema is at revision none") for line in lines), lines
    assert "Traceback" not in refused.stderr
    upgraded = subprocess.run([*run, "db", "upgrade"], env=off, capture_output=True, text=True, timeout=120)
    assert upgraded.returncode == 0 and f"empty -> {migrate.head()}" in upgraded.stdout
    current = subprocess.run([*run, "db", "current"], env=off, capture_output=True, text=True, timeout=120)
    assert f"at {migrate.head()}" in current.stdout


def test_an_unreachable_database_stops_start_up_with_one_line_and_no_password(tmp_path: Path) -> None:
    with pytest.raises(StartupError) as exc:
        open_database(tmp_path, deploy("postgresql://kumitate:s3cret@127.0.0.1:1/kumitate"))
    message = str(exc.value)
    assert "\n" not in message and "s3cret" not in message and "cannot open the database" in message
