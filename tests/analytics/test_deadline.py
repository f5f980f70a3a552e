"""Every call runs under a deadline that interrupts DuckDB, and the connection survives it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from handlers.analytics.connection import QueryRunner
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


def test_busy_connection_gives_retryable_timeout(service) -> None:  # type: ignore[no-untyped-def]
    runner: QueryRunner = service.runner
    with runner.session(), pytest.raises(ToolError) as info, runner.session(timeout_s=0.1):
        pass
    assert info.value.code == "REQUEST_TIMEOUT"
