"""Every call runs under a deadline that interrupts DuckDB (or kills its worker), and the slot survives it."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

import duckdb
import pytest

from handlers.analytics.core.connection import QueryRunner
from kumitate.errors import ToolError

from .conftest import FakeClock, make_service

SLOW = "SELECT count(*) AS n FROM range(100000000) a, range(1000) b WHERE a.range % 7 = b.range"


def test_slow_query_is_interrupted(small_db_template: Path, tmp_path: Path, clock: FakeClock) -> None:
    service = make_service(small_db_template, tmp_path, clock, query_timeout_s=0.5)
    try:
        started = time.monotonic()
        with pytest.raises(ToolError) as info:
            service.profile({"table_or_query": SLOW})
        elapsed = time.monotonic() - started
        assert info.value.code == "QUERY_TIMEOUT"
        assert "0.5 s" in info.value.message
        assert elapsed < 5
        # The connection is still usable, and a late timer cannot hit the next query.
        time.sleep(0.6)
        assert service.profile({"table_or_query": "activities", "columns": ["activity_id"]})["row_count"] == 6
        assert not list(service.exports.directory.iterdir())
    finally:
        service.close()


def test_export_interrupted_leaves_no_file(small_db_template: Path, tmp_path: Path, clock: FakeClock) -> None:
    service = make_service(small_db_template, tmp_path, clock, query_timeout_s=0.5)
    try:
        with pytest.raises(ToolError) as info:
            service.export({"query": SLOW})
        assert info.value.code == "QUERY_TIMEOUT"
        assert not list(service.exports.directory.iterdir())
    finally:
        service.close()


def test_exhausted_pool_gives_retryable_timeout(service) -> None:  # type: ignore[no-untyped-def]
    runner: QueryRunner = service.runner
    with ExitStack() as held:
        for _ in range(runner.pool_size):
            held.enter_context(runner.session())
        with pytest.raises(ToolError) as info, runner.session(timeout_s=0.1):
            pass
    assert info.value.code == "REQUEST_TIMEOUT"
    with runner.session() as con:  # every slot went back to the pool
        assert con.execute("SELECT 1").fetchall() == [(1,)]


def test_the_callers_deadline_caps_the_query(service) -> None:  # type: ignore[no-untyped-def]
    """A pipeline deadline shorter than query_timeout_s interrupts DuckDB by then (the engine is freed)."""
    started = time.monotonic()
    with pytest.raises(ToolError) as info:
        service.profile({"table_or_query": SLOW}, deadline=started + 0.4)
    assert info.value.code == "QUERY_TIMEOUT"
    assert time.monotonic() - started < 3  # not the service's 10 s
    # A deadline already past still runs nothing for long, and the next call is unaffected.
    with pytest.raises(ToolError):
        service.export({"query": SLOW}, deadline=started)
    assert service.histogram({"table_or_query": "splits", "column": "avg_hr", "bins": 2}, deadline=None)["bins"]
    assert service._timeout(time.monotonic() + 3600) == service.limits.query_timeout_s


def test_handlers_pass_the_call_deadline(service) -> None:  # type: ignore[no-untyped-def]
    from generated.analytics.models import ProfileInput
    from handlers.analytics import AnalyticsHandlers
    from kumitate.context import CallContext

    handlers = AnalyticsHandlers(service, sweep_interval_s=None)
    deadline = time.monotonic() + 0.4
    ctx = CallContext(
        service="analytics", tool="profile", transport="test", run_id="r", trace_id="t", deadline=deadline
    )
    started = time.monotonic()
    with pytest.raises(ToolError) as info:
        handlers.profile(ProfileInput(table_or_query=SLOW), ctx)
    assert info.value.code == "QUERY_TIMEOUT" and time.monotonic() - started < 3


def test_only_a_session_for_the_callers_sql_answers_sql_error(service) -> None:  # type: ignore[no-untyped-def]
    """drop_materialized, the sweep and start-up run fixed SQL: a DuckDB error there is the server's
    (INTERNAL), never SQL_ERROR or UNSAFE_QUERY, which only the tools running the caller's SQL declare."""
    runner: QueryRunner = service.runner
    with pytest.raises(duckdb.CatalogException), runner.session() as con:
        con.execute("SELECT * FROM no_such_table")
    with pytest.raises(ToolError) as info, runner.user_session() as con:
        con.execute("SELECT * FROM no_such_table")
    assert info.value.code == "SQL_ERROR"
