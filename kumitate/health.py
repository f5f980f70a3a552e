"""Liveness and readiness: what /healthz and /readyz report.

/healthz answers while the process serves (200), and reports the data directory's state in its
body: an orchestrator that restarts on a failed liveness check must not restart a server whose
disk is full, since a restart cannot free space. /readyz is what a load balancer asks: 503 (with
Retry-After) while any storage the calls need is failing: the data directory (a small probe file
is written, synced and removed), the relational database (SQLite or PostgreSQL) and, when
configured, Redis. Each check reports only its reason, never a URL or a password.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import text

from kumitate import datadir
from kumitate.errors import ToolError


def _database(runtime: Any) -> str | None:
    try:
        with runtime.stores.database.read() as conn:
            conn.execute(text("SELECT 1"))
    except ToolError as exc:
        return exc.message
    except Exception as exc:
        return type(exc).__name__
    return None


def _redis(runtime: Any) -> str | None:
    try:
        runtime.stores.redis.ping()
    except Exception as exc:
        return type(exc).__name__
    return None


def checks(runtime: Any) -> dict[str, Callable[[Any], str | None]]:
    found: dict[str, Callable[[Any], str | None]] = {
        "data_dir": lambda rt: datadir.probe(rt.settings.data_dir),
        "database": _database,
    }
    if runtime.stores.redis is not None:
        found["redis"] = _redis
    return found


def report(runtime: Any, names: tuple[str, ...] | None = None) -> dict[str, dict[str, Any]]:
    """`{check: {"ok": bool, "error"?: reason}}` for every check (or the ones named)."""
    out: dict[str, dict[str, Any]] = {}
    for name, check in checks(runtime).items():
        if names is None or name in names:
            problem = check(runtime)
            out[name] = {"ok": problem is None} | ({"error": problem} if problem else {})
    return out
