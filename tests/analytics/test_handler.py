"""The thin handler: create(settings) on an empty data dir generates the database and serves."""

from __future__ import annotations

from pathlib import Path

import pytest

from handlers.analytics import create
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.settings import Settings


def test_first_start_generates_and_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUMITATE_ANALYTICS_SCALE", "0.05")
    settings = Settings(data_dir=tmp_path, sample_dir=Path("data"), public_base_url="http://127.0.0.1:8000")
    handlers = create(settings)
    try:
        assert (tmp_path / "analytics" / "activities.duckdb").exists()
        ctx = CallContext(service="analytics", tool="export", transport="test", run_id="r", trace_id="t")
        out = handlers.export({"query": "SELECT activity_id FROM activities"}, ctx)  # type: ignore[arg-type]
        assert out["rows"] == 3
        assert out["url"] == f"http://127.0.0.1:8000/v1/analytics/exports/{out['handle']}"
        export = handlers.read_export_file(ctx, handle=out["handle"])
        assert export.data[:4] == b"PAR1"
        assert export.mime_type == "application/vnd.apache.parquet"
        profile = handlers.profile({"table_or_query": "splits"}, ctx)  # type: ignore[arg-type]
        assert profile["warnings"]  # trimmed: splits has 13 columns
        assert handlers.histogram({"table_or_query": "splits", "column": "avg_hr", "bins": 5}, ctx)["bins"]  # type: ignore[arg-type]
        assert handlers.materialize({"name": "a", "query": "SELECT 1 AS x"}, ctx)["view"] == "mat_a"  # type: ignore[arg-type]
        assert [v["view"] for v in handlers.read_schema(ctx)["materialized"]] == ["mat_a"]
        with pytest.raises(ToolError) as info:
            handlers.read_export_file(ctx, handle="0" * 32)
        assert info.value.code == "EXPORT_NOT_FOUND"
    finally:
        handlers.close()
    # A restart reuses the database and still serves the earlier (unexpired) export.
    again = create(settings)
    try:
        ctx = CallContext(service="analytics", tool="export", transport="test", run_id="r", trace_id="t")
        assert again.read_export_file(ctx, handle=out["handle"]).data[:4] == b"PAR1"
    finally:
        again.close()
