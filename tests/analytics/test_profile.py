"""profile: exact statistics, date range, and the ~1 KB size bound with trimming."""

from __future__ import annotations

import json
import math
import re

import pytest

from handlers.analytics.core.profile import json_size, round_sig
from handlers.analytics.core.service import AnalyticsService
from kumitate.errors import ToolError

VALUES = "SELECT * FROM (VALUES (1, 2.0, 'a'), (2, NULL, 'b'), (3, 4.0, 'b'), (4, 9.0, NULL)) t(a, b, c)"


def test_exact_statistics_of_a_query(reading_service: AnalyticsService) -> None:
    result = reading_service.profile({"table_or_query": VALUES})
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


def test_table_with_date_range(reading_service: AnalyticsService) -> None:
    full = reading_service.profile({"table_or_query": "activities", "columns": ["distance_km"]})
    assert full["row_count"] == 6
    assert full["date_column"] == "start_time"
    first_day = full["date_range"][0][:10]
    one_day = reading_service.profile(
        {"table_or_query": "activities", "columns": ["distance_km"], "date_range": [first_day, first_day]}
    )
    assert one_day["row_count"] == 1
    assert one_day["date_range"][0] == full["date_range"][0]


def test_date_range_needs_a_date_column(reading_service: AnalyticsService) -> None:
    with pytest.raises(ToolError) as info:
        reading_service.profile({"table_or_query": VALUES, "date_range": ["2025-01-01", "2025-01-31"]})
    assert info.value.code == "INVALID_INPUT"
    with pytest.raises(ToolError) as info:
        reading_service.profile({"table_or_query": "activities", "date_range": ["2025-02-01", "2025-01-31"]})
    assert info.value.code == "INVALID_INPUT"


def test_output_is_bounded_and_trimmed_with_a_warning(reading_service: AnalyticsService) -> None:
    result = reading_service.profile({"table_or_query": "splits"})
    assert json_size(result) <= 1024
    assert len(result["warnings"]) == 1
    omitted = [c for c in ("split_index", "pace_s_per_km", "avg_hr", "elevation_loss_m") if c not in result["columns"]]
    assert "elevation_loss_m" in omitted
    for name in omitted:
        assert name in result["warnings"][0]
    # Every column appears exactly once: kept, or named in the warning.
    all_columns = next(t["columns"] for t in reading_service.schema()["tables"] if t["name"] == "splits")
    listed = json.loads(re.search(r"columns=(\[.*\])", result["warnings"][0]).group(1))  # type: ignore[union-attr]
    assert sorted([*result["columns"], *listed]) == sorted(c["name"] for c in all_columns)
    # The omitted ones come back when asked for.
    rest = reading_service.profile({"table_or_query": "splits", "columns": ["elevation_loss_m"]})
    assert list(rest["columns"]) == ["elevation_loss_m"]
    assert rest["warnings"] == []


@pytest.mark.parametrize(
    ("table", "measures", "last_resort"),
    [
        ("activities", ["distance_km", "duration_s", "avg_pace_s_per_km"], ["activity_id", "start_time"]),
        ("splits", ["distance_km", "duration_s", "pace_s_per_km"], ["activity_id", "split_index", "start_time"]),
        ("time_series_metrics", ["elapsed_s", "distance_m", "pace_s_per_km", "heart_rate"], ["activity_id", "ts"]),
    ],
)
def test_the_budget_keeps_measures_and_leaves_out_ids_and_timestamps(
    reading_service: AnalyticsService, table: str, measures: list[str], last_resort: list[str]
) -> None:
    """Issue 20: ids, keys and timestamps are left out before the numeric measures users ask about."""
    result = reading_service.profile({"table_or_query": table})
    assert json_size(result) <= 1024
    assert all(m in result["columns"] for m in measures)
    assert not any(c in result["columns"] for c in last_resort)
    asked = json.loads(re.search(r"columns=(\[.*\])", result["warnings"][0]).group(1))  # type: ignore[union-attr]
    assert set(last_resort) <= set(asked)
    assert asked[-1] in last_resort  # ids, keys and timestamps are the last to be kept
    # Asking for them (the warning says how) profiles them.
    again = reading_service.profile({"table_or_query": table, "columns": asked[:3]})
    assert list(again["columns"]) == asked[:3]


