"""Deployment settings: where shared state lives when more than one instance serves.

Typed with pydantic-settings (issue 19's "one service kit"): every variable that decides the
deployment tier is read here, once. With none of them set, kumitate is the embedded default
(SQLite and DuckDB under the data directory, process memory for short-lived state).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "KUMITATE_"


class DeploySettings(BaseSettings):
    """KUMITATE_DATABASE_URL, KUMITATE_REDIS_URL, KUMITATE_DB_MIGRATE, KUMITATE_SQLITE_BUSY_TIMEOUT_MS."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore")

    database_url: str | None = None
    """postgresql://… (psycopg 3) for shared relational state; unset: one SQLite file under the data dir."""
    redis_url: str | None = None
    """redis://… for rate-limit buckets and caches every instance must see; unset: process memory."""
    db_migrate: Literal["auto", "off"] = "auto"
    """auto: apply pending migrations at start-up; off: refuse to start on a schema-version mismatch."""
    sqlite_busy_timeout_ms: int = 5000

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DeploySettings:
        """From `env` alone when given (tests, Runtime(env=...)), else from the process environment.

        `model_validate` skips pydantic-settings' own sources, so a given mapping is the whole truth.
        """
        if env is None:
            return cls()
        fields = set(cls.model_fields)
        values = {k[len(PREFIX) :].lower(): v for k, v in env.items() if k.startswith(PREFIX)}
        return cls.model_validate({k: v for k, v in values.items() if k in fields and v != ""})

    @property
    def shared(self) -> bool:
        """True when state is shared with other instances (a database server or Redis)."""
        return bool(self.database_url or self.redis_url)


def mcp_stateless_default(env: Mapping[str, str] | None = None) -> bool:
    """Whether MCP streamable HTTP runs stateless when KUMITATE_MCP_STATELESS is not set.

    Behind a load balancer without session affinity, a session opened on one instance is unknown
    to the next ("Session not found"); stateless mode needs none. So: on whenever a database
    server or Redis is configured (the multi-instance tier), off for the embedded default.
    """
    return DeploySettings.from_env(env).shared


def mcp_stateless(env: Mapping[str, str]) -> bool:
    """KUMITATE_MCP_STATELESS (1/0, true/false) when set, else `mcp_stateless_default`."""
    raw = (env.get("KUMITATE_MCP_STATELESS") or "").strip().lower()
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    return mcp_stateless_default(env)
