"""Every environment variable the analytics service reads, typed and checked at start-up.

Built once in `create()` with `setup.read(AnalyticsSettings)`; the core is handed typed values
(`Limits`, the scale, the export directory) and reads no environment of its own. The export
directory's variable is declared by `handlers.analytics.client.ExportLocation`, which the
helpers beside the LLM read too: one declaration, one parse, for the server and its readers.
"""

from __future__ import annotations

from handlers.analytics.client import ExportLocation
from kumitate.settings import var

MB = 1_000_000


class AnalyticsSettings(ExportLocation):
    """The analytics service's variables (KUMITATE_EXPORT_DIR comes from ExportLocation)."""

    scale: float = var(
        "KUMITATE_ANALYTICS_SCALE",
        1.0,
        "size of the sample DuckDB generated on first start (1 = 60 activities, ~200k per-second rows)",
        "`1`",
        gt=0,
        allow_inf_nan=False,
    )
    timeout_s: float = var(
        "KUMITATE_ANALYTICS_TIMEOUT_S",
        10.0,
        "analytics query deadline, seconds (the call's deadline caps it)",
        "`10`",
        gt=0,
        allow_inf_nan=False,
    )
    pool_size: int = var(
        "KUMITATE_ANALYTICS_POOL_SIZE",
        4,
        "analytics worker processes, i.e. queries running at once (each started when first needed)",
        ge=1,
    )
    worker_memory_mb: int = var(
        "KUMITATE_ANALYTICS_WORKER_MEMORY_MB",
        1024,
        "memory one analytics worker (one query) may use, MiB (RLIMIT_DATA); QUERY_TOO_EXPENSIVE above",
        "`1024`",
        ge=256,
    )
    worker_idle_mb: int = var(
        "KUMITATE_ANALYTICS_WORKER_IDLE_MB",
        192,
        "resident memory an idle analytics worker may keep, MiB: one above it after a call is replaced (a worker "
        "holds ~80 MiB after a query; a large one leaves more behind)",
        "`192`",
        ge=64,
    )
    export_max_mb: float = var(
        "KUMITATE_ANALYTICS_EXPORT_MAX_MB",
        100.0,
        "bytes on disk one export may write, MB",
        "`100`",
        gt=0,
        allow_inf_nan=False,
    )
    principal_export_mb: float = var(
        "KUMITATE_ANALYTICS_PRINCIPAL_EXPORT_MB",
        500.0,
        "bytes on disk one principal's live exports may hold, MB",
        "`500`",
        gt=0,
        allow_inf_nan=False,
    )

    @property
    def export_max_bytes(self) -> int:
        return int(self.export_max_mb * MB)

    @property
    def principal_export_bytes(self) -> int:
        return int(self.principal_export_mb * MB)
