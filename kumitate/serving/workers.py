"""Several worker processes (KUMITATE_WORKERS / `kumitate serve --workers N`) and what they imply.

Each worker is a full server process (uvicorn's multi-process supervisor forks N of them on
one socket). What they share lives in files: the SQLite stores run in WAL mode, so readers
and one writer at a time work across processes. What lives in process memory is per worker:
without Redis, each worker keeps its own rate-limit buckets (so a client spread over N workers
may get up to N times its limit), and MCP streamable-HTTP sessions, which a request landing
on another worker would not find. So MCP runs stateless there (one setting below).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError

from kumitate.serving import deploy
from kumitate.settings import Settings

WORKERS_ENV = "KUMITATE_WORKERS"
MCP_STATELESS_ENV = "KUMITATE_MCP_STATELESS"
SERVICES_ENV = "KUMITATE_SERVICES"
"""The services a worker serves (`--service` of the parent command), comma-separated."""


def _settings(settings: Settings | Mapping[str, str]) -> Settings:
    return settings if isinstance(settings, Settings) else Settings.from_env(settings)


def worker_count(settings: Settings | Mapping[str, str]) -> int:
    """KUMITATE_WORKERS (default 1); anything but a positive integer is a start-up error."""
    try:
        return _settings(settings).workers
    except ValidationError:
        raw = settings.get(WORKERS_ENV) if isinstance(settings, Mapping) else None
        raise SystemExit(f"{WORKERS_ENV} must be a positive integer, not {raw!r}") from None


def mcp_stateless(settings: Settings | Mapping[str, str]) -> bool:
    """Whether MCP over streamable HTTP keeps no session between requests.

    On with KUMITATE_MCP_STATELESS=1, and always with more than one worker (a session lives in
    one process's memory; the next request of that session may reach another). Stateless, each
    request stands alone: tool calls, lists and resource reads all work, server-initiated
    messages (notifications back to the client between requests) do not. Otherwise the setting
    decides (kumitate.serving.deploy: KUMITATE_MCP_STATELESS, on by default with a database server or Redis)."""
    settings = _settings(settings)
    return settings.workers > 1 or deploy.mcp_stateless(settings)
