"""How long one transaction may take, and the engine hooks that hold it to that.

A transaction run for a call is bounded by the call's deadline (or, for a call without one, by
KUMITATE_DB_TIMEOUT_MS from its start); a readiness check binds its own limit (`within`).
The bound reaches the engine through a context variable, so the pool's checkout hook applies it
to the very connection handed out, before anything is sent on it:

- PostgreSQL: `statement_timeout` and `lock_timeout` for this transaction only (`set_config(…,
  true)`, i.e. SET LOCAL), from the time left; the same statement is the liveness ping that
  `pool_pre_ping` used to send. Outside a call (start-up, migrations) the plain ping, no limits.
- SQLite: `busy_timeout` lowered to the time left (KUMITATE_SQLITE_BUSY_TIMEOUT_MS otherwise).
- Both: the connection is armed on the watchdog at the bound (plus the commit grace for a
  transaction that writes), so a server that stops answering (frozen, partitioned) costs the
  thread that much and no more.

Getting a working connection (the pool wait, connecting, the ping) marks the current call as
waiting on storage (`CallState.blocked_on`), so a call whose deadline passes there is answered
503 STORAGE_UNAVAILABLE (the database is unavailable, a retry may succeed), not 408. A statement
is not marked: one that runs past the deadline is the database doing the call's work (408,
"narrow the request"), which the deadline step cannot tell from a server that hung mid-statement.
"""

from __future__ import annotations

import math
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import Engine, event, exc

from kumitate.context import current_call, current_state
from kumitate.errors import ToolError
from kumitate.faults import STORAGE_RETRY_AFTER_MS
from kumitate.storage.watchdog import WATCHDOG, Entry

if TYPE_CHECKING:
    from sqlalchemy.engine.interfaces import DBAPIConnection
    from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

T = TypeVar("T")
_current: ContextVar[Bound | None] = ContextVar("kumitate_storage_bound", default=None)
_within: ContextVar[tuple[float, str] | None] = ContextVar("kumitate_storage_within", default=None)


@dataclass(slots=True)
class Bound:
    """The storage limit of one transaction: when waits end, when the watchdog cuts, and what to say."""

    until: float
    """time.monotonic() by which the pool wait, each statement and each lock wait end."""
    hard: float
    """When the watchdog cuts the connection: `until`, plus the commit grace for a transaction that writes."""
    what: str
    """The limit in words, for the error message."""
    entries: list[Entry] = field(default_factory=list)

    def remaining_s(self) -> float:
        """Seconds left before the limit (0 once it has passed)."""
        return max(0.0, self.until - time.monotonic())

    def remaining_ms(self) -> int:
        """Milliseconds left, at least 1: what a statement timeout is set to."""
        return max(1, math.ceil(self.remaining_s() * 1000))

    @property
    def fired(self) -> bool:
        """Whether the watchdog has cut one of this transaction's connections."""
        return any(e.fired for e in self.entries)

    def exhausted(self) -> bool:
        """Whether the limit has passed (or the watchdog cut a connection): a failure now is the limit's."""
        return self.fired or time.monotonic() >= self.until - 0.05

    def error(self) -> ToolError:
        """The retryable STORAGE_UNAVAILABLE a call gets when the database did not answer within the limit."""
        return ToolError(
            f"the database did not answer within {self.what}; nothing was saved; retry shortly",
            code="STORAGE_UNAVAILABLE",
            details={"retry_after_ms": STORAGE_RETRY_AFTER_MS},
        )


def call_until(deadline: float, what: str, fn: Callable[..., T], *args: object) -> T:
    """`fn(*args)` with every transaction it starts bounded to end by `deadline` (see `until`): what
    bookkeeping run in an empty context (the idempotency store, the task store) is handed to the storage
    threads as, so a frozen database cannot hold it longer than the call would have waited."""
    with until(deadline, what):
        return fn(*args)


def current() -> Bound | None:
    """The bound of the transaction being opened in this thread, if any."""
    return _current.get()


def bound_for(timeout_s: float, grace_s: float) -> Bound | None:
    """The bound of a transaction starting now: `within`'s, else the current call's, else none."""
    now = time.monotonic()
    limit = _within.get()
    if limit is not None:
        until, what = limit
        return Bound(until, until + grace_s, what)
    call = current_call()
    if call is None:
        return None
    if call.deadline is not None:
        until, what = call.deadline, "the call's deadline"
    else:
        until, what = now + timeout_s, f"{round(timeout_s * 1000)} ms (KUMITATE_DB_TIMEOUT_MS)"
    return Bound(until, until + grace_s, what)


