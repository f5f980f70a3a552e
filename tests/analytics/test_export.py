"""export: opaque handles, round trip, row limit, TTL expiry and sweeping."""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any

import polars as pl
import pytest

from handlers.analytics.core.connection import Worker
from handlers.analytics.core.service import LOCAL, AnalyticsService
from handlers.analytics.store import ExportRegistry
from kumitate.errors import ToolError

from .conftest import FakeClock

ONE_RUN = (
    "SELECT elapsed_s, pace_s_per_km, heart_rate FROM time_series_metrics "
    "WHERE activity_id = 10001 AND elapsed_s BETWEEN 300 AND 599 ORDER BY elapsed_s"
)


def test_parquet_round_trip(service: AnalyticsService) -> None:
    result = service.export({"query": ONE_RUN})
    handle = result["handle"]
    assert re.fullmatch(r"[0-9a-f]{32}", handle)
    assert "/" not in handle and result["resource_uri"] == f"export://{handle}"
    assert "url" not in result  # the adapter adds it for the caller (test_handler)
    assert (result["rows"], result["columns"], result["format"]) == (
        300,
        ["elapsed_s", "pace_s_per_km", "heart_rate"],
        "parquet",
    )
    assert result["mime_type"] == "application/vnd.apache.parquet"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", result["expires_at"])
    assert result["expires_at"] == "2025-10-16T13:00:00Z"  # FakeClock 12:00 + 1 h
    data, mime = service.read_export(handle)
    assert data[:4] == b"PAR1" and mime == "application/vnd.apache.parquet"
    assert result["size_mb"] == round(len(data) / 1_000_000, 3)
    frame = pl.read_parquet(io.BytesIO(data))
    expected = service.runner.con.execute(ONE_RUN).fetchall()
    assert frame.rows() == expected  # same rows, same order, same types
    assert frame["elapsed_s"].to_list() == list(range(300, 600))


def test_csv_export(service: AnalyticsService) -> None:
    result = service.export({"query": "SELECT activity_id, activity_name FROM activities ORDER BY 1", "format": "csv"})
    data, mime = service.read_export(result["handle"])
    assert mime == "text/csv"
    lines = data.decode("utf-8").splitlines()
    assert lines[0] == "activity_id,activity_name"
    assert len(lines) == 7
    assert result["rows"] == 6


def test_row_limit(service: AnalyticsService) -> None:
    total = service.schema()["tables"][2]["row_count"]
    with pytest.raises(ToolError) as info:
        service.export({"query": "SELECT * FROM time_series_metrics", "max_rows": 1000})
    assert info.value.code == "ROW_LIMIT_EXCEEDED"
    assert f"{total:,} rows" in info.value.message
    assert "WHERE" in info.value.message and "LIMIT" in info.value.message
    assert not list(service.exports.directory.iterdir())
    ok = service.export({"query": "SELECT * FROM time_series_metrics LIMIT 1000", "max_rows": 1000})
    assert ok["rows"] == 1000


def test_max_rows_bounds(service: AnalyticsService) -> None:
    for bad in (0, 1_000_001):
        with pytest.raises(ToolError) as info:
            service.export({"query": "SELECT 1", "max_rows": bad})
        assert info.value.code == "INVALID_INPUT"


def test_unknown_and_malformed_handles(service: AnalyticsService) -> None:
    for handle in ("0" * 32, "../../etc/passwd", "", "ABCDEF" * 5 + "00", "a" * 31):
        with pytest.raises(ToolError) as info:
            service.read_export(handle)
        assert info.value.code == "EXPORT_NOT_FOUND"


def test_ttl_expiry_on_access(service: AnalyticsService, clock: FakeClock) -> None:
    handle = service.export({"query": ONE_RUN})["handle"]
    clock.advance(3599)
    assert service.read_export(handle)[0][:4] == b"PAR1"
    clock.advance(1)
    with pytest.raises(ToolError) as info:
        service.read_export(handle)
    assert info.value.code == "EXPORT_NOT_FOUND"
    assert not list(service.exports.directory.glob(f"{handle}*"))


def test_periodic_sweep_removes_only_expired(service: AnalyticsService, clock: FakeClock) -> None:
    old = service.export({"query": ONE_RUN})["handle"]
    clock.advance(1800)
    new = service.export({"query": ONE_RUN})["handle"]
    clock.advance(1800)
    assert service.sweep() == {"exports": 1, "views": 0}
    assert sorted(p.name for p in service.exports.directory.iterdir()) == [f"{new}.json", f"{new}.parquet"]
    assert service.read_export(new)[0]
    with pytest.raises(ToolError):
        service.read_export(old)


def test_handles_are_unique(service: AnalyticsService) -> None:
    handles = {service.export({"query": "SELECT 1 AS x"})["handle"] for _ in range(5)}
    assert len(handles) == 5


def test_a_failed_export_reports_its_own_error_when_the_registry_is_gone_too(service: AnalyticsService) -> None:
    """Giving the reservation back is best effort (its lease runs out): the caller hears the first failure."""

    class LostOnCleanup(ExportRegistry):
        def remove(self, handle: str) -> None:
            raise ToolError("storage is unavailable", code="STORAGE_UNAVAILABLE")

    service.exports.registry = LostOnCleanup(service.database)
    with pytest.raises(ToolError) as info:
        service.export({"query": "SELECT * FROM time_series_metrics", "max_rows": 10})
    assert info.value.code == "ROW_LIMIT_EXCEEDED"
    assert not [p for p in service.exports.directory.iterdir() if p.is_file()]


def test_an_export_asks_its_worker_twice_then_once_for_the_same_text(
    service: AnalyticsService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixed cost of a small export (issue 32): the guard's parse and tree in one round trip to the worker,
    the column names and the COPY in another (it was four); the same text again sends only its COPY (still to
    the worker), with the same answer. SQL that may name a view, or that failed, asks the guard every time."""
    asked: list[str] = []
    request = Worker.request

    def counted(worker: Worker, op: str, args: Any, *rest: Any) -> Any:
        asked.append(op if op != "execute" else args[0].split(" ", 1)[0])
        return request(worker, op, args, *rest)

    service.export({"query": "SELECT 1 AS warm"})  # the view sync may expose views on a fresh worker
    monkeypatch.setattr(Worker, "request", counted)
    first = service.export({"query": ONE_RUN + ";  "})
    assert asked == ["statements", "execute_all"]
    asked.clear()
    again = service.export({"query": ONE_RUN + ";  ", "format": "csv"})
    assert asked == ["COPY"]
    for result in (first, again):
        assert (result["rows"], result["columns"]) == (300, ["elapsed_s", "pace_s_per_km", "heart_rate"])
    assert service.read_export(again["handle"])[0].startswith(b"elapsed_s,pace_s_per_km,heart_rate\n300,")

    service.materialize({"name": "runs", "query": ONE_RUN})
    for query in ("SELECT * FROM mat_runs", "SELECT count(*) AS n FROM information_schema.tables", "SELECT nope"):
        for _ in range(2):
            asked.clear()
            with contextlib.suppress(ToolError):
                service.export({"query": query})
            assert asked[0] == "statements", query


def test_a_query_the_binder_refuses_gives_its_reservation_back(service: AnalyticsService) -> None:
    with pytest.raises(ToolError) as info:
        service.export({"query": "SELECT no_such_column FROM time_series_metrics"})
    assert info.value.code == "SQL_ERROR" and "no_such_column" in info.value.message
    assert service.exports.usage(LOCAL.id) == 0
    assert not [p for p in service.exports.directory.iterdir() if p.is_file()]
