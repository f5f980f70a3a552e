"""User SQL is one read-only SELECT on a sandboxed connection; everything else is refused.

The attack table and the plain selects each run against one service per module (a service starts a DuckDB
worker process, ~0.3 s idle and seconds on a loaded host): an attack that got through would leave its trace
(a file, a view, a changed setting) for every later case to trip on, so sharing makes the check stricter.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from handlers.analytics.core.service import AnalyticsService
from handlers.analytics.core.source import IDENTIFIER
from kumitate.errors import ToolError

from .conftest import FakeClock, make_service

# (attack, expected code). Parse-level garbage is SQL_ERROR; everything that parses is UNSAFE_QUERY.
ATTACKS: list[tuple[str, str]] = [
    ("DROP TABLE splits", "UNSAFE_QUERY"),
    ("DELETE FROM activities", "UNSAFE_QUERY"),
    ("UPDATE activities SET avg_hr = 0", "UNSAFE_QUERY"),
    ("INSERT INTO activities SELECT * FROM activities", "UNSAFE_QUERY"),
    ("CREATE TABLE x AS SELECT 1", "UNSAFE_QUERY"),
    ("CREATE TEMP TABLE mat_evil AS SELECT 1", "UNSAFE_QUERY"),
    ("ALTER TABLE splits RENAME TO s2", "UNSAFE_QUERY"),
    ("ATTACH '/tmp/evil.duckdb' AS evil", "UNSAFE_QUERY"),
    ("DETACH activities", "UNSAFE_QUERY"),
    ("COPY splits TO '/tmp/out.csv'", "UNSAFE_QUERY"),
    ("COPY (SELECT 1) TO '/tmp/out.parquet' (FORMAT parquet)", "UNSAFE_QUERY"),
    ("INSTALL httpfs", "UNSAFE_QUERY"),
    ("LOAD httpfs", "UNSAFE_QUERY"),
    ("PRAGMA database_list", "UNSAFE_QUERY"),
    ("SET enable_external_access = true", "UNSAFE_QUERY"),
    ("RESET lock_configuration", "UNSAFE_QUERY"),
    ("CALL pragma_version()", "UNSAFE_QUERY"),
    ("EXPORT DATABASE '/tmp/dump'", "UNSAFE_QUERY"),
    ("CHECKPOINT", "UNSAFE_QUERY"),
    ("EXPLAIN ANALYZE SELECT 1", "UNSAFE_QUERY"),
    ("SELECT 1; DROP TABLE splits", "UNSAFE_QUERY"),
    ("SELECT 1; SELECT 2", "UNSAFE_QUERY"),
    ("SELECT * FROM read_csv('/etc/passwd')", "UNSAFE_QUERY"),
    ("SELECT * FROM read_csv_auto('/etc/passwd')", "UNSAFE_QUERY"),
    ("SELECT * FROM read_text('/etc/hostname')", "UNSAFE_QUERY"),
    ("SELECT * FROM read_blob('/etc/hostname')", "UNSAFE_QUERY"),
    ("SELECT * FROM read_parquet('exports/*.parquet')", "UNSAFE_QUERY"),
    ("SELECT * FROM read_json('/etc/x.json')", "UNSAFE_QUERY"),
    ("SELECT * FROM glob('/*')", "UNSAFE_QUERY"),
    ("SELECT * FROM '/etc/passwd'", "UNSAFE_QUERY"),
    ("SELECT * FROM 'x.parquet'", "UNSAFE_QUERY"),
    ("SELECT * FROM query('DROP TABLE splits')", "UNSAFE_QUERY"),
    ("SELECT * FROM query_table('splits')", "UNSAFE_QUERY"),
    ("SELECT * FROM duckdb_settings()", "UNSAFE_QUERY"),
    ("SELECT * FROM duckdb_secrets()", "UNSAFE_QUERY"),
    ("SELECT * FROM pragma_table_info('splits')", "UNSAFE_QUERY"),
    ("SELECT * FROM sniff_csv('/etc/passwd')", "UNSAFE_QUERY"),
    ("SELECT * FROM parquet_metadata('x.parquet')", "UNSAFE_QUERY"),
    ("SELECT current_setting('allowed_directories')", "UNSAFE_QUERY"),
    ("SELECT getenv('HOME')", "UNSAFE_QUERY"),
    ("WITH x AS (SELECT * FROM read_csv('/etc/passwd')) SELECT * FROM x", "UNSAFE_QUERY"),
    ("SELECT (SELECT count(*) FROM read_text('/etc/passwd'))", "UNSAFE_QUERY"),
    ("SELECT * FROM splits WHERE activity_id IN (SELECT 1 FROM glob('/*'))", "UNSAFE_QUERY"),
    ("SELECT * FROM splits UNION ALL SELECT * FROM read_csv('/etc/passwd')", "UNSAFE_QUERY"),
    ("SELECT * FROM other_db.main.splits", "UNSAFE_QUERY"),
    ("DESCRIBE splits", "UNSAFE_QUERY"),
    ("SUMMARIZE splits", "UNSAFE_QUERY"),
    ("PIVOT splits ON split_index USING avg(pace_s_per_km)", "UNSAFE_QUERY"),
    ("VACUUM", "UNSAFE_QUERY"),
    ("BEGIN TRANSACTION", "UNSAFE_QUERY"),
    ("USE memory", "UNSAFE_QUERY"),
    # System catalog views reachable without a schema prefix (they leak settings and absolute paths).
    ("SELECT * FROM pg_settings", "UNSAFE_QUERY"),
    ("SELECT * FROM PG_SETTINGS", "UNSAFE_QUERY"),
    ('SELECT * FROM "pg_settings"', "UNSAFE_QUERY"),
    ("SELECT * FROM duckdb_databases", "UNSAFE_QUERY"),
    ("SELECT * FROM pragma_database_list", "UNSAFE_QUERY"),
    ("SELECT * FROM duckdb_logs", "UNSAFE_QUERY"),
    ("SELECT * FROM sqlite_master", "UNSAFE_QUERY"),
    ("SELECT * FROM sqlite_temp_master", "UNSAFE_QUERY"),
    ("SELECT * FROM pg_proc", "UNSAFE_QUERY"),
    ("SELECT * FROM pg_database", "UNSAFE_QUERY"),
    ("SELECT * FROM duckdb_views", "UNSAFE_QUERY"),
    ("SELECT * FROM duckdb_types", "UNSAFE_QUERY"),
    ("SELECT * FROM main.duckdb_databases", "UNSAFE_QUERY"),
    ("SELECT * FROM system.main.duckdb_databases", "UNSAFE_QUERY"),
    ("SELECT * FROM system.main.x", "UNSAFE_QUERY"),
    ("SELECT * FROM system.information_schema.tables", "UNSAFE_QUERY"),
    ("SELECT * FROM temp.information_schema.tables", "UNSAFE_QUERY"),
    ("SELECT * FROM information_schema.views", "UNSAFE_QUERY"),
    ("SELECT * FROM pg_catalog.pg_settings", "UNSAFE_QUERY"),
    ("SELECT * FROM main.pg_catalog.pg_settings", "UNSAFE_QUERY"),
    ("SELECT * FROM temp.main.duckdb_databases", "UNSAFE_QUERY"),
    ("SELECT (SELECT string_agg(path, ',') FROM duckdb_databases)", "UNSAFE_QUERY"),
    ("SELECT * FROM (SELECT 1 AS x) t, LATERAL (SELECT * FROM duckdb_databases) d", "UNSAFE_QUERY"),
    ("SELECT * FROM unnest((SELECT list(path) FROM duckdb_databases))", "UNSAFE_QUERY"),
    ("WITH pg_settings AS (SELECT * FROM pg_settings) SELECT * FROM pg_settings", "UNSAFE_QUERY"),
    ("SELECT * FROM duckdb_extensions()", "UNSAFE_QUERY"),
    ("SELECT * FROM duckdb_logs_parsed('x')", "UNSAFE_QUERY"),
    ("SELECT which_secret('s3://bucket/x', 's3')", "UNSAFE_QUERY"),
    ("SELECT pg_get_viewdef(1)", "UNSAFE_QUERY"),
    ("SELECT get_block_size('activities')", "UNSAFE_QUERY"),
    ("SELECT write_log('x')", "UNSAFE_QUERY"),
    ("SELECT * FROM splits AT (VERSION => 1)", "UNSAFE_QUERY"),
    ("SELECT count(*) FROM " + "(SELECT * FROM " * 400 + "splits" + ") t" * 400, "UNSAFE_QUERY"),
    # Unknown names never reach DuckDB (CTE scope is checked: a CTE cannot read itself).
    ("WITH x AS (SELECT * FROM x) SELECT * FROM x", "SQL_ERROR"),
    ("SELECT * FROM (WITH t AS (SELECT 1) SELECT * FROM t) UNION ALL SELECT * FROM t", "SQL_ERROR"),
    ("SELECT * FROM laps", "SQL_ERROR"),
    ("SELECT 1 /* unterminated", "SQL_ERROR"),
    ("SELEC 1", "SQL_ERROR"),
    ("", "INVALID_INPUT"),
    ("   ;  ", "UNSAFE_QUERY"),
]

ALLOWED = [
    "SELECT count(*) AS n FROM splits",
    "WITH s AS (SELECT activity_id, avg(pace_s_per_km) p FROM splits GROUP BY 1) SELECT count(*) AS n FROM s",
    "FROM splits SELECT count(*) AS n",
    "SELECT count(*) AS n FROM splits;",
    "SELECT count(*) AS n FROM splits -- trailing comment",
    "SELECT count(*) AS n FROM range(10)",
    "SELECT count(*) AS n FROM (SELECT unnest([1, 2, 3]) AS x)",
    "SELECT count(*) AS n FROM main.splits",
    "SELECT count(*) AS n FROM activities.main.splits",
    "SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'splits'",
    "SELECT count(*) AS n FROM information_schema.columns WHERE table_name = 'splits' AND column_name = 'avg_hr'",
    "WITH a AS (SELECT 1 AS x), b AS (SELECT * FROM a) SELECT count(*) AS n FROM b",
    "WITH RECURSIVE t(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM t WHERE k < 3) SELECT max(k) - 2 AS n FROM t",
    "WITH splits AS (SELECT 1 AS x) SELECT count(*) AS n FROM splits",
]


@pytest.fixture(scope="module")
def attacked(small_db_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnalyticsService]:
    """The service every attack is tried on, in turn."""
    svc = make_service(small_db_template, tmp_path_factory.mktemp("attacked"))
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def selects(small_db_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnalyticsService]:
    """The service the plain selects export from."""
    svc = make_service(small_db_template, tmp_path_factory.mktemp("selects"))
    yield svc
    svc.close()


def test_attack_table_is_large_enough() -> None:
    assert len(ATTACKS) >= 30


@pytest.mark.parametrize(("sql", "code"), ATTACKS, ids=[a[0][:40] or "empty" for a in ATTACKS])
def test_attack_is_refused_everywhere(attacked: AnalyticsService, sql: str, code: str) -> None:
    # profile reads a bare word (CHECKPOINT, VACUUM) as a table name: NOT_FOUND is its refusal.
    profile_code = "NOT_FOUND" if IDENTIFIER.match(sql.strip()) else code
    for call, expected in (
        (lambda: attacked.export({"query": sql}), code),
        (lambda: attacked.materialize({"name": "evil", "query": sql}), code),
        (lambda: attacked.profile({"table_or_query": sql}), profile_code),
    ):
        with pytest.raises(ToolError) as info:
            call()
        assert info.value.code == expected, (sql, info.value.message)
    assert not list(attacked.exports.directory.iterdir())


def test_database_is_intact_after_attacks(service: AnalyticsService) -> None:
    for sql, _ in ATTACKS:
        with pytest.raises(ToolError):
            service.export({"query": sql})
    assert [t["name"] for t in service.schema()["tables"]] == ["activities", "splits", "time_series_metrics"]
    assert service.profile({"table_or_query": "splits", "columns": ["split_index"]})["row_count"] > 0


@pytest.mark.parametrize("sql", ALLOWED)
def test_plain_selects_pass(selects: AnalyticsService, sql: str) -> None:
    result = selects.export({"query": sql, "format": "csv"})
    assert result["rows"] == 1
    assert result["columns"] == ["n"]


def test_sandbox_blocks_files_even_past_the_guard(service: AnalyticsService) -> None:
    """Defence in depth: the connection itself refuses file access outside exports/."""
    import duckdb

    con = service.runner.con
    with pytest.raises(duckdb.PermissionException):
        con.execute("SELECT * FROM read_text('/etc/hostname')").fetchall()
    with pytest.raises(duckdb.Error):
        con.execute("SET enable_external_access = true")
    with pytest.raises(duckdb.Error):
        con.execute("CREATE TABLE main.x AS SELECT 1")
    assert service.runner.map_error(duckdb.PermissionException("no")).code == "UNSAFE_QUERY"


def test_error_messages_do_not_leak_server_paths(service: AnalyticsService) -> None:
    with pytest.raises(ToolError) as info:
        service.export({"query": "SELECT * FROM nonexistent_table"})
    assert info.value.code == "SQL_ERROR"
    assert str(service.exports.directory) not in info.value.message
    assert "nonexistent_table" in info.value.message


def test_catalog_refusal_names_the_way_forward(service: AnalyticsService) -> None:
    with pytest.raises(ToolError) as info:
        service.export({"query": "SELECT * FROM duckdb_databases"})
    assert info.value.code == "UNSAFE_QUERY"
    assert "analytics://schema" in info.value.message
    with pytest.raises(ToolError) as info:
        service.export({"query": "SELECT * FROM laps"})
    assert info.value.code == "SQL_ERROR"
    assert "activities, splits, time_series_metrics" in info.value.message


def test_live_views_pass_the_guard_and_expired_ones_do_not(service: AnalyticsService, clock: FakeClock) -> None:
    service.materialize({"name": "v", "query": "SELECT 1 AS x", "ttl_seconds": 60})
    assert service.export({"query": "SELECT count(*) AS n FROM mat_v", "format": "csv"})["rows"] == 1
    assert service.export({"query": "SELECT count(*) AS n FROM main.mat_v", "format": "csv"})["rows"] == 1
    # Another materialize may read it, too.
    assert service.materialize({"name": "w", "query": "SELECT * FROM mat_v"})["rows"] == 1
    clock.advance(61)
    with pytest.raises(ToolError) as info:
        service.export({"query": "SELECT * FROM mat_v"})
    assert info.value.code == "SQL_ERROR"
    with pytest.raises(ToolError) as info:  # the scratch tables of a build are not readable either
        service.export({"query": "SELECT * FROM _build_0123456789abcdef"})
    assert info.value.code == "SQL_ERROR"
