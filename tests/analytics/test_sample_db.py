"""The generator: deterministic, consistent between tables, scalable."""

from __future__ import annotations

from pathlib import Path

import duckdb

from samples.analytics import activity_count, build_database, ensure_database


def _fingerprint(path: Path) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(
            "SELECT (SELECT count(*) FROM time_series_metrics), (SELECT sum(heart_rate) FROM time_series_metrics),"
            " (SELECT round(sum(pace_s_per_km), 1) FROM splits), (SELECT string_agg(activity_type, ',' ORDER BY"
            " activity_id) FROM activities)"
        ).fetchall()
    finally:
        con.close()


def test_same_seed_same_data(tmp_path: Path) -> None:
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    counts_a = build_database(a, scale=0.05, seed=3)
    counts_b = build_database(b, scale=0.05, seed=3)
    assert counts_a == counts_b
    assert counts_a["activities"] == 3
    assert _fingerprint(a) == _fingerprint(b)
    build_database(tmp_path / "c.duckdb", scale=0.05, seed=4)
    assert _fingerprint(a) != _fingerprint(tmp_path / "c.duckdb")


def test_tables_are_consistent(small_db_template: Path) -> None:
    con = duckdb.connect(str(small_db_template), read_only=True)
    try:
        # Split pace is its time divided by its distance; activity duration is its seconds.
        bad_pace = con.execute(
            "SELECT count(*) FROM splits WHERE abs(pace_s_per_km - duration_s / distance_km) / pace_s_per_km > 0.002"
        ).fetchall()[0][0]
        assert bad_pace == 0
        mismatched = con.execute(
            "SELECT count(*) FROM activities a JOIN (SELECT activity_id, count(*) n FROM time_series_metrics"
            " GROUP BY 1) t USING (activity_id) WHERE a.duration_s <> t.n"
        ).fetchall()[0][0]
        assert mismatched == 0
        # Every full split is 1 km; heart rate has sensor dropouts (NULLs) but not many.
        assert con.execute("SELECT max(distance_km) FROM splits").fetchall()[0][0] <= 1.0
        null_rate = con.execute("SELECT avg((heart_rate IS NULL)::INT) FROM time_series_metrics").fetchall()[0][0]
        assert 0 < null_rate < 0.05
        types = dict(
            con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name='splits'").fetchall()
        )
        assert types["start_time"] == "TIMESTAMP"
    finally:
        con.close()


def test_ensure_database_only_builds_once(tmp_path: Path) -> None:
    path = tmp_path / "x" / "activities.duckdb"
    assert ensure_database(path, scale=0.02) is True
    assert ensure_database(path, scale=0.02) is False
    assert not list(path.parent.glob("*.tmp"))


def test_scale_sets_activity_count() -> None:
    assert activity_count(1.0) == 60
    assert activity_count(50) == 3000
    assert activity_count(0.001) == 1
