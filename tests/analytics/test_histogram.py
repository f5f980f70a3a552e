"""histogram: `bins` equal-width bins (one when all values are equal), left-closed, last bin closed; nulls counted."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handlers.analytics.core.histogram import bin_edges
from handlers.analytics.core.service import AnalyticsService
from kumitate.errors import ToolError


def _values_sql(values: Sequence[float | None]) -> str:
    rows = ", ".join("(NULL::DOUBLE)" if v is None else f"({v!r}::DOUBLE)" for v in values)
    return f"SELECT * FROM (VALUES {rows}) t(x)"


def reference_counts(values: list[float], edges: list[float]) -> list[int]:
    """The documented rule, applied literally to the returned edges."""
    bins = len(edges) - 1
    counts = [0] * bins
    for v in values:
        for i in range(bins):
            last = i == bins - 1
            if edges[i] <= v and (v < edges[i + 1] or (last and v <= edges[i + 1])):
                counts[i] += 1
                break
    return counts


def test_integer_edges_exact(reading_service: AnalyticsService) -> None:
    result = reading_service.histogram(
        {"table_or_query": _values_sql([*range(11), None, None]), "column": "x", "bins": 5}
    )
    assert result == {
        "column": "x",
        "bins": [
            {"min": 0.0, "max": 2.0, "count": 2},
            {"min": 2.0, "max": 4.0, "count": 2},
            {"min": 4.0, "max": 6.0, "count": 2},
            {"min": 6.0, "max": 8.0, "count": 2},
            {"min": 8.0, "max": 10.0, "count": 3},  # last bin is closed: 8, 9, 10
        ],
        "row_count": 13,
        "binned_count": 11,
        "null_count": 2,
        "total_count": 13,
        "min": 0.0,
        "max": 10.0,
        "bin_width": 2.0,
    }


def test_values_on_float_edges_follow_the_returned_edges(reading_service: AnalyticsService) -> None:
    values = [i / 10 for i in range(11)]
    result = reading_service.histogram({"table_or_query": _values_sql(values), "column": "x", "bins": 10})
    edges = [b["min"] for b in result["bins"]] + [result["bins"][-1]["max"]]
    assert edges == bin_edges(0.0, 1.0, 10)
    assert [b["count"] for b in result["bins"]] == reference_counts(values, edges)
    assert sum(b["count"] for b in result["bins"]) == 11


def test_a_single_distinct_value_is_one_bin(reading_service: AnalyticsService) -> None:
    result = reading_service.histogram(
        {"table_or_query": _values_sql([5.0, None, 5.0, 5.0]), "column": "x", "bins": 10}
    )
    assert result["bins"] == [{"min": 5.0, "max": 5.0, "count": 3}]
    assert (result["min"], result["max"], result["bin_width"]) == (5.0, 5.0, 0.0)
    assert (result["row_count"], result["binned_count"], result["null_count"]) == (4, 3, 1)


def test_counts_are_named_for_what_they_count(reading_service: AnalyticsService) -> None:
    """row_count includes NULLs; binned_count is what the bins sum to (total_count: deprecated row_count)."""
    result = reading_service.histogram(
        {"table_or_query": _values_sql([1.0, 2.0, None, 4.0, None]), "column": "x", "bins": 3}
    )
    assert sum(b["count"] for b in result["bins"]) == result["binned_count"] == 3
    assert result["row_count"] == result["binned_count"] + result["null_count"] == 5
    assert result["total_count"] == result["row_count"]


def test_no_values(reading_service: AnalyticsService) -> None:
    result = reading_service.histogram({"table_or_query": _values_sql([None, None]), "column": "x", "bins": 4})
    assert result["bins"] == []
    assert (result["row_count"], result["binned_count"], result["null_count"]) == (2, 0, 2)
    assert (result["min"], result["bin_width"]) == (None, None)


def test_nan_is_not_binned(reading_service: AnalyticsService) -> None:
    sql = "SELECT * FROM (VALUES (1.0::DOUBLE), ('NaN'::DOUBLE), (3.0::DOUBLE)) t(x)"
    result = reading_service.histogram({"table_or_query": sql, "column": "x", "bins": 2})
    assert [b["count"] for b in result["bins"]] == [1, 1]
    assert result["null_count"] == 1


def test_real_table_with_exactly_requested_bins(reading_service: AnalyticsService) -> None:
    for bins in (1, 7, 20, 100):
        result = reading_service.histogram({"table_or_query": "splits", "column": "pace_s_per_km", "bins": bins})
        assert len(result["bins"]) == bins
        assert sum(b["count"] for b in result["bins"]) + result["null_count"] == result["row_count"]
    hr = reading_service.histogram({"table_or_query": "time_series_metrics", "column": "heart_rate"})
    assert hr["null_count"] > 0


def test_bad_inputs(reading_service: AnalyticsService) -> None:
    for params in (
        {"table_or_query": "activities", "column": "activity_type"},
        {"table_or_query": "activities", "column": "start_time"},
        {"table_or_query": "activities", "column": "nope"},
        {"table_or_query": "activities", "column": "avg_hr", "bins": 0},
    ):
        with pytest.raises(ToolError) as info:
            reading_service.histogram(params)
        assert info.value.code == "INVALID_INPUT"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], database=None)
@given(
    values=st.lists(
        st.one_of(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), st.integers(-50, 50).map(float)),
        min_size=1,
        max_size=40,
    ),
    bins=st.integers(1, 12),
)
def test_matches_reference_rule(reading_service: AnalyticsService, values: list[float], bins: int) -> None:
    result = reading_service.histogram({"table_or_query": _values_sql(values), "column": "x", "bins": bins})
    edges = [b["min"] for b in result["bins"]] + [result["bins"][-1]["max"]]
    if min(values) == max(values):
        assert result["bins"] == [{"min": values[0], "max": values[0], "count": len(values)}]
        return
    assert len(result["bins"]) == bins
    assert edges == bin_edges(min(values), max(values), bins)
    assert [b["count"] for b in result["bins"]] == reference_counts(values, edges)
    assert not any(math.isnan(e) for e in edges)


def _edges(result: dict[str, object]) -> list[float]:
    bins = result["bins"]
    assert isinstance(bins, list)
    return [b["min"] for b in bins] + [bins[-1]["max"]]


def test_range_wider_than_a_double(reading_service: AnalyticsService) -> None:
    """max - min overflows to inf: edges are interpolated, the guess works on halved values."""
    values = [-1.7e308, 1.7e308, 0.0, 1e308]
    result = reading_service.histogram({"table_or_query": _values_sql(values), "column": "x", "bins": 100})
    edges = _edges(result)
    assert all(math.isfinite(e) for e in edges) and edges == sorted(edges)
    assert (edges[0], edges[-1]) == (-1.7e308, 1.7e308)
    assert math.isfinite(result["bin_width"]) and result["bin_width"] == 3.4e306
    assert [b["count"] for b in result["bins"]] == reference_counts(values, edges)
    with pytest.raises(ToolError) as info:  # one bin that wide has no finite width
        reading_service.histogram({"table_or_query": _values_sql(values), "column": "x", "bins": 1})
    assert info.value.code == "INVALID_INPUT"
    assert "SELECT" not in info.value.message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 5e-324 * range AS x FROM range(3)",  # bin width underflows to 0
        "SELECT 5e-324 * range AS x FROM range(250)",  # a width of a couple of subnormal steps
        "SELECT 1.0 + range * 2.220446049250313e-16 AS x FROM range(30)",  # 30 ulps of 1.0 in 100 bins
    ],
)
def test_subnormal_and_ulp_wide_ranges(reading_service: AnalyticsService, sql: str) -> None:
    values = [float(r[0]) for r in reading_service.runner.con.execute(sql).fetchall()]
    result = reading_service.histogram({"table_or_query": sql, "column": "x", "bins": 100})
    edges = _edges(result)
    assert len(result["bins"]) == 100 and edges == sorted(edges)
    assert (edges[0], edges[-1]) == (min(values), max(values))
    assert [b["count"] for b in result["bins"]] == reference_counts(values, edges)
    assert result["bin_width"] is not None and math.isfinite(result["bin_width"])


def test_edges_are_short_but_still_define_the_counts(reading_service: AnalyticsService) -> None:
    assert bin_edges(0.0, 1.0, 10) == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert bin_edges(263.8, 382.2, 10)[1] == 275.64  # not 275.64000000000004
    result = reading_service.histogram({"table_or_query": "splits", "column": "pace_s_per_km", "bins": 20})
    width = result["bin_width"]
    for i, edge in enumerate(_edges(result)[1:-1], start=1):
        assert len(repr(edge)) <= 16, edge
        assert abs(edge - (result["min"] + i * width)) <= width * 1e-9
    pace = [r[0] for r in reading_service.runner.con.execute("SELECT pace_s_per_km FROM splits").fetchall()]
    assert [b["count"] for b in result["bins"]] == reference_counts(pace, _edges(result))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], database=None)
@given(
    values=st.lists(
        st.one_of(
            st.floats(allow_nan=False, allow_infinity=False),
            st.integers(-400, 400).map(lambda k: k * 5e-324),
            st.integers(0, 40).map(lambda k: 1.0 + k * 2.220446049250313e-16),
        ),
        min_size=1,
        max_size=30,
    ),
    bins=st.integers(1, 100),
)
def test_extreme_values_match_reference_rule(reading_service: AnalyticsService, values: list[float], bins: int) -> None:
    sql = _values_sql(values)
    try:
        result = reading_service.histogram({"table_or_query": sql, "column": "x", "bins": bins})
    except ToolError as exc:  # only: one bin over a range wider than the largest double
        assert exc.code == "INVALID_INPUT" and bins == 1 and not math.isfinite(max(values) - min(values))
        return
    edges = _edges(result)
    assert len(result["bins"]) == (bins if min(values) != max(values) else 1)
    assert all(math.isfinite(e) for e in edges) and edges == sorted(edges)
    assert (edges[0], edges[-1]) == (min(values), max(values))
    expected = reference_counts(values, edges) if min(values) != max(values) else [len(values)]
    assert [b["count"] for b in result["bins"]] == expected
