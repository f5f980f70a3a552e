"""With a shared cache (Redis in a deployment), a chart one instance rendered is served by another."""

from __future__ import annotations

from pathlib import Path

import pytest

from handlers.household.chart_cache import ChartCache
from kumitate.cache import MemoryCache, RedisCache, SharedCache
from kumitate.storage import redis as shared_redis
from tests.storage.conftest import redis_url, server_dir  # noqa: F401  (fixtures)


@pytest.fixture(params=["memory", "redis"])
def shared(request: pytest.FixtureRequest) -> SharedCache:
    if request.param == "memory":
        return MemoryCache()
    return RedisCache(shared_redis.connect(request.getfixturevalue("redis_url")), namespace="test:household:")


def test_a_chart_put_on_one_instance_is_served_by_another(tmp_path: Path, shared: SharedCache) -> None:
    one = ChartCache(tmp_path / "one", shared=shared)
    other = ChartCache(tmp_path / "other", shared=shared)  # its own data directory, as on another machine
    chart_id = one.put(b"\x89PNG one", "alice")
    assert other.get(chart_id) == (b"\x89PNG one", frozenset({"alice"}))
    again = other.put(b"\x89PNG one", "bob")  # the same chart rendered for another principal: one more owner
    assert again == chart_id
    assert ChartCache(tmp_path / "third", shared=shared).get(chart_id) == (b"\x89PNG one", frozenset({"alice", "bob"}))


def test_without_a_shared_cache_another_data_directory_knows_nothing(tmp_path: Path) -> None:
    chart_id = ChartCache(tmp_path / "one").put(b"\x89PNG one", "alice")
    assert ChartCache(tmp_path / "other").get(chart_id) is None


def test_a_damaged_shared_entry_is_a_miss(tmp_path: Path) -> None:
    shared = MemoryCache()
    shared.set("household:chart:" + "0" * 32, b"not json\npng", 60)
    assert ChartCache(tmp_path / "one", shared=shared).get("0" * 32) is None
