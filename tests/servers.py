"""Real servers for the tests (PostgreSQL and Redis from Debian's packages; the fixtures are in
tests/conftest.py, one of each per session) and skipping, or in CI failing, tests whose servers
cannot be started here."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NoReturn

import pytest


def unavailable(reason: str) -> NoReturn:
    """Skip with the reason; with KUMITATE_CLUSTER_REQUIRED=1 (CI installs the packages) fail instead."""
    if os.environ.get("KUMITATE_CLUSTER_REQUIRED") == "1":
        pytest.fail(f"required here (KUMITATE_CLUSTER_REQUIRED=1) but {reason}")
    pytest.skip(reason)


def started(name: str, missing: bool, start: Callable[[], str]) -> str:
    """The URL `start()` gives for the server `name` (run as the service user when root), or
    `unavailable` with the reason when its package is `missing` or it will not start."""
    from deploy import servers

    if missing:
        unavailable(f"{name} is not installed (make cluster-install installs it from Debian's packages)")
    try:
        if servers.is_root():
            servers.ensure_service_user()
        return start()
    except (servers.ClusterError, OSError) as exc:
        unavailable(f"{name} could not be started here: {exc}")


def fresh_pg_database(base_url: str, name: str) -> str:
    """The URL of a new, empty database `name` on the server of `base_url` (dropped first if it exists)."""
    from sqlalchemy import create_engine, text

    db = "t_" + "".join(c if c.isalnum() else "_" for c in name.lower())[:50]
    admin = create_engine(base_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{db}"'))
        conn.execute(text(f'CREATE DATABASE "{db}"'))
    admin.dispose()
    return base_url.rsplit("/", 1)[0] + "/" + db
