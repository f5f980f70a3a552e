"""Storage: where shared state lives when more than one instance serves, and how long a transaction may take."""

from __future__ import annotations

from typing import Literal

from kumitate.settings.base import EnvSettings, var

__all__ = ["DeploySettings"]


class DeploySettings(EnvSettings):
    """Where shared state lives when more than one instance serves (kumitate.serving.deploy)."""

    database_url: str | None = var(
        "KUMITATE_DATABASE_URL", None, "`postgresql://…` for shared relational state", "SQLite under the data dir"
    )
    redis_url: str | None = var(
        "KUMITATE_REDIS_URL",
        None,
        "`redis://…` for rate limits and caches shared by instances",
        "none (process memory)",
    )
    db_migrate: Literal["auto", "off"] = var(
        "KUMITATE_DB_MIGRATE", "auto", "`off`: refuse to start on a schema-version mismatch instead of migrating"
    )
    sqlite_busy_timeout_ms: int = var(
        "KUMITATE_SQLITE_BUSY_TIMEOUT_MS", 5000, "SQLite busy timeout (a call's remaining deadline lowers it)", ge=0
    )
    db_timeout_ms: int = var(
        "KUMITATE_DB_TIMEOUT_MS",
        30000,
        "longest one transaction of a call without a deadline may take (pool wait, statements, commit); "
        "past it: 503 `STORAGE_UNAVAILABLE`",
        gt=0,
    )
    off_loop_bytes: int = var(
        "KUMITATE_OFF_LOOP_BYTES",
        1 << 20,
        "a JSON body larger than this is parsed on its service's thread and checked in a worker process, "
        "never on the event loop (kumitate.offloop), bytes",
        ge=0,
    )
    commit_grace_ms: int = var(
        "KUMITATE_COMMIT_GRACE_MS",
        2000,
        "how long past its deadline a call whose commit is under way may take to report it; then 408 "
        "(outcome unknown) and the database connection is cut",
        ge=0,
    )

    @property
    def shared(self) -> bool:
        """True when state is shared with other instances (a database server or Redis)."""
        return bool(self.database_url or self.redis_url)
