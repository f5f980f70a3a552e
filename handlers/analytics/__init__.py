"""analytics: LLM-safe analysis of a running-activity DuckDB (seed 004).

The server hands out handles and summaries, never raw rows: `export` writes a
Parquet/CSV file and returns an opaque handle (fetched via `export://{handle}`),
`profile` and `histogram` return ~1 KB summaries, `materialize` caches an
intermediate result as a temp table. Code beside the LLM loads exports with the
guarded helpers in `handlers.analytics.llm_helpers`.

This module is the thin transport-facing layer: pydantic input -> dict -> core.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from kumitate.context import Attachment, CallContext
from kumitate.settings import Settings

from .service import AnalyticsService, Limits, Sweeper

if TYPE_CHECKING:  # generated later by codegen
    from generated.analytics.models import ExportInput, HistogramInput, MaterializeInput, ProfileInput

SERVICE = "analytics"


def _dump(model: Any) -> dict[str, Any]:
    if isinstance(model, dict):
        return {k: v for k, v in model.items() if v is not None}
    return dict(model.model_dump(mode="json", exclude_none=True))


class AnalyticsHandlers:
    """One method per tool and resource; blocking, so the runtime runs them in a worker thread."""

    def __init__(self, service: AnalyticsService, sweep_interval_s: float | None = 300.0) -> None:
        self.service = service
        self._sweeper = Sweeper(service, sweep_interval_s) if sweep_interval_s else None

    def export(self, input: ExportInput, ctx: CallContext) -> dict[str, Any]:
        return self.service.export(_dump(input), deadline=ctx.deadline)

    def profile(self, input: ProfileInput, ctx: CallContext) -> dict[str, Any]:
        return self.service.profile(_dump(input), deadline=ctx.deadline)  # size-trim warnings travel in the body

    def histogram(self, input: HistogramInput, ctx: CallContext) -> dict[str, Any]:
        return self.service.histogram(_dump(input), deadline=ctx.deadline)

    def materialize(self, input: MaterializeInput, ctx: CallContext) -> dict[str, Any]:
        return self.service.materialize(_dump(input), deadline=ctx.deadline)

    def read_schema(self, ctx: CallContext) -> dict[str, Any]:
        return self.service.schema()

    def read_export_file(self, ctx: CallContext, handle: str) -> Attachment:
        """Binary resource `export_file` (export://{handle}), with the export's own MIME type (parquet or csv)."""
        data, mime = self.service.read_export(handle)
        return Attachment(mime, data)

    def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.stop()
        self.service.close()


def create(settings: Settings) -> AnalyticsHandlers:
    """Open (generating on first start) var/analytics/activities.duckdb and serve it.

    Environment: KUMITATE_ANALYTICS_SCALE (default 1.0, only used when the database
    is generated), KUMITATE_ANALYTICS_TIMEOUT_S (query deadline, default 10).
    """
    scale = float(os.environ.get("KUMITATE_ANALYTICS_SCALE", "1.0"))
    timeout = float(os.environ.get("KUMITATE_ANALYTICS_TIMEOUT_S", "10"))
    service = AnalyticsService(
        settings.service_dir(SERVICE),
        scale=scale,
        limits=Limits(query_timeout_s=timeout),
        public_base_url=settings.public_base_url,
    )
    return AnalyticsHandlers(service)