def test_requested_columns_keep_the_callers_priority(reading_service: AnalyticsService) -> None:
    columns = ["activity_id", "start_time", "activity_type", "activity_name", "distance_km", "avg_hr", "max_hr"]
    result = reading_service.profile({"table_or_query": "activities", "columns": columns})
    kept = list(result["columns"])
    assert kept == columns[: len(kept)] and "activity_id" in kept


def test_small_budget_still_valid_json(reading_service: AnalyticsService) -> None:
    from handlers.analytics.core.profile import trim_profile

    big = reading_service.profile({"table_or_query": VALUES})
    trimmed = trim_profile(big, 200)
    assert json_size(trimmed) <= 200
    assert trimmed["warnings"]
    assert json.loads(json.dumps(trimmed)) == trimmed


def test_unknown_names(reading_service: AnalyticsService) -> None:
    with pytest.raises(ToolError) as info:
        reading_service.profile({"table_or_query": "laps"})
    assert info.value.code == "NOT_FOUND"
    assert "activities" in info.value.message
    with pytest.raises(ToolError) as info:
        reading_service.profile({"table_or_query": "splits", "columns": ["nope"]})
    assert info.value.code == "INVALID_INPUT"


def test_round_sig() -> None:
    assert round_sig(312.4978) == 312.5
    assert round_sig(10030.0) == 10030
    assert round_sig(10003.5) == 10004
    assert round_sig(1234.56) == 1235
    assert round_sig(0.000123456) == 0.0001235
    assert round_sig(0.0) == 0


PROFILE_SCHEMA = "../types/analytics.json#/$defs/ProfileOutput"


@pytest.mark.parametrize(
    ("sql", "nulls"),
    [
        ("SELECT 'nan'::DOUBLE AS x", {"min", "max", "mean", "median", "std"}),
        ("SELECT 'nan'::DOUBLE AS x UNION ALL SELECT 1.0", {"max", "mean", "median", "std"}),
        ("SELECT 'inf'::DOUBLE AS x", {"min", "max", "mean", "median", "std"}),
        ("SELECT '-inf'::DOUBLE AS x UNION ALL SELECT 2.0", {"min", "mean", "median", "std"}),
        ("SELECT 1.7e308::DOUBLE AS x UNION ALL SELECT -1.7e308", {"std"}),  # std overflows
        ("SELECT 1.7e308::DOUBLE AS x UNION ALL SELECT 1.7e308", {"mean"}),  # the sum overflows
    ],
)
def test_non_finite_statistics_are_null_with_a_warning(
    reading_service: AnalyticsService, sql: str, nulls: set[str]
) -> None:
    from .test_specs import validator

    result = reading_service.profile({"table_or_query": sql})
    json.dumps(result, allow_nan=False)  # strict JSON: no NaN / Infinity anywhere
    assert not list(validator(PROFILE_SCHEMA).iter_errors(result))
    column = result["columns"]["x"]
    assert {k for k in ("min", "max", "mean", "median", "std") if column[k] is None} == nulls
    assert len(result["warnings"]) == 1
    warning = result["warnings"][0]
    assert warning.startswith("Not finite") and "x (" in warning
    # One row has no sample std (null without a warning); everything else null is named.
    named = nulls - {"std"} if result["row_count"] == 1 else nulls
    assert warning.split("x (")[1].split(")")[0].split(", ") == [
        s for s in ("min", "max", "mean", "median", "std") if s in named
    ]


def test_non_finite_warning_only_names_profiled_columns(reading_service: AnalyticsService) -> None:
    sql = "SELECT * FROM (VALUES ('nan'::DOUBLE, 1, 2, 3, 4), (1.0, 2, 3, 4, 5)) t(a, b, c, d, e)"
    result = reading_service.profile({"table_or_query": sql})  # five columns: the two-pass path
    assert result["columns"]["a"]["mean"] is None
    assert result["warnings"] == [
        "Not finite (NaN, Infinity or beyond the double range), reported as null: a (max, mean, median, std). "
        "Filter with WHERE isfinite(col) to profile the finite values."
    ]
    clean = reading_service.profile({"table_or_query": sql, "columns": ["b", "c"]})
    assert clean["warnings"] == []


