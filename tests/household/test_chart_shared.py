"""Charts live in the runtime's shared cache (Redis in a deployment, else process memory): a chart one
instance rendered is served by another that shares it."""

from __future__ import annotations

from pathlib import Path

import pytest

from handlers.household.core.chart_cache import ChartCache
from kumitate.cache import MemoryCache, RedisCache, SharedCache
from kumitate.context import CallContext
from kumitate.service import ServiceSetup, Stores
from kumitate.settings import Settings
from kumitate.storage import redis as shared_redis

from .conftest import open_service, service_env, trend_rows, write_export


@pytest.fixture(params=["memory", "redis"])
def shared(request: pytest.FixtureRequest) -> SharedCache:
    if request.param == "memory":
        return MemoryCache()
    return RedisCache(shared_redis.connect(request.getfixturevalue("redis_url")), namespace="test:household:")


def test_a_chart_put_on_one_instance_is_served_by_another(tmp_path: Path, shared: SharedCache) -> None:
    one = ChartCache(tmp_path / "one", shared)
    other = ChartCache(tmp_path / "other", shared)  # its own data directory, as on another machine
    chart_id = one.put(b"\x89PNG one", "alice")
    assert other.get(chart_id) == (b"\x89PNG one", frozenset({"alice"}))
    again = other.put(b"\x89PNG one", "bob")  # the same chart rendered for another principal: one more owner
    assert again == chart_id
    assert ChartCache(tmp_path / "third", shared).get(chart_id) == (b"\x89PNG one", frozenset({"alice", "bob"}))


def test_another_process_memory_and_data_directory_knows_nothing(tmp_path: Path) -> None:
    chart_id = ChartCache(tmp_path / "one", MemoryCache()).put(b"\x89PNG one", "alice")
    assert ChartCache(tmp_path / "other", MemoryCache()).get(chart_id) is None


def test_a_damaged_shared_entry_is_a_miss(tmp_path: Path) -> None:
    shared = MemoryCache()
    shared.set("household:chart:" + "0" * 32, b"not json\npng", 60)
    assert ChartCache(tmp_path / "one", shared).get("0" * 32) is None


def test_the_service_keeps_its_charts_in_the_cache_of_its_setup(tmp_path: Path, ctx: CallContext) -> None:
    """Two instances (own data directories, own database files) given one cache: a chart rendered by
    one is read from the other, so household holds no cache (and no Redis connection) of its own."""
    cache = MemoryCache()
    setups: list[ServiceSetup] = []
    try:
        services = []
        for name in ("one", "other"):
            exports = tmp_path / name / "exports"
            exports.mkdir(parents=True)
            write_export(exports, "2025-01-01_2025-01-31", trend_rows()["2025-01"])
            env = service_env(tmp_path / name / "var", tmp_path / name / "samples", HOUSEHOLD_DATA_DIR=str(exports))
            settings = Settings.from_env(env)
            setups.append(ServiceSetup("household", settings, Stores(settings, cache=cache), own=True))
            services.append(open_service(setups[-1]))
        args = {"year": 2025, "month": 1, "output_format": "image"}
        chart_id = services[0].get_monthly_household(args, ctx)["chart"]["chart_id"]
        assert services[1].read_chart(ctx, chart_id=chart_id).startswith(b"\x89PNG")
    finally:
        for setup in setups:
            setup.close()
