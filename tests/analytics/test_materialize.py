"""materialize: Parquet-backed views named mat_*, reusable, replaced, evicted, expired."""

from __future__ import annotations

import re
from typing import Any

import duckdb
import pytest

from handlers.analytics.core.materialize import Materializer
from handlers.analytics.core.service import AnalyticsService
from handlers.analytics.store import Swap, ViewRegistry, ViewRow
from kumitate.errors import ToolError

from .conftest import FakeClock

PER_RUN = "SELECT activity_id, avg(heart_rate) AS hr, count(*) AS seconds FROM time_series_metrics GROUP BY 1"


def test_create_and_reuse(service: AnalyticsService) -> None:
    result = service.materialize({"name": "PerRun", "query": PER_RUN})
    assert result == {
        "view": "mat_perrun",
        "rows": 6,
        "columns": ["activity_id", "hr", "seconds"],
        "expires_at": "2025-10-16T13:00:00Z",
        "replaced": False,
        "evicted": [],
    }
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", result["expires_at"])
    # Usable by name in every tool, and inside SQL.
    assert service.profile({"table_or_query": "mat_perrun", "columns": ["seconds"]})["row_count"] == 6
    assert service.histogram({"table_or_query": "mat_perrun", "column": "hr", "bins": 3})["row_count"] == 6
    joined = service.export(
        {"query": "SELECT a.activity_type, m.hr FROM activities a JOIN mat_perrun m USING (activity_id)"}
    )
    assert joined["rows"] == 6
    assert [v["view"] for v in service.schema()["materialized"]] == ["mat_perrun"]


def test_same_name_replaces(service: AnalyticsService, clock: FakeClock) -> None:
    service.materialize({"name": "x", "query": "SELECT 1 AS a"})
    clock.advance(60)
    again = service.materialize({"name": "x", "query": "SELECT 1 AS a UNION ALL SELECT 2", "ttl_seconds": 120})
    assert (again["replaced"], again["rows"], again["expires_at"]) == (True, 2, "2025-10-16T12:03:00Z")
    assert len(service.schema()["materialized"]) == 1


def test_eviction_keeps_ten(service: AnalyticsService, clock: FakeClock) -> None:
    for i in range(10):
        assert service.materialize({"name": f"v{i}", "query": f"SELECT {i} AS i"})["evicted"] == []
        clock.advance(1)
    result = service.materialize({"name": "v10", "query": "SELECT 10 AS i"})
    assert result["evicted"] == ["mat_v0"]
    live = [v["view"] for v in service.schema()["materialized"]]
    assert live == [f"mat_v{i}" for i in range(1, 11)]
    with pytest.raises(ToolError) as info:
        service.export({"query": "SELECT * FROM mat_v0"})
    assert info.value.code == "SQL_ERROR"
    assert len(_views(service)) == 10
    assert len(_files(service)) == 10  # the evicted view's file went too


def test_ttl_drops_table(service: AnalyticsService, clock: FakeClock) -> None:
    service.materialize({"name": "short", "query": "SELECT 1 AS a", "ttl_seconds": 60})
    clock.advance(61)
    with pytest.raises(ToolError) as info:
        service.profile({"table_or_query": "mat_short"})
    assert info.value.code == "NOT_FOUND"
    assert service.sweep()["views"] == 0  # already dropped on access
    assert service.schema()["materialized"] == []


def test_names_cannot_collide_or_inject(service: AnalyticsService) -> None:
    for bad in ("splits; DROP TABLE x", "a-b", "1abc", "", "x" * 41, 'x"y'):
        with pytest.raises(ToolError) as info:
            service.materialize({"name": bad, "query": "SELECT 1"})
        assert info.value.code == "INVALID_INPUT"
    # A user table can never be shadowed: the prefixed name is checked against the database's tables.
    result = service.materialize({"name": "splits", "query": "SELECT 1 AS a"})
    assert result["view"] == "mat_splits"
    assert service.profile({"table_or_query": "splits", "columns": ["split_index"]})["row_count"] > 1


def _registry(service: AnalyticsService, clock: FakeClock, **limits: int) -> Materializer:
    return Materializer(service.views.directory, service.views.registry, clock=clock, **limits)


def test_conflict_with_a_user_table(service: AnalyticsService, clock: FakeClock) -> None:
    registry = _registry(service, clock)
    with service.runner.session() as con, pytest.raises(ToolError) as info:
        registry.create(con, "activities", "SELECT 1", ttl_seconds=60, user_tables={"mat_activities"})
    assert info.value.code == "CONFLICT"