def test_std_is_exact_on_a_large_offset(service: AnalyticsService) -> None:
    # Sum-of-squares gave 95.8 here; the sample std of 500 x 0 and 500 x 1 is sqrt(250 / 999).
    result = service.profile({"table_or_query": "SELECT 1e9 + (range % 2) AS x FROM range(1000)"})
    assert result["columns"]["x"]["std"] == round_sig(math.sqrt(250 / 999)) == 0.5003
    table = service.materialize({"name": "offset", "query": "SELECT 1e9 + (range % 2) AS x FROM range(1000)"})
    assert service.profile({"table_or_query": table["view"]})["columns"]["x"]["std"] == 0.5003


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT (-170141183460469231731687303715884105728)::HUGEINT AS h "
        "UNION ALL SELECT 170141183460469231731687303715884105727::HUGEINT",
        "SELECT 0::UHUGEINT AS h UNION ALL SELECT 340282366920938463463374607431768211455::UHUGEINT",
        "SELECT 340282366920938463463374607431768211455::UHUGEINT AS h "
        "UNION ALL SELECT 340282366920938463463374607431768211454::UHUGEINT",
    ],
)
def test_128_bit_integer_columns(service: AnalyticsService, sql: str) -> None:
    from .test_specs import validator

    # A materialized view is stored as Parquet, which has no 128-bit integers: there the column is a DOUBLE.
    for source in (sql, service.materialize({"name": "wide", "query": sql})["view"]):
        result = service.profile({"table_or_query": source})
        column = result["columns"]["h"]
        exact = int if source == sql else int | float
        assert isinstance(column["min"], exact) and isinstance(column["max"], exact)
        assert all(isinstance(column[k], int | float) for k in ("mean", "median", "std"))
        assert column["distinct_count"] == (
            2 if source == sql else len({float(v) for v in (column["min"], column["max"])})
        )
        json.dumps(result, allow_nan=False)
        assert not list(validator(PROFILE_SCHEMA).iter_errors(result))
        hist = service.histogram({"table_or_query": source, "column": "h", "bins": 4})
        assert sum(b["count"] for b in hist["bins"]) == 2


def test_timestamptz_date_range_uses_utc_days(reading_service: AnalyticsService) -> None:
    sql = (
        "SELECT * FROM (VALUES (TIMESTAMPTZ '2025-03-01 23:30:00+00', 1), (TIMESTAMPTZ '2025-03-02 00:30:00+00', 2), "
        "(TIMESTAMPTZ '2025-03-01 23:30:00-05', 3)) t(ts, x)"
    )
    full = reading_service.profile({"table_or_query": sql})
    assert full["date_column"] == "ts"
    assert full["date_range"] == ["2025-03-01T23:30:00Z", "2025-03-02T04:30:00Z"]
    assert full["columns"]["ts"]["min"] == "2025-03-01T23:30:00Z"
    first = reading_service.profile({"table_or_query": sql, "date_range": ["2025-03-01", "2025-03-01"]})
    assert first["row_count"] == 1
    second = reading_service.profile({"table_or_query": sql, "date_range": ["2025-03-02", "9999-12-31"]})
    assert (second["row_count"], second["columns"]["x"]["min"]) == (2, 2)
    hist = reading_service.histogram(
        {"table_or_query": sql, "column": "x", "bins": 2, "date_range": ["2025-03-02", "2025-03-02"]}
    )
    assert hist["row_count"] == 2


def test_date_range_bounds_sql() -> None:
    from datetime import date

    from handlers.analytics.core.source import date_bounds_sql

    assert date_bounds_sql("TIMESTAMP", date(2025, 3, 1), date(2025, 3, 31)) == (
        "TIMESTAMP '2025-03-01'",
        "TIMESTAMP '2025-04-01'",
    )
    assert date_bounds_sql("TIMESTAMP WITH TIME ZONE", date(2025, 3, 1), date(2025, 3, 1)) == (
        "TIMESTAMPTZ '2025-03-01 00:00:00+00'",
        "TIMESTAMPTZ '2025-03-02 00:00:00+00'",
    )
    assert date_bounds_sql("DATE", date(2025, 1, 1), date.max)[1] is None


def test_round_sig_non_finite_and_huge() -> None:
    assert round_sig(float("nan")) is None
    assert round_sig(float("inf")) is None
    assert round_sig(-float("inf")) is None
    assert round_sig(3.0276503540974914e30) == 3.028e30
    assert round_sig(123456789012.4) == 123456789012
