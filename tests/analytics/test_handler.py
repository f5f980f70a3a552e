"""The thin handler: create(setup) on an empty data dir generates the database and serves."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import text

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
from handlers.analytics.client import default_exports_dir
from handlers.analytics.settings import AnalyticsSettings
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.service import ServiceSetup
from kumitate.settings import Settings

from .conftest import call_context


def test_first_start_generates_and_answers(tmp_path: Path) -> None:
    env = {"KUMITATE_DATA_DIR": str(tmp_path), "KUMITATE_ANALYTICS_SCALE": "0.05"}
    setup = ServiceSetup.open("analytics", Settings.from_env(env))
    handlers = create(setup)
    try:
        assert (tmp_path / "analytics" / "activities.duckdb").exists()
        ctx = SERVICE.direct_call("export", setup.settings.public_base_url)
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


def test_create_reads_every_setting_from_the_setups_environment(small_db_template: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared-exports"
    env = {
        "KUMITATE_DATA_DIR": str(tmp_path / "var"),
        "KUMITATE_ANALYTICS_POOL_SIZE": "2",
        "KUMITATE_ANALYTICS_TIMEOUT_S": "3.5",
        "KUMITATE_ANALYTICS_EXPORT_MAX_MB": "1.5",
        "KUMITATE_ANALYTICS_PRINCIPAL_EXPORT_MB": "7",
        "KUMITATE_EXPORT_DIR": str(shared),
    }
    setup = ServiceSetup.open("analytics", Settings.from_env(env))
    shutil.copy(small_db_template, setup.data_dir / "activities.duckdb")
    handlers = create(setup)
    try:
        assert handlers.service.runner.pool_size == 2
        assert handlers.service.exports.directory == shared
        limits = handlers.read_schema(call_context("schema")).limits
        assert (limits.query_timeout_s, limits.export_max_bytes, limits.principal_export_bytes) == (
            3.5,
            1_500_000,
            7_000_000,
        )
    finally:
        handlers.close()
    # The runtime's database is the runtime's: the service leaves it open.
    with setup.database.read() as conn:
        assert conn.execute(text("SELECT count(*) FROM analytics_exports")).scalar_one() == 0
    setup.close()


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("KUMITATE_ANALYTICS_POOL_SIZE", "0"),
        ("KUMITATE_ANALYTICS_POOL_SIZE", "four"),
        ("KUMITATE_ANALYTICS_TIMEOUT_S", "-1"),
        ("KUMITATE_ANALYTICS_EXPORT_MAX_MB", "0"),
        ("KUMITATE_ANALYTICS_SCALE", "0"),
        ("KUMITATE_ANALYTICS_TIMEOUT_S", "inf"),
    ],
)
def test_a_bad_setting_is_refused_naming_its_variable(variable: str, value: str) -> None:
    with pytest.raises(ValidationError, match=variable):
        AnalyticsSettings.from_env({variable: value})


def test_the_settings_and_the_client_helpers_agree_on_the_export_dir(tmp_path: Path) -> None:
    """One declaration of KUMITATE_EXPORT_DIR, read the same way by the server and by safe_load_export."""
    for env, expected in (
        ({"KUMITATE_DATA_DIR": str(tmp_path)}, tmp_path / "analytics" / "exports"),
        ({"KUMITATE_DATA_DIR": str(tmp_path), "KUMITATE_EXPORT_DIR": "/mnt/x"}, Path("/mnt/x")),
    ):
        server = AnalyticsSettings.from_env(env).exports_dir(Settings.from_env(env).data_dir)
        assert server == default_exports_dir(env) == expected
    assert "KUMITATE_EXPORT_DIR" in {name for name, _, _ in AnalyticsSettings.variables()}
