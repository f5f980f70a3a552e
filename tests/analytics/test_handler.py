"""The thin handler: create(setup) on an empty data dir generates the database and serves."""

from __future__ import annotations

from pathlib import Path

import pytest

from generated.analytics.bindings import SERVICE
from generated.analytics.models import (
    DropMaterializedInput,
    DropMaterializedOutput,
    ExportInput,
    ExportOutput,
    HistogramInput,
    MaterializeInput,
    ProfileInput,
)
from handlers.analytics import create
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.service import ServiceSetup
from kumitate.settings import Settings


def test_first_start_generates_and_answers(tmp_path: Path) -> None:
    env = {"KUMITATE_DATA_DIR": str(tmp_path), "KUMITATE_ANALYTICS_SCALE": "0.05"}
    setup = ServiceSetup.open("analytics", Settings.from_env(env))
    handlers = create(setup)
    try:
        assert (tmp_path / "analytics" / "activities.duckdb").exists()
        ctx = CallContext(
            service="analytics",
            tool="export",
            transport="test",
            run_id="r",
            trace_id="t",
            public_url=setup.settings.public_base_url,
            routes={r.name: r for r in SERVICE.resources},
        )
        out = handlers.export(ExportInput(query="SELECT activity_id FROM activities"), ctx)
        assert isinstance(out, ExportOutput) and out.rows == 3
        assert out.url == f"http://127.0.0.1:8000/v1/analytics/exports/{out.handle}"
        assert out.resource_uri == f"export://{out.handle}"
        export = handlers.read_export_file(ctx, handle=out.handle)
        assert export.data[:4] == b"PAR1"
        assert export.mime_type == "application/vnd.apache.parquet"
        profile = handlers.profile(ProfileInput(table_or_query="splits"), ctx)
        assert profile.warnings  # trimmed: splits has 13 columns
        assert isinstance(profile.columns["avg_hr"].max, int)  # an integer column's max stays an integer
        assert handlers.histogram(HistogramInput(table_or_query="splits", column="avg_hr", bins=5), ctx).bins
        assert handlers.materialize(MaterializeInput(name="a", query="SELECT 1 AS x"), ctx).view == "mat_a"
        assert [v.view for v in handlers.read_schema(ctx).materialized] == ["mat_a"]
        dropped = handlers.drop_materialized(DropMaterializedInput(view="a"), ctx)
        assert isinstance(dropped, DropMaterializedOutput) and dropped.dropped
        with pytest.raises(ToolError) as info:
            handlers.read_export_file(ctx, handle="0" * 32)
        assert info.value.code == "EXPORT_NOT_FOUND"
    finally:
        handlers.close()
        setup.close()
    # A restart reuses the database and still serves the earlier (unexpired) export.
    setup = ServiceSetup.open("analytics", Settings.from_env(env))
    again = create(setup)
    try:
        ctx = CallContext(service="analytics", tool="export", transport="test", run_id="r", trace_id="t")
        assert again.read_export_file(ctx, handle=out.handle).data[:4] == b"PAR1"
    finally:
        again.close()
        setup.close()
