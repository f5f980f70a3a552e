"""Odd inputs give a result that matches the output schema or a catalogued error, never a crash.

Column types DuckDB can produce but the statistics do not cover (nested, binary,
intervals, enums, untyped NULL), empty and NULL-only sources, names in any script
or case, and parameters that only the transports' schema validation would catch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from generated.analytics.models import ExportInput
from handlers.analytics import AnalyticsHandlers
from handlers.analytics.core.service import AnalyticsService
from kumitate.errors import ToolError

from .conftest import call_context

SPECS = Path(__file__).resolve().parents[2] / "specs" / "analytics"
TYPES = json.loads((SPECS / "types" / "analytics.json").read_text())
REGISTRY = Registry().with_resource("analytics.json", Resource.from_contents(TYPES))
CATALOGUE = set(yaml.safe_load((SPECS.parent / "errors.yaml").read_text())["codes"])
TOOL_ERRORS = {p.stem: set(yaml.safe_load(p.read_text())["errors"]) for p in (SPECS / "tools").glob("*.yaml")}


def valid(definition: str, body: Any) -> None:
    Draft202012Validator({"$ref": f"analytics.json#/$defs/{definition}"}, registry=REGISTRY).validate(body)


ODD_TYPES = (
    "SELECT [1, 2] AS l, [1, 2]::INTEGER[2] AS arr, {'a': 1} AS st, map([1], [2]) AS m, "
    "union_value(a := 1) AS un, 'x'::BLOB AS b, INTERVAL 1 DAY AS iv, "
    "'00000000-0000-0000-0000-000000000000'::UUID AS u, 'a'::ENUM('a', 'b') AS e, "
    "TIMETZ '01:02:03+01' AS ttz, '101'::BIT AS bits, NULL AS n, '1.5'::JSON AS j"
)


def test_profile_of_every_odd_type(reading_service: AnalyticsService) -> None:
    result = reading_service.profile({"table_or_query": ODD_TYPES})
    valid("ProfileOutput", result)
    assert result["row_count"] == 1
    # Every column is either profiled or named in a trim warning.
    shown = set(result["columns"])
    assert shown and shown <= {"l", "arr", "st", "m", "un", "b", "iv", "u", "e", "ttz", "bits", "n", "j"}
    assert result["columns"]["l"] == {"type": "INTEGER[]", "null_rate": 0.0}
    assert result["columns"]["n"] == {"type": "NULL", "null_rate": 1.0}  # not '"NULL"'


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export_of_every_odd_type(service: AnalyticsService, fmt: str) -> None:
    out = AnalyticsHandlers(service, None).export(ExportInput(query=ODD_TYPES, format=fmt), call_context("export"))
    result = out.model_dump(mode="json", exclude_unset=True)
    valid("ExportOutput", result)
    assert result["rows"] == 1 and len(result["columns"]) == 13


@pytest.mark.parametrize("column", ["l", "st", "b", "iv", "e", "n", "j", "u"])
def test_histogram_refuses_non_numeric_types(reading_service: AnalyticsService, column: str) -> None:
    with pytest.raises(ToolError) as info:
        reading_service.histogram({"table_or_query": ODD_TYPES, "column": column})
    assert info.value.code == "INVALID_INPUT"
    assert "numeric" in info.value.message


def test_empty_and_null_only_sources(service: AnalyticsService) -> None:
    service.materialize({"name": "empty", "query": "SELECT * FROM activities WHERE false"})
    service.materialize({"name": "nulls", "query": "SELECT NULL::DOUBLE AS d, NULL AS n FROM range(5)"})
    empty = service.profile({"table_or_query": "mat_empty", "columns": ["avg_hr", "start_time"]})
    valid("ProfileOutput", empty)
    assert (empty["row_count"], empty["date_range"]) == (0, None)
    assert empty["columns"]["avg_hr"]["mean"] is None and empty["columns"]["avg_hr"]["null_rate"] == 0
    nulls = service.profile({"table_or_query": "mat_nulls"})
    valid("ProfileOutput", nulls)
    assert nulls["columns"]["d"]["null_rate"] == 1.0 and nulls["columns"]["d"]["distinct_count"] == 0
    for source, column, total in (("mat_empty", "avg_hr", 0), ("mat_nulls", "d", 5)):
        hist = service.histogram({"table_or_query": source, "column": column, "bins": 100})
        valid("HistogramOutput", hist)
        assert (hist["bins"], hist["row_count"], hist["null_count"]) == ([], total, total)
    export = service.export({"query": "SELECT * FROM mat_empty", "format": "csv"})
    assert export["rows"] == 0
    assert service.read_export(export["handle"])[0].decode().startswith("activity_id,start_time,")


def test_unicode_and_quoted_names(service: AnalyticsService) -> None:
    # A bare word in any script, or a quoted identifier, is a table name: unknown ones are NOT_FOUND.
    for name in ("アクティビティ", '"laps"', '"a""b"', "läufe"):
        with pytest.raises(ToolError) as info:
            service.profile({"table_or_query": name})
        assert info.value.code == "NOT_FOUND", name
        assert "activities, splits, time_series_metrics" in info.value.message
    quoted = service.profile({"table_or_query": '"splits"', "columns": ["split_index"]})
    assert quoted["source"] == "splits"
    # Unicode column names work everywhere.
    sql = 'SELECT x AS "心拍", x * 2 AS "ペース" FROM range(10) r(x)'
    hist = service.histogram({"table_or_query": sql, "column": "心拍", "bins": 2})
    assert [b["count"] for b in hist["bins"]] == [5, 5] and hist["column"] == "心拍"
    view = service.materialize({"name": "jp", "query": sql})
    assert view["columns"] == ["心拍", "ペース"]
    profile = service.profile({"table_or_query": "mat_jp", "columns": ["ペース"]})
    assert profile["columns"]["ペース"]["max"] == 18
    assert service.export({"query": sql, "format": "csv"})["columns"] == ["心拍", "ペース"]


def test_column_names_are_case_insensitive_like_duckdb(reading_service: AnalyticsService) -> None:
    hist = reading_service.histogram({"table_or_query": "splits", "column": "Avg_HR", "bins": 3})
    assert hist["column"] == "avg_hr"
    assert hist == reading_service.histogram({"table_or_query": "splits", "column": "avg_hr", "bins": 3})
    profile = reading_service.profile(
        {"table_or_query": "activities", "columns": ["AVG_HR", "avg_hr"], "date_column": "Start_Time"}
    )
    assert list(profile["columns"]) == ["avg_hr"] and profile["date_column"] == "start_time"
    # When two columns differ only in case DuckDB renames one (A -> A_1); exact names still win.
    both = reading_service.histogram({"table_or_query": 'SELECT 1 AS a, 2 AS "A"', "column": "A_1", "bins": 1})
    assert both["min"] == 2


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("export", {"query": "SELECT 1", "format": "json"}),
        ("export", {"query": "SELECT 1", "max_rows": "many"}),
        ("export", {"query": "SELECT 1", "max_rows": True}),
        ("export", {"query": "SELECT 1", "max_rows": 10**12}),
        ("histogram", {"table_or_query": "splits", "column": "avg_hr", "bins": 10**9}),
        ("histogram", {"table_or_query": "splits", "column": "avg_hr", "bins": -1}),
        ("histogram", {"table_or_query": "splits", "column": "avg_hr", "bins": "x"}),
        ("materialize", {"name": "x", "query": "SELECT 1", "ttl_seconds": 10**12}),
        ("materialize", {"name": "x", "query": "SELECT 1", "ttl_seconds": -5}),
        ("materialize", {"name": "x", "query": "SELECT 1", "ttl_seconds": 59}),
    ],
)
def test_out_of_schema_parameters_are_invalid_input(
    reading_service: AnalyticsService, tool: str, params: dict[str, Any]
) -> None:
    """The core refuses what the spec's input schema refuses, for direct (non-transport) callers."""
    with pytest.raises(ToolError) as info:
        getattr(reading_service, tool)(params)
    assert info.value.code == "INVALID_INPUT"
    assert info.value.code in TOOL_ERRORS[tool] and info.value.code in CATALOGUE
    assert reading_service.schema()["materialized"] == []


def test_huge_integers_bin_without_error(reading_service: AnalyticsService) -> None:
    for sql in (
        "SELECT 340282366920938463463374607431768211455::UHUGEINT AS h UNION ALL SELECT 0::UHUGEINT",
        "SELECT 18446744073709551615::UBIGINT AS h UNION ALL SELECT 0::UBIGINT",
        "SELECT 12345678901234567890123456789012345678::DECIMAL(38, 0) AS h UNION ALL SELECT 0",
    ):
        result = reading_service.histogram({"table_or_query": sql, "column": "h", "bins": 100})
        valid("HistogramOutput", result)
        assert len(result["bins"]) == 100
        assert (result["bins"][0]["count"], result["bins"][-1]["count"]) == (1, 1)
