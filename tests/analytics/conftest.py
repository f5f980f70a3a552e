"""Shared fixtures: a small generated database per test (copied from one template).

A service is built as a script builds one: `ServiceSetup.open("analytics", Settings.from_env(env))`
(its own registry database under the test's data dir), closed with the service.

Each AnalyticsService needs its own DuckDB file: DuckDB shares one database
instance (and its locked sandbox settings) between connections to the same file
in a process, and each service allows a different exports directory.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from generated.analytics.bindings import SERVICE
from handlers.analytics.core.service import AnalyticsService, Limits
from kumitate.context import CallContext, Principal
from kumitate.service import ServiceSetup
from kumitate.settings import Settings
from samples.analytics import build_database

SMALL_SCALE = 0.1  # 6 activities, ~20k per-second rows


class FakeClock:
    """A settable UTC clock for TTL tests."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2025, 10, 16, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


BASE_URL = "http://127.0.0.1:8000"


def call_context(tool: str, principal: Principal | None = None) -> CallContext:
    """A call's context as the pipeline makes one: the service's routes and a base URL (for url_for)."""
    return SERVICE.direct_call(tool, BASE_URL, principal=principal or Principal())


@pytest.fixture(scope="session")
def small_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "activities.duckdb"
    build_database(path, scale=SMALL_SCALE, seed=7)
    return path


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def open_setup(root: Path, **env: str) -> ServiceSetup:
    """The setup a script builds for one service: its own database under the data dir `root`."""
    return ServiceSetup.open("analytics", Settings.from_env({"KUMITATE_DATA_DIR": str(root), **env}))


class OwnedService(AnalyticsService):
    """An AnalyticsService on a setup of its own, which `close()` closes too (a runtime closes its own)."""

    def __init__(self, setup: ServiceSetup, service_dir: Path | None = None, **options: Any) -> None:
        self.setup = setup
        try:
            super().__init__(setup.database, service_dir or setup.data_dir, **options)
        except BaseException:
            setup.close()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.setup.close()


def make_service(template: Path, root: Path, clock: FakeClock | None = None, **limits: Any) -> OwnedService:
    """A service on a copy of `template` under the data dir `root` (`limits`: Limits fields)."""
    setup = open_setup(root)
    shutil.copy(template, setup.data_dir / "activities.duckdb")
    return OwnedService(setup, limits=Limits(**limits), **({"clock": clock} if clock else {}))


@pytest.fixture
def service(small_db_template: Path, tmp_path: Path, clock: FakeClock) -> Iterator[AnalyticsService]:
    svc = make_service(small_db_template, tmp_path, clock)
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def reading_service(small_db_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnalyticsService]:
    """One service for the tests of a module that only read (no view, export or clock of their own): a
    service starts a worker process, which per test was most of the time of such a test."""
    svc = make_service(small_db_template, tmp_path_factory.mktemp("reading"), FakeClock())
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def sample_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnalyticsService]:
    """The default-scale sample database, exactly as a fresh server generates it."""
    svc = OwnedService(open_setup(tmp_path_factory.mktemp("sample")))
    yield svc
    svc.close()


@pytest.fixture
def live_service(small_db_template: Path, tmp_path: Path) -> Iterator[AnalyticsService]:
    """Like `service` but on the real clock (the helpers compare expiry with real time)."""
    svc = make_service(small_db_template, tmp_path)
    yield svc
    svc.close()
