"""A slow query holds only its own pooled connection; its deadline interrupts only it (issue 13 item 4)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import pytest

from handlers.analytics.core.service import AnalyticsService
from kumitate.errors import ToolError

SLOW = "SELECT count(*) AS n FROM range(100000000000) r(i) WHERE hash(i) % 1000003 = 0"
SLOW_DEADLINE_S = 5.0


def _wait_until(predicate: Any, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.01)


def test_trivial_calls_finish_while_a_slow_query_runs(service: AnalyticsService) -> None:
    outcome: dict[str, Any] = {}

    def slow() -> None:
        try:
            service.profile({"table_or_query": SLOW}, deadline=time.monotonic() + SLOW_DEADLINE_S)
        except ToolError as exc:
            outcome["code"] = exc.code
            outcome["ended"] = time.monotonic()

    runner = service.runner
    slow_thread = threading.Thread(target=slow)
    slow_thread.start()
    _wait_until(lambda: runner.idle() < runner.pool_size)  # the slow query holds a slot

    def trivial(i: int) -> Any:
        column = "distance_km" if i % 2 else "avg_hr"
        return service.profile({"table_or_query": "activities", "columns": [column]})["row_count"]

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(trivial, range(20)))
    trivial_done = time.monotonic()

    assert results == [6] * 20
    assert slow_thread.is_alive(), "the trivial calls must not wait for the slow query"
    slow_thread.join(timeout=30)
    assert outcome["code"] == "QUERY_TIMEOUT"
    assert outcome["ended"] > trivial_done
    # The interrupt hit only the slow query's connection: every slot works afterwards.
    for _ in range(runner.pool_size):
        assert service.profile({"table_or_query": "activities", "columns": ["activity_id"]})["row_count"] == 6


def _live_views_in_every_worker(service: AnalyticsService) -> list[set[str]]:
    """Each worker's catalog, as a call that borrows it sees it (the call syncs it with the registry first)."""
    found = []
    with ExitStack() as held:
        for _ in range(service.runner.pool_size):
            con = held.enter_context(service.runner.session())
            service.views.sync(con)
            rows = con.execute("SELECT view_name FROM duckdb_views() WHERE database_name = 'memory' AND NOT internal")
            found.append({str(name) for (name,) in rows.fetchall()})
    return found


def test_materialized_views_are_visible_from_every_worker(service: AnalyticsService) -> None:
    service.materialize({"name": "two", "query": "SELECT 1 AS a UNION ALL SELECT 2"})
    runner = service.runner
    assert _live_views_in_every_worker(service) == [{"mat_two"}] * runner.pool_size
    with ThreadPoolExecutor(max_workers=runner.pool_size * 2) as pool:
        rows = list(pool.map(lambda _: service.profile({"table_or_query": "mat_two"})["row_count"], range(8)))
    assert rows == [2] * 8


@pytest.mark.parametrize("size", [1, 2])
def test_pool_size_is_bounded(small_db_template: Any, tmp_path: Any, clock: Any, size: int) -> None:
    from .conftest import make_service

    svc = make_service(small_db_template, tmp_path, clock, pool_size=size)
    try:
        assert svc.runner.pool_size == size
    finally:
        svc.close()


def test_concurrent_materialize_drop_and_reads(service: AnalyticsService) -> None:
    """Views built, replaced, dropped and read from several connections at once stay consistent."""

    def work(i: int) -> int:
        name = f"v{i % 3}"
        service.materialize({"name": name, "query": f"SELECT {i} AS i FROM range(1000)"})
        rows = int(service.profile({"table_or_query": "SELECT count(*) AS n FROM activities"})["row_count"])
        if i % 4 == 0:
            service.drop_materialized({"view": name})
        return rows

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(work, range(24))) == [1] * 24
    live = {v["view"] for v in service.schema()["materialized"]}
    assert _live_views_in_every_worker(service) == [live] * service.runner.pool_size
