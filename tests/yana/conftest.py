"""Fixtures for yana: a shared read-only service (loaded once) and fresh ones for tests that write."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # fake_upstream, helpers (any pytest import mode)

from pydantic import BaseModel, ValidationError

from generated.yana.bindings import SERVICE
from generated.yana.models import ChatInput, IngestInput, SearchInput
from handlers.yana import YanaHandlers
from handlers.yana import create as create_handlers
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.service import ServiceSetup
from kumitate.settings import Settings
from tests.servers import fresh_pg_database

REPO = Path(__file__).resolve().parents[2]
INPUTS: dict[str, type[BaseModel]] = {"chat": ChatInput, "search": SearchInput, "ingest": IngestInput}
WIRE_METHODS = {*INPUTS, "read_healthz", "read_version", "read_logs_today"}


class Wire:
    """yana built as the runtime builds it (`ServiceSetup.open` + `create`), called as a caller sees it:
    a tool's dict input is validated into its generated model (as the pipeline does: BAD_REQUEST when
    it does not fit) and each result
    model dumped as the pipeline dumps it (JSON mode, only the fields set), so tests read the wire's
    data; everything else passes through. `close()` closes the setup (the database)."""

    def __init__(self, setup: ServiceSetup) -> None:
        self.setup = setup
        self.handlers = create_handlers(setup)

    def close(self) -> None:
        self.setup.close()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.handlers, name)
        if name not in WIRE_METHODS:
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            if name in INPUTS and args and isinstance(args[0], dict):
                try:
                    args = (INPUTS[name].model_validate(args[0]), *args[1:])
                except ValidationError as exc:  # as the pipeline's intake answers it
                    raise ToolError(f"input does not match the schema: {exc}", code="BAD_REQUEST") from None
            result = value(*args, **kwargs)
            return (
                result.model_dump(mode="json", by_alias=True, exclude_unset=True)
                if isinstance(result, BaseModel)
                else result
            )

        return call


def make_settings(tmp: Path, env: Mapping[str, str] | None = None) -> Settings:
    """The runtime's settings for a test: from `env` alone (never the process environment), state in `tmp`."""
    return Settings.from_env(env or {}, data_dir=tmp, sample_dir=REPO / "data")


def create(settings: Settings) -> Any:
    """yana on a setup of its own (`ServiceSetup.open`), behind `Wire`; the caller closes it."""
    return Wire(ServiceSetup.open("yana", settings))


def ctx(tool: str = "test") -> CallContext:
    """A call's context as the pipeline makes one: yana's routes (for ctx.changed, url_for)."""
    return SERVICE.direct_call(tool, transport="test", run_id="run-test", trace_id="trace-test")


@pytest.fixture()
def open_yana() -> Iterator[Callable[..., Any]]:
    """`open_yana(settings)`: `create` that closes every service it made at teardown."""
    made: list[Wire] = []

    def build(settings: Settings) -> Any:
        made.append(create(settings))
        return made[-1]

    yield build
    for yana in made:
        yana.close()


@pytest.fixture(scope="session")
def yana_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[YanaHandlers]:
    """Template mode, bundled data only, on the embedded SQLite file. Tests using it must not write."""
    yana = create(make_settings(tmp_path_factory.mktemp("yana_shared")))
    yield yana
    yana.close()


@pytest.fixture(scope="session")
def yana_pg(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[YanaHandlers]:
    """The same on PostgreSQL (a database of its own). Tests using it must not write."""
    url = fresh_pg_database(request.getfixturevalue("postgres_url"), "yana_shared")
    yana = create(make_settings(tmp_path_factory.mktemp("yana_shared_pg"), {"KUMITATE_DATABASE_URL": url}))
    yield yana
    yana.close()


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
def make_fresh(tmp_path: Path, seeded_db: Path, open_yana: Callable[..., Any]) -> Callable[..., YanaHandlers]:
    """Build a private service in tmp_path with the given environment (logs://today on)."""

    def build(env: dict[str, str] | None = None) -> YanaHandlers:
        if not (tmp_path / seeded_db.name).exists():
            copy_sqlite(seeded_db, tmp_path / seeded_db.name)
        return open_yana(make_settings(tmp_path, {"YANA_EXPOSE_LOGS": "1", **(env or {})}))  # type: ignore[no-any-return]

    return build


@pytest.fixture()
def fresh(make_fresh: Callable[..., YanaHandlers]) -> YanaHandlers:
    """A private service in tmp_path (for ingest and anything that changes state)."""
    return make_fresh()
