"""Shared fixtures: a small generated database per test (copied from one template).

Each AnalyticsService needs its own database file: DuckDB shares one database
instance (and its locked sandbox settings) between connections to the same file
in a process, and each service allows a different exports directory.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from handlers.analytics.service import AnalyticsService, Limits
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


@pytest.fixture(scope="session")
def small_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "activities.duckdb"
    build_database(path, scale=SMALL_SCALE, seed=7)
    return path


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make_service(template: Path, root: Path, clock: FakeClock, **limits: object) -> AnalyticsService:
    service_dir = root / "analytics"
    service_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(template, service_dir / "activities.duckdb")
    return AnalyticsService(service_dir, limits=Limits(**limits), clock=clock)  # type: ignore[arg-type]


@pytest.fixture
def service(small_db_template: Path, tmp_path: Path, clock: FakeClock) -> Iterator[AnalyticsService]:
    svc = make_service(small_db_template, tmp_path, clock)
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def sample_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnalyticsService]:
    """The default-scale sample database, exactly as a fresh server generates it."""
    svc = AnalyticsService(tmp_path_factory.mktemp("sample") / "analytics")
    yield svc
    svc.close()


@pytest.fixture
def live_service(small_db_template: Path, tmp_path: Path) -> Iterator[AnalyticsService]:
    """Like `service` but on the real clock (the helpers compare expiry with real time)."""
    service_dir = tmp_path / "analytics"
    service_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(small_db_template, service_dir / "activities.duckdb")
    svc = AnalyticsService(service_dir)
    yield svc
    svc.close()