def test_row_cap(service: AnalyticsService, clock: FakeClock) -> None:
    registry = _registry(service, clock, max_rows=100)
    with service.runner.session() as con:
        with pytest.raises(ToolError) as info:
            registry.create(con, "big", "SELECT * FROM range(101)", ttl_seconds=60, user_tables=set())
        assert info.value.code == "ROW_LIMIT_EXCEEDED"
    assert _views(service) == [] and _files(service) == [] and registry.registry.all() == []


def _views(service: AnalyticsService, con: Any = None) -> list[str]:
    """The views in a worker's catalog: `con`'s, or the one the next call borrows (the last one used)."""
    rows = (
        (con or service.runner.con)
        .execute("SELECT view_name FROM duckdb_views() WHERE database_name = 'memory' AND NOT internal ORDER BY 1")
        .fetchall()
    )
    return [str(r[0]) for r in rows]


def _files(service: AnalyticsService) -> list[str]:
    directory = service.views.directory
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


def test_build_cannot_clobber_a_view(service: AnalyticsService) -> None:
    """Every build writes a file of its own: `x__building` is just another view."""
    service.materialize({"name": "x__building", "query": "SELECT 1 AS a UNION ALL SELECT 2"})
    service.materialize({"name": "x", "query": "SELECT 3 AS a"})
    service.materialize({"name": "x", "query": "SELECT 4 AS a"})  # replace, too
    assert service.profile({"table_or_query": "mat_x__building"})["row_count"] == 2
    assert service.profile({"table_or_query": "mat_x"})["columns"]["a"]["min"] == 4
    assert _views(service) == ["mat_x", "mat_x__building"]
    assert len(_files(service)) == 2  # the replaced file of mat_x went


class FailingConnection:
    """A connection proxy that raises when a statement starts with `fail_on`."""

    def __init__(self, con: object, fail_on: str) -> None:
        self._con = con
        self._fail_on = fail_on

    def execute(self, sql: str, *args: object) -> object:
        if sql.lstrip().upper().startswith(self._fail_on):
            raise duckdb.InterruptException("simulated failure")
        return self._con.execute(sql, *args)  # type: ignore[attr-defined]


class FailingRegistry(ViewRegistry):
    """A registry whose commit fails (a call past its deadline, a lost database)."""

    def put(self, row: ViewRow, *, max_views: int, now: float) -> Swap:
        raise ToolError("storage is unavailable", code="STORAGE_UNAVAILABLE")


def test_a_failed_build_or_commit_keeps_the_old_view(service: AnalyticsService, clock: FakeClock) -> None:
    registry = _registry(service, clock)
    failing = Materializer(service.views.directory, FailingRegistry(service.database), clock=clock)
    with service.runner.session() as con:
        registry.create(con, "x", "SELECT 1 AS a", ttl_seconds=60, user_tables=set())
        with pytest.raises(duckdb.InterruptException):
            registry.create(
                FailingConnection(con, "COPY"),  # type: ignore[arg-type]
                "x",
                "SELECT 2 AS a UNION ALL SELECT 3",
                ttl_seconds=60,
                user_tables=set(),
            )
        with pytest.raises(ToolError):
            failing.create(con, "x", "SELECT 2 AS a UNION ALL SELECT 3", ttl_seconds=60, user_tables=set())
        assert con.execute("SELECT a FROM mat_x").fetchall() == [(1,)]
        assert [v["rows"] for v in registry.live()] == [1]
        # No file left behind by the failed builds.
        assert _views(service, con) == ["mat_x"] and len(_files(service)) == 1
        with pytest.raises(ToolError):
            failing.create(con, "y", "SELECT 1 AS a", ttl_seconds=60, user_tables=set())
        assert len(_files(service)) == 1 and [v["view"] for v in registry.live()] == ["mat_x"]
        assert registry.create(con, "y", "SELECT 1 AS a", ttl_seconds=60, user_tables=set())["view"] == "mat_y"


def test_drop_before_the_ttl(service: AnalyticsService) -> None:
    """Issue 20: a view can be dropped before its TTL, by full or short name; dropping again is harmless."""
    service.materialize({"name": "Weekly", "query": "SELECT 1 AS x"})
    service.materialize({"name": "other", "query": "SELECT 2 AS x"})
    assert service.drop_materialized({"view": "mat_weekly"}) == {"view": "mat_weekly", "dropped": True}
    assert [v["view"] for v in service.schema()["materialized"]] == ["mat_other"]
    with pytest.raises(ToolError) as info:
        service.profile({"table_or_query": "mat_weekly"})
    assert info.value.code == "NOT_FOUND"
    assert service.drop_materialized({"view": "mat_weekly"}) == {"view": "mat_weekly", "dropped": False}
    assert service.drop_materialized({"view": "OTHER"}) == {"view": "mat_other", "dropped": True}
    assert _views(service) == [] and _files(service) == []
    # The name is free again.
    assert service.materialize({"name": "weekly", "query": "SELECT 3 AS x"})["replaced"] is False
