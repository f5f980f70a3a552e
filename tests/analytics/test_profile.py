"""profile: exact statistics, date range, and the ~1 KB size bound with trimming."""

from __future__ import annotations

import json
import re

import pytest

from handlers.analytics.profile import json_size, round_sig
from handlers.analytics.service import AnalyticsService
from kumitate.errors import ToolError

VALUES = "SELECT * FROM (VALUES (1, 2.0, 'a'), (2, NULL, 'b'), (3, 4.0, 'b'), (4, 9.0, NULL)) t(a, b, c)"


def test_exact_statistics_of_a_query(service: AnalyticsService) -> None:
    result = service.profile({"table_or_query": VALUES})
    assert result == {
        "source": "query",
        "row_count": 4,
        "date_column": None,
        "date_range": None,
        "columns": {
            "a": {
                "type": "INTEGER",
                "min": 1,
                "max": 4,
                "mean": 2.5,
                "median": 2.5,
                "std": 1.291,
                "null_rate": 0.0,
                "distinct_count": 4,
            },
            "b": {
                "type": "DECIMAL(2,1)",
                "min": 2,
                "max": 9,
                "mean": 5,
                "median": 4,
                "std": 3.606,
                "null_rate": 0.25,
                "distinct_count": 3,
            },
            "c": {"type": "VARCHAR", "min": "a", "max": "b", "null_rate": 0.25, "distinct_count": 2},
        },
        "warnings": [],
    }


def test_table_with_date_range(service: AnalyticsService) -> None:
    full = service.profile({"table_or_query": "activities", "columns": ["distance_km"]})
    assert full["row_count"] == 6
    assert full["date_column"] == "start_time"
    first_day = full["date_range"][0][:10]
    one_day = service.profile(
        {"table_or_query": "activities", "columns": ["distance_km"], "date_range": [first_day, first_day]}
    )
    assert one_day["row_count"] == 1
    assert one_day["date_range"][0] == full["date_range"][0]


def test_date_range_needs_a_date_column(service: AnalyticsService) -> None:
    with pytest.raises(ToolError) as info:
        service.profile({"table_or_query": VALUES, "date_range": ["2025-01-01", "2025-01-31"]})
    assert info.value.code == "INVALID_INPUT"
    with pytest.raises(ToolError) as info:
        service.profile({"table_or_query": "activities", "date_range": ["2025-02-01", "2025-01-31"]})
    assert info.value.code == "INVALID_INPUT"


def test_output_is_bounded_and_trimmed_with_a_warning(service: AnalyticsService) -> None:
    result = service.profile({"table_or_query": "splits"})
    assert json_size(result) <= 1024
    assert len(result["warnings"]) == 1
    omitted = [c for c in ("split_index", "pace_s_per_km", "avg_hr", "elevation_loss_m") if c not in result["columns"]]
    assert "elevation_loss_m" in omitted
    for name in omitted:
        assert name in result["warnings"][0]
    # Every column appears exactly once: kept, or named in the warning.
    all_columns = next(t["columns"] for t in service.schema()["tables"] if t["name"] == "splits")
    listed = re.search(r"omitted \(([^)]*)\)", result["warnings"][0]).group(1).split(", ")  # type: ignore[union-attr]
    assert sorted([*result["columns"], *listed]) == sorted(c["name"] for c in all_columns)
    # The omitted ones come back when asked for.
    rest = service.profile({"table_or_query": "splits", "columns": ["elevation_loss_m"]})
    assert list(rest["columns"]) == ["elevation_loss_m"]
    assert rest["warnings"] == []


def test_small_budget_still_valid_json(service: AnalyticsService) -> None:
    from handlers.analytics.profile import trim_profile

    big = service.profile({"table_or_query": VALUES})
    trimmed = trim_profile(big, 200)
    assert json_size(trimmed) <= 200
    assert trimmed["warnings"]
    assert json.loads(json.dumps(trimmed)) == trimmed


def test_unknown_names(service: AnalyticsService) -> None:
    with pytest.raises(ToolError) as info:
        service.profile({"table_or_query": "laps"})
    assert info.value.code == "NOT_FOUND"
    assert "activities" in info.value.message
    with pytest.raises(ToolError) as info:
        service.profile({"table_or_query": "splits", "columns": ["nope"]})
    assert info.value.code == "INVALID_INPUT"


def test_round_sig() -> None:
    assert round_sig(312.4978) == 312.5
    assert round_sig(10030.0) == 10030
    assert round_sig(10003.5) == 10004
    assert round_sig(1234.56) == 1235
    assert round_sig(0.000123456) == 0.0001235
    assert round_sig(0.0) == 0
