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

from kumitate import deploy

WORKERS_ENV = "KUMITATE_WORKERS"
MCP_STATELESS_ENV = "KUMITATE_MCP_STATELESS"
SERVICES_ENV = "KUMITATE_SERVICES"
"""The services a worker serves (`--service` of the parent command), comma-separated."""


def worker_count(env: Mapping[str, str]) -> int:
    """KUMITATE_WORKERS (default 1); anything but a positive integer is a start-up error."""
    raw = env.get(WORKERS_ENV) or "1"
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise SystemExit(f"{WORKERS_ENV} must be a positive integer, not {raw!r}")
    return count


def mcp_stateless(env: Mapping[str, str]) -> bool:
    """Whether MCP over streamable HTTP keeps no session between requests.

    On with KUMITATE_MCP_STATELESS=1, and always with more than one worker (a session lives in
    one process's memory; the next request of that session may reach another). Stateless, each
    request stands alone: tool calls, lists and resource reads all work, server-initiated
    messages (notifications back to the client between requests) do not. Otherwise the setting
    decides (kumitate.deploy: KUMITATE_MCP_STATELESS, on by default with a database server or Redis)."""
    return worker_count(env) > 1 or deploy.mcp_stateless(env)


def services_from_env(env: Mapping[str, str]) -> list[str] | None:
    services = env.get(SERVICES_ENV)
    return services.split(",") if services else None
