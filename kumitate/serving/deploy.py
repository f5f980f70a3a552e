"""Deployment settings: where shared state lives when more than one instance serves.

The variables are declared with the others in kumitate.settings (`DeploySettings`, which `Settings`
extends). With none of them set, kumitate is the embedded default (SQLite and DuckDB under the
data directory, process memory for short-lived state).
"""

from __future__ import annotations

from collections.abc import Mapping

from kumitate.settings import DeploySettings, Settings

__all__ = ["DeploySettings", "mcp_stateless"]


def mcp_stateless(settings: Settings | Mapping[str, str]) -> bool:
    """Whether MCP streamable HTTP keeps no session between requests: KUMITATE_MCP_STATELESS when
    set, else on whenever a database server or Redis is configured (the multi-instance tier: behind
    a load balancer without session affinity, a session opened on one instance is unknown to the
    next, "Session not found"), off for the embedded default. A mapping is read as the settings are."""
    if not isinstance(settings, Settings):
        settings = Settings.from_env(settings)
    return settings.shared if settings.mcp_stateless is None else settings.mcp_stateless
