"""analytics: LLM-safe analysis of a running-activity DuckDB (seed 004).

The server hands out handles and summaries, never raw rows: `export` writes a
Parquet/CSV file and returns an opaque handle (fetched via `export://{handle}`),
`profile` and `histogram` return ~1 KB summaries, `materialize` caches an
intermediate result as a temp table. Code beside the LLM loads exports with the
guarded helpers in `kumitate.clients.analytics`.

This module is the thin transport-facing layer: generated input model -> core -> generated
output model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from generated.analytics.models import (
    DropMaterializedInput,
    DropMaterializedOutput,
    ExportInput,
    ExportOutput,
    HistogramInput,
    HistogramOutput,
    MaterializeInput,
    MaterializeOutput,
    ProfileInput,
    ProfileOutput,
    SchemaColumn,
    SchemaResource,
    SchemaTable,
)
from kumitate.context import Attachment, CallContext
from kumitate.service import ServiceSetup

from .connection import DEFAULT_POOL_SIZE
from .service import AnalyticsService, Limits, Sweeper

SERVICE = "analytics"


def _params(model: BaseModel) -> dict[str, Any]:
    """The core's parameters: the fields the caller set (defaults left to the core, as before)."""
    return dict(model.model_dump(mode="json", exclude_none=True))


class AnalyticsHandlers:
    """One method per tool and resource; blocking, so the runtime runs them in a worker thread.

    Takes and returns the generated models (the spec is the contract); the core works on plain
    JSON-shaped data, which the output model validates on the way out.
    """

    def __init__(self, service: AnalyticsService, sweep_interval_s: float | None = 300.0) -> None:
        self.service = service
        self._sweeper = Sweeper(service, sweep_interval_s) if sweep_interval_s else None

    def export(self, input: ExportInput, ctx: CallContext) -> ExportOutput:
        return ExportOutput.model_validate(
            self.service.export(_params(input), deadline=ctx.deadline, principal=ctx.principal)
        )

    def profile(self, input: ProfileInput, ctx: CallContext) -> ProfileOutput:
        # size-trim warnings travel in the body
        return ProfileOutput.model_validate(self.service.profile(_params(input), deadline=ctx.deadline))

    def histogram(self, input: HistogramInput, ctx: CallContext) -> HistogramOutput:
        return HistogramOutput.model_validate(self.service.histogram(_params(input), deadline=ctx.deadline))

    def materialize(self, input: MaterializeInput, ctx: CallContext) -> MaterializeOutput:
        return MaterializeOutput.model_validate(self.service.materialize(_params(input), deadline=ctx.deadline))

    def drop_materialized(self, input: DropMaterializedInput, ctx: CallContext) -> DropMaterializedOutput:
        return DropMaterializedOutput.model_validate(
            self.service.drop_materialized(_params(input), deadline=ctx.deadline)
        )

    def read_schema(self, ctx: CallContext) -> SchemaResource:
        return SchemaResource.model_validate(self.service.schema())

    def read_export_file(self, ctx: CallContext, handle: str) -> Attachment:
        """Binary resource `export_file` (export://{handle}), with the export's own MIME type (parquet or csv)."""
        data, mime = self.service.read_export(handle, ctx.principal)
        return Attachment(mime, data)

    def read_table(self, ctx: CallContext, table: str) -> SchemaTable:
        return SchemaTable.model_validate(self.service.table(table))

    def read_column(self, ctx: CallContext, table: str, column: str) -> SchemaColumn:
        return SchemaColumn.model_validate(self.service.column(table, column))

    def complete_table_names(self, ctx: CallContext, prefix: str, arguments: dict[str, str]) -> list[str]:
        return [t["name"] for t in self.service.tables if t["name"].lower().startswith(prefix.lower())]

    def complete_column_names(self, ctx: CallContext, prefix: str, arguments: dict[str, str]) -> list[str]:
        """The columns of the `table` already given (none before it is)."""
        known = self.service.find_table(arguments.get("table", ""))
        columns = known["columns"] if known is not None else []
        return [c["name"] for c in columns if c["name"].lower().startswith(prefix.lower())]

    def complete_export_handles(self, ctx: CallContext, prefix: str, arguments: dict[str, str]) -> list[str]:
        """Completion of export://{handle} (specs/analytics/resources/export_file.yaml): the caller's live exports."""
        return self.service.exports.handles(ctx.principal, prefix)

    def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.stop()
        self.service.close()


def create(setup: ServiceSetup) -> AnalyticsHandlers:
    """Open (generating on first start) var/analytics/activities.duckdb and serve it.

    Environment: KUMITATE_ANALYTICS_SCALE (default 1.0, only used when the database
    is generated), KUMITATE_ANALYTICS_TIMEOUT_S (query deadline, default 10),
    KUMITATE_ANALYTICS_POOL_SIZE (DuckDB connections, i.e. queries at once, default 4),
    KUMITATE_ANALYTICS_EXPORT_MAX_MB (one export, default 100),
    KUMITATE_ANALYTICS_PRINCIPAL_EXPORT_MB (one principal's live exports, default 500) and
    KUMITATE_EXPORT_DIR (export and view files, default var/analytics/exports: a volume every
    instance shares). The registries of exports and views live in the storage layer's database
    (KUMITATE_DATABASE_URL, or var/kumitate.sqlite3), so instances sharing both serve each other's.
    """
    settings = setup.settings
    env = settings.env
    scale = float(env.get("KUMITATE_ANALYTICS_SCALE", "1.0"))
    limits = Limits(
        query_timeout_s=float(env.get("KUMITATE_ANALYTICS_TIMEOUT_S", "10")),
        pool_size=int(env.get("KUMITATE_ANALYTICS_POOL_SIZE", str(DEFAULT_POOL_SIZE))),
        export_max_bytes=int(float(env.get("KUMITATE_ANALYTICS_EXPORT_MAX_MB", "100")) * 1_000_000),
        principal_export_bytes=int(float(env.get("KUMITATE_ANALYTICS_PRINCIPAL_EXPORT_MB", "500")) * 1_000_000),
    )
    export_dir = env.get("KUMITATE_EXPORT_DIR")
    service = AnalyticsService(
        settings.service_dir(SERVICE),
        scale=scale,
        limits=limits,
        public_base_url=settings.public_base_url,
        database=setup.database,
        export_dir=Path(export_dir) if export_dir else None,
        close_database=False,
    )
    return AnalyticsHandlers(service)
