"""Idempotency keys: one SQLite store for both transports, surviving restarts.

Keyed by (tool, principal, key) with a fingerprint of the request. The same key
with the same request replays the first response; with a different request it is
CONFLICT; concurrent requests with one key wait on one lock and execute once.
Retryable failures (timeouts, upstream errors) are not stored, so a retry runs.
A response that cannot be stored (disk full, read-only file) is still returned: the
handler has run and may have committed, so failing the call would tell the client
the opposite of what happened. The failure is logged; a retry with that key runs again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kumitate.calllog import log_event
from kumitate.errors import ToolError

SCHEMA = """
CREATE TABLE IF NOT EXISTS idempotency (
    tool TEXT NOT NULL,
    principal TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status INTEGER NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (tool, principal, key)
);
CREATE INDEX IF NOT EXISTS idempotency_expiry ON idempotency (expires_at);
"""
MAX_KEY_LENGTH = 255


def fingerprint(arguments: Any) -> str:
    canonical = json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(slots=True)
class Stored:
    status: int
    body: Any


class IdempotencyStore:
    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)
        self._db_lock = threading.Lock()
        self._locks: dict[tuple[str, str, str], asyncio.Lock] = {}
        self._clock = clock

    def close(self) -> None:
        self._db.close()

    def _get(self, ident: tuple[str, str, str]) -> tuple[str, Stored] | None:
        with self._db_lock:
            row = self._db.execute(
                "SELECT fingerprint, status, body FROM idempotency WHERE tool=? AND principal=? AND key=? AND expires_at > ?",
                (*ident, self._clock()),
            ).fetchone()
        return (row[0], Stored(row[1], json.loads(row[2]))) if row else None

    def _put(self, ident: tuple[str, str, str], fp: str, stored: Stored, ttl_s: int) -> None:
        now = self._clock()
        with self._db_lock:
            self._db.execute("DELETE FROM idempotency WHERE expires_at <= ?", (now,))
            self._db.execute(
                "INSERT OR REPLACE INTO idempotency VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (*ident, fp, stored.status, json.dumps(stored.body, ensure_ascii=False), now, now + ttl_s),
            )

    async def run(
        self,
        ident: tuple[str, str, str],
        arguments: Any,
        ttl_s: int,
        execute: Callable[[], Awaitable[tuple[Stored, bool]]],
    ) -> tuple[Stored, bool]:
        """Execute once per key; returns (result, replayed). `execute` says whether to store."""
        if not ident[2] or len(ident[2]) > MAX_KEY_LENGTH:
            raise ToolError(f"an idempotency key must be 1-{MAX_KEY_LENGTH} characters", code="BAD_REQUEST")
        fp = fingerprint(arguments)
        lock = self._locks.setdefault(ident, asyncio.Lock())
        try:
            async with lock:
                found = self._get(ident)
                if found is not None:
                    if found[0] != fp:
                        raise ToolError(
                            "this idempotency key was already used with a different request", code="CONFLICT"
                        )
                    return found[1], True
                result, keep = await execute()
                if keep:
                    try:
                        self._put(ident, fp, result, ttl_s)
                    except sqlite3.Error as exc:
                        log_event("idempotency_store_failed", tool=ident[0], error=type(exc).__name__)
                return result, False
        finally:
            if not lock.locked() and not getattr(lock, "_waiters", None):
                self._locks.pop(ident, None)
