"""Idempotency keys on the storage layer: exactly once per key, across every instance.

Keyed by (tool, principal, key) with a fingerprint of the request. The same key with the
same request replays the first response; with a different request it is CONFLICT.

Exactly once, also across processes: the first call inserts a *claim* row (INSERT … ON
CONFLICT DO NOTHING, so the database picks one winner), runs, and turns the claim into the
stored response. Every other call with that key finds the claim and waits for the response
(in-process callers queue on an asyncio lock; other instances poll the row). A claim has a
lease: if its instance dies mid-call, the key is free again once the lease has passed.

Retryable failures (timeouts, upstream errors) are not stored: the claim is released and a
retry runs. A response that cannot be stored (disk full, database gone) is still returned:
the handler has run and may have committed, so failing the call would tell the client the
opposite of what happened. The failure is logged; a retry with that key runs again. A claim
that cannot be written is STORAGE_UNAVAILABLE (503, retryable): nothing has run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, delete, select, update
from sqlalchemy.exc import SQLAlchemyError

from kumitate.calllog import log_event
from kumitate.errors import ToolError
from kumitate.storage import Database
from kumitate.storage.schema import idempotency as table

MAX_KEY_LENGTH = 255
LEASE_S = 300.0
"""How long a claim holds a key while its call runs (past every deadline a call may have)."""
SWEEP_EVERY_S = 60.0

Ident = tuple[str, str, str]


def fingerprint(arguments: Any) -> str:
    canonical = json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(slots=True)
class Stored:
    status: int
    body: Any


@dataclass(slots=True)
class _Seen:
    """What a claim attempt found: ours (owned), or another call's claim or stored response."""

    owned: bool
    fingerprint: str = ""
    stored: Stored | None = None


class IdempotencyStore:
    def __init__(self, db: Database, clock: Callable[[], float] = time.time, lease_s: float = LEASE_S) -> None:
        self._db = db
        self._clock = clock
        self._lease_s = lease_s
        self._locks: dict[Ident, asyncio.Lock] = {}
        self._swept_at = 0.0

    def close(self) -> None:
        """The database belongs to the runtime, which closes it; nothing of the store's own to release."""

    def _where(self, ident: Ident) -> Any:
        return and_(table.c.tool == ident[0], table.c.principal == ident[1], table.c.key == ident[2])

    def _claim(self, ident: Ident, fp: str) -> _Seen:
        now = self._clock()
        with self._db.transaction() as conn:
            conn.execute(delete(table).where(self._where(ident), table.c.expires_at <= now))
            claim: dict[str, Any] = {"tool": ident[0], "principal": ident[1], "key": ident[2], "fingerprint": fp}
            claim |= {"status": None, "body": None, "created_at": now, "expires_at": now + self._lease_s}
            if conn.execute(self._db.insert_ignore(table, claim).returning(table.c.key)).first() is not None:
                return _Seen(owned=True)
            row = conn.execute(
                select(table.c.fingerprint, table.c.status, table.c.body).where(self._where(ident))
            ).one_or_none()
        if row is None:  # released between our insert and select: try again
            return _Seen(owned=False, fingerprint=fp)
        stored = None if row.status is None else Stored(row.status, json.loads(row.body))
        return _Seen(owned=False, fingerprint=row.fingerprint, stored=stored)

    def _finish(self, ident: Ident, fp: str, stored: Stored, ttl_s: int) -> None:
        now = self._clock()
        with self._db.transaction() as conn:
            conn.execute(
                update(table)
                .where(self._where(ident), table.c.fingerprint == fp, table.c.status.is_(None))
                .values(status=stored.status, body=json.dumps(stored.body, ensure_ascii=False), expires_at=now + ttl_s)
            )
            if now - self._swept_at >= SWEEP_EVERY_S:
                self._sweep(conn, now)

    def _sweep(self, conn: Connection, now: float) -> None:
        conn.execute(delete(table).where(table.c.expires_at <= now))
        self._swept_at = now

    def _release(self, ident: Ident) -> None:
        try:
            with self._db.transaction() as conn:
                conn.execute(delete(table).where(self._where(ident), table.c.status.is_(None)))
        except (ToolError, SQLAlchemyError) as exc:
            log_event("idempotency_release_failed", tool=ident[0], error=_error_name(exc))

    async def _wait_for_claim(self, ident: Ident, fp: str) -> Stored | None:
        """Claim the key (None) or return the response stored for it, waiting while another call runs."""
        delay = 0.005
        while True:
            seen = await self._db.run(self._claim, ident, fp)
            if seen.owned:
                return None
            if seen.fingerprint != fp:
                raise ToolError("this idempotency key was already used with a different request", code="CONFLICT")
            if seen.stored is not None:
                return seen.stored
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.1)

    async def run(
        self,
        ident: Ident,
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
                found = await self._wait_for_claim(ident, fp)
                if found is not None:
                    return found, True
                try:
                    result, keep = await execute()
                except BaseException:
                    self._release(ident)
                    raise
                if not keep:
                    await self._db.run(self._release, ident)
                    return result, False
                try:
                    await self._db.run(self._finish, ident, fp, result, ttl_s)
                except (ToolError, SQLAlchemyError) as exc:
                    log_event("idempotency_store_failed", tool=ident[0], error=_error_name(exc))
                    await self._db.run(self._release, ident)
                return result, False
        finally:
            if not lock.locked() and not getattr(lock, "_waiters", None):
                self._locks.pop(ident, None)


def _error_name(exc: BaseException) -> str:
    """The storage error's own class (the DBAPI's, e.g. OperationalError), not the wrapper's."""
    cause = exc.__cause__ if isinstance(exc, ToolError) and exc.__cause__ is not None else exc
    orig = getattr(cause, "orig", None)
    return type(orig if orig is not None else cause).__name__
