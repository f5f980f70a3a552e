"""Observability: the /metrics endpoint and the log lines."""

from __future__ import annotations

from typing import Literal

from pydantic import SecretStr

from kumitate.settings.base import EnvSettings, var

__all__ = ["ObservabilitySettings"]


class ObservabilitySettings(EnvSettings):
    """What the process shows of itself: /metrics and its access, the log format, fastmcp's log level."""

    metrics_token: SecretStr | None = var(
        "KUMITATE_METRICS_TOKEN", None, "serve `/metrics` behind this bearer token", "off"
    )
    metrics: Literal["open"] | None = var("KUMITATE_METRICS", None, "`open`: serve `/metrics` without a token", "off")
    log_format: Literal["json", "text"] = var(
        "KUMITATE_LOG_FORMAT",
        "json",
        "stderr log lines (the server's, uvicorn's and fastmcp's): `json` (one object a line) or `text` for humans",
    )
    fastmcp_log_level: str | None = var(
        "FASTMCP_LOG_LEVEL", None, "fastmcp's own log level (read by fastmcp)", "`WARNING` for stdio"
    )