@contextmanager
def within(seconds: float, what: str | None = None) -> Iterator[None]:
    """Bound every transaction started inside to `seconds` from now (a health check's limit); `what`
    names the limit in the error message (default: the milliseconds)."""
    with until(time.monotonic() + seconds, what or f"{round(seconds * 1000)} ms"):
        yield


@contextmanager
def until(deadline: float, what: str) -> Iterator[None]:
    """Bound every transaction started inside to end by `deadline` (time.monotonic()), whatever call
    context it runs in: the idempotency store's rows commit in an empty context (outside the call's
    commit gate), so the call's own bound cannot reach them and is handed over this way."""
    token = _within.set((deadline, what))
    try:
        yield
    finally:
        _within.reset(token)


@contextmanager
def applied(bound: Bound | None) -> Iterator[None]:
    """Hand `bound` to the checkout hook for the connections taken inside (see `disarm`)."""
    token = _current.set(bound)
    try:
        yield
    finally:
        _current.reset(token)


def disarm(bound: Bound | None) -> None:
    """Take the bound's connections off the watchdog: before they go back to the pool, so it never
    cuts a connection another call holds by then."""
    if bound is not None:
        for entry in bound.entries:
            WATCHDOG.disarm(entry)


@contextmanager
def waiting_on_storage() -> Iterator[None]:
    """Mark the current call as waiting on storage for the block, so a deadline reached here is answered
    503 STORAGE_UNAVAILABLE (retry) rather than 408 (narrow the request)."""
    state = current_state()
    if state is None:
        yield
        return
    before, state.blocked_on = state.blocked_on, "storage"
    try:
        yield
    finally:
        state.blocked_on = before


def install(engine: Engine, busy_timeout_ms: int) -> None:
    """The checkout hook (limits, ping, watchdog) on `engine`."""
    postgres = engine.dialect.name == "postgresql"

    @event.listens_for(engine.pool, "connect")
    def _fresh(_dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry) -> None:
        record.info["kumitate_fresh"] = True

    @event.listens_for(engine.pool, "checkout")
    def _checkout(
        dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry, _proxy: PoolProxiedConnection
    ) -> None:
        fresh = record.info.pop("kumitate_fresh", False)
        bound = _current.get()
        entry = _arm(dbapi_connection, bound, postgres) if bound is not None else None
        try:
            if postgres:
                _prepare_postgres(engine, dbapi_connection, bound, fresh)
            else:
                _prepare_sqlite(dbapi_connection, record, bound, busy_timeout_ms)
        except Exception as error:
            if entry is not None:
                WATCHDOG.disarm(entry)
            if bound is not None and bound.exhausted():
                raise bound.error() from error
            if not postgres:
                raise
            raise exc.DisconnectionError(f"ping failed: {type(error).__name__}") from error  # the pool reconnects


def _arm(dbapi_connection: DBAPIConnection, bound: Bound, postgres: bool) -> Entry:
    if postgres:
        # a duplicate of the socket: cutting it can never reach a descriptor number reused after close
        sock = socket.socket(fileno=os.dup(dbapi_connection.pgconn.socket))
        entry = WATCHDOG.arm(bound.hard, lambda: sock.shutdown(socket.SHUT_RDWR), sock.close)
    else:
        entry = WATCHDOG.arm(bound.hard, dbapi_connection.interrupt)
    bound.entries.append(entry)
    return entry


def _prepare_postgres(engine: Engine, dbapi_connection: DBAPIConnection, bound: Bound | None, fresh: bool) -> None:
    if bound is None:
        if not fresh:
            engine.dialect.do_ping(dbapi_connection)
        return
    ms = str(bound.remaining_ms())
    cursor = dbapi_connection.cursor()
    try:  # this transaction only (is_local): the connection goes back to the pool without limits
        cursor.execute(
            "SELECT set_config('statement_timeout', %s, true), set_config('lock_timeout', %s, true)", (ms, ms)
        )
    finally:
        cursor.close()


def _prepare_sqlite(
    dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry, bound: Bound | None, busy_timeout_ms: int
) -> None:
    ms = busy_timeout_ms if bound is None else min(busy_timeout_ms, bound.remaining_ms())
    if record.info.get("kumitate_busy_ms") != ms:
        dbapi_connection.execute(f"PRAGMA busy_timeout={int(ms)}")
        record.info["kumitate_busy_ms"] = ms
