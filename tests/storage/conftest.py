"""Real servers for the storage tests: PostgreSQL and Redis from Debian's packages, in a temp directory.

Each is started once per session on a free port and stopped at the end; when the package is not
installed the tests that need it are skipped with a reason (`make cluster-install` installs them).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy import servers
from tests.servers import unavailable


@pytest.fixture(scope="session")
def server_dir() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="kumitate-servers-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url(server_dir: Path) -> Iterator[str]:
    if servers.pg_bin() is None:
        unavailable("PostgreSQL is not installed (make cluster-install installs it from Debian's packages)")
    try:
        if servers.is_root():
            servers.ensure_service_user()
        url = servers.start_postgres(server_dir, servers.free_port())
    except (servers.ClusterError, OSError) as exc:
        unavailable(f"PostgreSQL could not be started here: {exc}")
    yield url
    servers.stop_postgres(server_dir)


@pytest.fixture(scope="session")
def redis_url(server_dir: Path) -> Iterator[str]:
    if "redis-server" in servers.missing_packages():
        unavailable("redis-server is not installed (make cluster-install installs it from Debian's packages)")
    try:
        if servers.is_root():
            servers.ensure_service_user()
        url = servers.start_redis(server_dir, servers.free_port())
    except (servers.ClusterError, OSError) as exc:
        unavailable(f"Redis could not be started here: {exc}")
    yield url
    servers.stop_redis(server_dir)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """None (the embedded SQLite file under tmp_path) or a fresh PostgreSQL database per test."""
    if request.param == "sqlite":
        return None
    base: str = request.getfixturevalue("postgres_url")
    return fresh_pg_database(base, tmp_path.name)


def fresh_pg_database(base_url: str, name: str) -> str:
    from sqlalchemy import create_engine, text

    db = "t_" + "".join(c if c.isalnum() else "_" for c in name.lower())[:50]
    admin = create_engine(base_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{db}"'))
        conn.execute(text(f'CREATE DATABASE "{db}"'))
    admin.dispose()
    return base_url.rsplit("/", 1)[0] + "/" + db
