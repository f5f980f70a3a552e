"""analytics: LLM-safe analysis of a running-activity DuckDB (seed 004).

The server hands out handles and summaries, never raw rows: `export` writes a
Parquet/CSV file and returns an opaque handle (fetched via `export://{handle}`),
`profile` and `histogram` return ~1 KB summaries, `materialize` caches an
intermediate result as a temp table. Code beside the LLM loads exports with the
guarded helpers in `handlers.analytics.client`.

This module is the thin transport-facing layer: generated input model -> core -> generated
output model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

from .settings import AnalyticsSettings

if TYPE_CHECKING:  # the core (DuckDB, the storage layer) loads in create(): the client beside the LLM
    from .core.service import AnalyticsService  # (handlers.analytics.client) imports this package without it


def _params(model: BaseModel) -> dict[str, Any]:
    """The core's parameters: the fields the caller set (defaults left to the core, as before)."""
    return dict(model.model_dump(mode="json", exclude_none=True))


class AnalyticsHandlers:
    """One method per tool and resource; blocking, so the runtime runs them in a worker thread.

    Takes and returns the generated models (the spec is the contract); the core works on plain
    JSON-shaped data, which the output model validates on the way out.
    """

    def __init__(self, service: AnalyticsService, sweep_interval_s: float | None = 300.0) -> None:
        from .core.service import Sweeper

        self.service = service
        self._sweeper = Sweeper(service, sweep_interval_s) if sweep_interval_s else None

    def export(self, input: ExportInput, ctx: CallContext) -> ExportOutput:
        """The core's export plus its HTTP address as this caller reaches the server (ctx.url_for)."""
        result = self.service.export(_params(input), deadline=ctx.deadline, principal=ctx.principal)
        return ExportOutput.model_validate({**result, "url": ctx.url_for("export_file", handle=result["handle"])})

    def profile(self, input: ProfileInput, ctx: CallContext) -> ProfileOutput:
        # size-trim warnings travel in the body
        return ProfileOutput.model_validate(self.service.profile(_params(input), deadline=ctx.deadline))

    def histogram(self, input: HistogramInput, ctx: CallContext) -> HistogramOutput:
        return HistogramOutput.model_validate(self.service.histogram(_params(input), deadline=ctx.deadline))

    def materialize(self, input: MaterializeInput, ctx: CallContext) -> MaterializeOutput:
        result = self.service.materialize(_params(input), deadline=ctx.deadline)
        ctx.changed("schema")  # it lists the live views (the tables and columns resources do not)
        return MaterializeOutput.model_validate(result)

    def drop_materialized(self, input: DropMaterializedInput, ctx: CallContext) -> DropMaterializedOutput:
        result = self.service.drop_materialized(_params(input), deadline=ctx.deadline)
        if result["dropped"]:
            ctx.changed("schema")
        return DropMaterializedOutput.model_validate(result)

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
    """Open (generating on first start) <data dir>/analytics/activities.duckdb and serve it.

    The variables are AnalyticsSettings'. The registries of exports and views live in the
    runtime's database (`setup.database`), their files in the export directory, so instances
    sharing both serve each other's.
    """
    from .core.service import AnalyticsService, Limits

    settings = setup.read(AnalyticsSettings)
    limits = Limits(
        query_timeout_s=settings.timeout_s,
        pool_size=settings.pool_size,
        worker_memory_mb=settings.worker_memory_mb,
        worker_idle_mb=settings.worker_idle_mb,
        export_max_bytes=settings.export_max_bytes,
        principal_export_bytes=settings.principal_export_bytes,
    )
    service = AnalyticsService(
        setup.database,
        setup.data_dir,
        scale=settings.scale,
        limits=limits,
        export_dir=settings.exports_dir(setup.settings.data_dir),
    )
    return AnalyticsHandlers(service)
