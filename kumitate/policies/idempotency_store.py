"""The idempotency store on the storage layer (see `kumitate.policies.idempotency` for the design)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sqlalchemy import ColumnElement, Connection, and_, delete, select, update
from sqlalchemy.exc import SQLAlchemyError

from kumitate.context import current_call
from kumitate.errors import ToolError
from kumitate.observability.calllog import log_event
from kumitate.policies.idempotency import (
    LEASE_MARGIN_S,
    MAX_KEY_LENGTH,
    RENEWED_LEASE_S,
    SWEEP_EVERY_S,
    WAIT_S,
    Ident,
    Stored,
    _Seen,
    fingerprint,
    in_progress,
    lease_s,
)
from kumitate.storage import Database, bounds
from kumitate.storage.schema import idempotency as table

T = TypeVar("T")


class _Budget:
    """When a keyed call's own rows must be written by (time.monotonic()), and that limit in words."""

    __slots__ = ("until", "what")

    def __init__(self, until: float, what: str) -> None:
        self.until, self.what = until, what


class IdempotencyStore:
    """Idempotency keys in the database: a claim is a lease bound to the tool's deadline, a finished
    call's answer is kept for the key's time to live and replayed."""

    def __init__(
        self,
        db: Database,
        clock: Callable[[], float] = time.time,
        wait_s: float = WAIT_S,
        renewed_lease_s: float = RENEWED_LEASE_S,
    ) -> None:
        self._db = db
        self._clock = clock
        self._wait_s = wait_s
        self._renewed_lease_s = renewed_lease_s
        """KUMITATE_IDEMPOTENCY_LEASE_MS: a longer lease is held in renewed pieces of this length."""
        self._swept_at = 0.0
        self._background: set[asyncio.Future[object]] = set()

    def close(self) -> None:
        """The database belongs to the runtime, which closes it; nothing of the store's own to release."""

    def _where(self, ident: Ident) -> ColumnElement[bool]:
        return and_(table.c.tool == ident[0], table.c.principal == ident[1], table.c.key == ident[2])

    def _claim(self, ident: Ident, fp: str, lease: float) -> _Seen:
        now = self._clock()
        with self._db.transaction() as conn:
            expired = conn.execute(
                delete(table).where(self._where(ident), table.c.expires_at <= now).returning(table.c.status)
            ).all()
            claim: dict[str, object] = {"tool": ident[0], "principal": ident[1], "key": ident[2], "fingerprint": fp}
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

    def _mine(self, ident: Ident, token: float) -> ColumnElement[bool]:
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

    def _extend(self, ident: Ident, token: float, expires_at: float) -> bool:
        """Move our claim's lease end to `expires_at`; False once the claim is no longer ours to renew."""
        with self._db.transaction() as conn:
            return bool(
                conn.execute(update(table).where(self._mine(ident, token)).values(expires_at=expires_at)).rowcount
            )

    def _sweep(self, conn: Connection, now: float) -> None:
        conn.execute(delete(table).where(table.c.expires_at <= now))
        self._swept_at = now

    def _release(self, ident: Ident, token: float) -> None:
        try:
            with self._db.transaction() as conn:
                conn.execute(delete(table).where(self._mine(ident, token)))
        except (ToolError, SQLAlchemyError) as exc:
            log_event("idempotency_release_failed", tool=ident[0], error=_error_name(exc))

    async def _outside_call(self, budget: _Budget, fn: Callable[..., T], *args: object) -> T:
        """`fn` in a worker thread, outside the current call's context (so outside its commit gate), its
        transactions bounded by `budget` all the same: an empty context carries no call, hence no storage
        bound of its own, and a frozen database would hold the call (and its key) for as long as it stays
        frozen."""
        return await self._db.run(contextvars.Context().run, bounds.call_until, budget.until, budget.what, fn, *args)

    def _budget(self, lease: float) -> _Budget:
        """The claim's limit: the call's deadline when it has one already, else the tool's deadline (the
        lease without its margin) or KUMITATE_DB_TIMEOUT_MS, whichever is sooner. A keyed call whose database
        does not answer gets the same retryable STORAGE_UNAVAILABLE an unkeyed one gets, as soon."""
        call = current_call()
        if call is not None and call.deadline is not None:
            return _Budget(call.deadline, "the call's deadline")
        deadline_s = lease - LEASE_MARGIN_S
        if 0 < deadline_s < self._db.timeout_s:
            return _Budget(time.monotonic() + deadline_s, "the tool's deadline")
        ms = round(self._db.timeout_s * 1000)
        return _Budget(time.monotonic() + self._db.timeout_s, f"{ms} ms (KUMITATE_DB_TIMEOUT_MS)")

    def _after(self, budget: _Budget) -> _Budget:
        """The limit of what follows the call (storing its answer, the sweep, releasing the key): what is left
        of the claim's budget or the call's deadline, but at least the commit grace (KUMITATE_COMMIT_GRACE_MS),
        the time any commit past its bound may take."""
        call = current_call()
        until = max(budget.until, (call.deadline if call is not None else None) or 0.0)
        floor = time.monotonic() + max(self._db.grace_s, 0.5)
        return budget if until >= floor else _Budget(floor, f"{round(self._db.grace_s * 1000)} ms (the commit grace)")

    async def _take(self, ident: Ident, fp: str, lease: float, budget: _Budget) -> float | Stored:
        """Claim the key (our token) or return the response stored for it; IN_PROGRESS when another
        call holds it for longer than WAIT_S."""
        waited_until = time.monotonic() + self._wait_s
        delay = 0.005
        seen: _Seen | None = await self._outside_call(budget, self._claim, ident, fp, lease)
        while True:
            if seen is None or (seen.token is None and seen.stored is None and seen.expires_at <= self._clock()):
                seen = await self._outside_call(budget, self._claim, ident, fp, lease)  # gone, or its lease ended
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
            seen = await self._outside_call(budget, self._peek, ident)  # waiting reads; only a free key is written

    async def run(
        self,
        ident: Ident,
        arguments: object,
        ttl_s: int,
        execute: Callable[[], Awaitable[tuple[Stored, bool | None]]],
        lease: float = lease_s(None),
    ) -> tuple[Stored, bool]:
        """Execute once per key; returns (result, replayed). `execute` says whether to store the result
        (True), release the key (False), or hold the claim until its lease ends (None: the call was
        answered while its commit may still land, so a retry must not run beside it).

        `lease` is the longest the claim may hold the key; one longer than KUMITATE_IDEMPOTENCY_LEASE_MS is
        held in pieces of that length, renewed every third of it while the call runs, so a claim whose
        instance died frees its key within that setting whatever the tool's deadline."""
        if not ident[2] or len(ident[2]) > MAX_KEY_LENGTH:
            raise ToolError(f"an idempotency key must be 1-{MAX_KEY_LENGTH} characters", code="BAD_REQUEST")
        budget = self._budget(lease)
        piece = min(lease, self._renewed_lease_s)
        taken = await self._take(ident, fingerprint(arguments), piece, budget)
        if isinstance(taken, Stored):
            return taken, True
        renewal = asyncio.ensure_future(self._renew(ident, taken, taken + lease)) if piece < lease else None
        try:
            result, keep = await execute()
        except BaseException:
            # not awaited: a cancelled call must not wait on the database, nor hold the event loop for it
            self._later(ident[0], self._outside_call(self._after(budget), self._release, ident, taken))
            raise
        finally:
            if renewal is not None:
                renewal.cancel()
        after = self._after(budget)
        if keep is None:
            log_event("idempotency_claim_held", tool=ident[0])
            if renewal is not None:  # the call's commit may still land: its claim lasts its whole lease
                self._later(ident[0], self._outside_call(after, self._extend, ident, taken, taken + lease))
            return result, False
        if not keep:
            await self._outside_call(after, self._release, ident, taken)
            return result, False
        try:
            await self._outside_call(after, self._finish, ident, taken, result, ttl_s)
        except (ToolError, SQLAlchemyError) as exc:
            log_event("idempotency_store_failed", tool=ident[0], error=_error_name(exc))
            await self._outside_call(self._after(after), self._release, ident, taken)
        return result, False

    async def _renew(self, ident: Ident, token: float, ends_at: float) -> None:
        """Every third of the renewed lease, move the claim's end one lease ahead (never past `ends_at`,
        the call's whole lease) until the call ends or the claim is no longer ours. A renewal that fails
        (the database is away) is logged and tried again at the next third."""
        every = self._renewed_lease_s / 3
        while True:
            await asyncio.sleep(every)
            expires_at = min(self._clock() + self._renewed_lease_s, ends_at)
            budget = _Budget(time.monotonic() + every, f"{round(every * 1000)} ms (a third of the lease)")
            try:
                if not await self._outside_call(budget, self._extend, ident, token, expires_at):
                    return
            except (ToolError, SQLAlchemyError) as exc:
                log_event("idempotency_renew_failed", tool=ident[0], error=_error_name(exc))
                continue
            if expires_at >= ends_at:
                return

    def _later(self, tool: str, work: Awaitable[object]) -> None:
        """Run `work` without waiting for it (kept referenced until it ends; a failure is logged)."""
        future = asyncio.ensure_future(work)
        self._background.add(future)

        def done(f: asyncio.Future[object]) -> None:
            self._background.discard(f)
            error = None if f.cancelled() else f.exception()
            if error is not None:
                log_event("idempotency_background_failed", tool=tool, error=_error_name(error))

        future.add_done_callback(done)


def _error_name(exc: BaseException) -> str:
    """The storage error's own class (the DBAPI's, e.g. OperationalError), not the wrapper's."""
    cause = exc.__cause__ if isinstance(exc, ToolError) and exc.__cause__ is not None else exc
    orig = getattr(cause, "orig", None)
    return type(orig if orig is not None else cause).__name__
