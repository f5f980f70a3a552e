"""Fixtures for yana: a shared read-only service (loaded once) and fresh ones for tests that write."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # fake_upstream, helpers (any pytest import mode)

from pydantic import BaseModel

from handlers.yana import YanaHandlers
from handlers.yana import create as create_handlers
from kumitate.context import CallContext
from kumitate.settings import Settings
from tests.storage.conftest import fresh_pg_database, postgres_url, server_dir  # noqa: F401 (fixtures)

REPO = Path(__file__).resolve().parents[2]
WIRE_METHODS = {"chat", "search", "ingest", "read_healthz", "read_version", "read_logs_today"}


class Wire:
    """The handlers as a caller sees their results: each model dumped as the pipeline dumps it
    (JSON mode, only the fields set), so tests read the wire's data; everything else passes through."""

    def __init__(self, handlers: YanaHandlers) -> None:
        self.handlers = handlers

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.handlers, name)
        if name not in WIRE_METHODS:
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            return (
                result.model_dump(mode="json", by_alias=True, exclude_unset=True)
                if isinstance(result, BaseModel)
                else result
            )

        return call


def create(settings: Settings, env: dict[str, str] | None = None) -> Any:
    """handlers.yana.create, behind `Wire`."""
    return Wire(create_handlers(settings, env=env))


def make_settings(tmp: Path) -> Settings:
    return Settings(data_dir=tmp, sample_dir=REPO / "data", public_base_url="http://127.0.0.1:8000")


def ctx(tool: str = "test") -> CallContext:
    return CallContext(service="yana", tool=tool, transport="test", run_id="run-test", trace_id="trace-test")


@pytest.fixture(scope="session")
def yana_sqlite(tmp_path_factory: pytest.TempPathFactory) -> YanaHandlers:
    """Template mode, bundled data only, on the embedded SQLite file. Tests using it must not write."""
    return create(make_settings(tmp_path_factory.mktemp("yana_shared")), env={})


@pytest.fixture(scope="session")
def yana_pg(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> YanaHandlers:
    """The same on PostgreSQL (a database of its own). Tests using it must not write."""
    url = fresh_pg_database(request.getfixturevalue("postgres_url"), "yana_shared")
    return create(make_settings(tmp_path_factory.mktemp("yana_shared_pg")), env={"KUMITATE_DATABASE_URL": url})


@pytest.fixture(scope="session")
def yana(yana_sqlite: YanaHandlers) -> YanaHandlers:
    return yana_sqlite


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def yana_each_engine(request: pytest.FixtureRequest) -> YanaHandlers:
    """The shared read-only service on SQLite, then on PostgreSQL (skipped with a reason without it)."""
    return request.getfixturevalue("yana_pg" if request.param == "postgresql" else "yana_sqlite")


@pytest.fixture(scope="session")
def seeded_db(yana_sqlite: YanaHandlers) -> Path:
    """The loaded bundled SQLite database; copying it saves each fresh service the ~1 s first-start load."""
    database = yana_sqlite.database.engine.url.database
    assert database is not None
    return Path(database)


def copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy of a live WAL-mode database (sqlite3's backup API)."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


@pytest.fixture()
def make_fresh(tmp_path: Path, seeded_db: Path) -> Callable[..., YanaHandlers]:
    """Build a private service in tmp_path with the given environment."""

    def build(env: dict[str, str] | None = None) -> YanaHandlers:
        if not (tmp_path / seeded_db.name).exists():
            copy_sqlite(seeded_db, tmp_path / seeded_db.name)
        return create(make_settings(tmp_path), env={"YANA_EXPOSE_LOGS": "1", **(env or {})})

    return build


@pytest.fixture()
def fresh(make_fresh: Callable[..., YanaHandlers]) -> YanaHandlers:
    """A private service in tmp_path (for ingest and anything that changes state)."""
    return make_fresh()
