"""The idempotency store on the storage layer (see `kumitate.policies.idempotency` for the design)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, and_, delete, select, update
from sqlalchemy.exc import SQLAlchemyError

from kumitate.calllog import log_event
from kumitate.errors import ToolError
from kumitate.policies.idempotency import (
    MAX_KEY_LENGTH,
    SWEEP_EVERY_S,
    WAIT_S,
    Ident,
    Stored,
    _Seen,
    fingerprint,
    in_progress,
    lease_s,
)
from kumitate.storage import Database
from kumitate.storage.schema import idempotency as table

T = TypeVar("T")


class IdempotencyStore:
    """Idempotency keys in the database: a claim is a lease bound to the tool's deadline, a finished
    call's answer is kept for the key's time to live and replayed."""

    def __init__(self, db: Database, clock: Callable[[], float] = time.time, wait_s: float = WAIT_S) -> None:
        self._db = db
        self._clock = clock
        self._wait_s = wait_s
        self._swept_at = 0.0

    def close(self) -> None:
        """The database belongs to the runtime, which closes it; nothing of the store's own to release."""

    def _where(self, ident: Ident) -> Any:
        return and_(table.c.tool == ident[0], table.c.principal == ident[1], table.c.key == ident[2])

    def _claim(self, ident: Ident, fp: str, lease: float) -> _Seen:
        now = self._clock()
        with self._db.transaction() as conn:
            expired = conn.execute(
                delete(table).where(self._where(ident), table.c.expires_at <= now).returning(table.c.status)
            ).all()
            claim: dict[str, Any] = {"tool": ident[0], "principal": ident[1], "key": ident[2], "fingerprint": fp}
            claim |= {"status": None, "body": None, "created_at": now, "expires_at": now + lease}
            owned = conn.execute(self._db.insert_ignore(table, claim).returning(table.c.key)).first() is not None
            found = None if owned else self._found(conn, ident)
        if owned:
            if any(row.status is None for row in expired):
                log_event("idempotency_lease_taken_over", tool=ident[0])
            return _Seen(token=now)
        return found or _Seen(token=None, fingerprint=fp, expires_at=now)  # released meanwhile: try again

    def _peek(self, ident: Ident) -> _Seen | None:
        """Another call's claim or stored response, read without writing (None: no row)."""
        with self._db.read() as conn:
            return self._found(conn, ident)

    def _found(self, conn: Connection, ident: Ident) -> _Seen | None:
        columns = (table.c.fingerprint, table.c.status, table.c.body, table.c.expires_at)
        row = conn.execute(select(*columns).where(self._where(ident))).one_or_none()
        if row is None:
            return None
        stored = None if row.status is None else Stored(row.status, json.loads(row.body))
        return _Seen(token=None, fingerprint=row.fingerprint, stored=stored, expires_at=row.expires_at)

    def _mine(self, ident: Ident, token: float) -> Any:
        return and_(self._where(ident), table.c.created_at == token, table.c.status.is_(None))

    def _finish(self, ident: Ident, token: float, stored: Stored, ttl_s: int) -> None:
        now = self._clock()
        with self._db.transaction() as conn:
            kept = conn.execute(
                update(table)
                .where(self._mine(ident, token))
                .values(status=stored.status, body=json.dumps(stored.body, ensure_ascii=False), expires_at=now + ttl_s)
            ).rowcount
            if now - self._swept_at >= SWEEP_EVERY_S:
                self._sweep(conn, now)
        if not kept:  # this call outlived its lease and another took the key over: its response is the key's
            log_event("idempotency_lease_lost", tool=ident[0])

    def _sweep(self, conn: Connection, now: float) -> None:
        conn.execute(delete(table).where(table.c.expires_at <= now))
        self._swept_at = now

    def _release(self, ident: Ident, token: float) -> None:
        try:
            with self._db.transaction() as conn:
                conn.execute(delete(table).where(self._mine(ident, token)))
        except (ToolError, SQLAlchemyError) as exc:
            log_event("idempotency_release_failed", tool=ident[0], error=_error_name(exc))

    async def _outside_call(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn` in a worker thread, outside the current call's context (so outside its commit gate)."""
        return await self._db.run(contextvars.Context().run, fn, *args)

    async def _take(self, ident: Ident, fp: str, lease: float) -> float | Stored:
        """Claim the key (our token) or return the response stored for it; IN_PROGRESS when another
        call holds it for longer than WAIT_S."""
        waited_until = time.monotonic() + self._wait_s
        delay = 0.005
        seen: _Seen | None = await self._outside_call(self._claim, ident, fp, lease)
        while True:
            if seen is None or (seen.token is None and seen.stored is None and seen.expires_at <= self._clock()):
                seen = await self._outside_call(self._claim, ident, fp, lease)  # gone, or its lease ended
            if seen.token is not None:
                return seen.token
            if seen.fingerprint != fp:
                raise ToolError("this idempotency key was already used with a different request", code="CONFLICT")
            if seen.stored is not None:
                return seen.stored
            left = waited_until - time.monotonic()
            if left <= 0:
                raise in_progress(seen.expires_at - self._clock())
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 2, 0.1)
            seen = await self._outside_call(self._peek, ident)  # waiting reads; only a free key is written

    async def run(
        self,
        ident: Ident,
        arguments: Any,
        ttl_s: int,
        execute: Callable[[], Awaitable[tuple[Stored, bool | None]]],
        lease: float = lease_s(None),
    ) -> tuple[Stored, bool]:
        """Execute once per key; returns (result, replayed). `execute` says whether to store the result
        (True), release the key (False), or hold the claim until its lease ends (None: the call was
        answered while its commit may still land, so a retry must not run beside it)."""
        if not ident[2] or len(ident[2]) > MAX_KEY_LENGTH:
            raise ToolError(f"an idempotency key must be 1-{MAX_KEY_LENGTH} characters", code="BAD_REQUEST")
        taken = await self._take(ident, fingerprint(arguments), lease)
        if isinstance(taken, Stored):
            return taken, True
        try:
            result, keep = await execute()
        except BaseException:
            contextvars.Context().run(self._release, ident, taken)
            raise
        if keep is None:
            log_event("idempotency_claim_held", tool=ident[0])
            return result, False
        if not keep:
            await self._outside_call(self._release, ident, taken)
            return result, False
        try:
            await self._outside_call(self._finish, ident, taken, result, ttl_s)
        except (ToolError, SQLAlchemyError) as exc:
            log_event("idempotency_store_failed", tool=ident[0], error=_error_name(exc))
            await self._outside_call(self._release, ident, taken)
        return result, False


def _error_name(exc: BaseException) -> str:
    """The storage error's own class (the DBAPI's, e.g. OperationalError), not the wrapper's."""
    cause = exc.__cause__ if isinstance(exc, ToolError) and exc.__cause__ is not None else exc
    orig = getattr(cause, "orig", None)
    return type(orig if orig is not None else cause).__name__
