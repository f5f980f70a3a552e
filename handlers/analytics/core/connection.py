"""The sandboxed DuckDB database, a bounded pool of connections to it, and per-call deadlines.

One DuckDB database instance serves the process: an in-memory primary database (which
holds the materialized views, see materialize.py) with the activities file attached
READ_ONLY under its own name. The sandbox recipe from LIBRARY-NOTES §5
(allowed_directories = the exports directory, external access off, configuration
locked) is applied right after opening, before any user SQL can run; it holds for
every connection of the instance.

Each call borrows one connection (`cursor()`: its own DuckDB client context) from a
bounded pool, so a slow query holds only its own slot, and the deadline interrupts
only that connection (`interrupt()` is per connection). Every pooled connection
resolves unqualified names through the attached file first, then the in-memory
catalog (`search_path`), so `FROM activities` and `FROM mat_weekly` both work from
any slot; temp objects would not (they are per connection), which is why views are
not TEMP tables.

The database file must not be open read-write anywhere in this process when it is
attached here (DuckDB refuses two configurations of one file), so generation happens
first, on its own connection, which is closed before `open_sandbox` runs.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from generated.errors import (
    QueryTimeoutError,
    RequestTimeoutError,
    SqlErrorError,
    StorageUnavailableError,
    UnsafeQueryError,
)
from kumitate.context import CallCancelled, CallContext, current_call
from kumitate.errors import ToolError

from .storage_errors import is_storage_failure, storage_unavailable

log = logging.getLogger("kumitate.analytics")

VIEWS_CATALOG = "memory"  # the in-memory primary database: materialized views live here
DEFAULT_POOL_SIZE = 4
Guard = Callable[[], ToolError | None]


def _quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class Sandbox:
    """The database instance: read-only data file, in-memory views catalog, locked configuration."""

    def __init__(
        self,
        db_path: Path,
        exports_dir: Path,
        *,
        memory_limit: str = "4GB",
        threads: int | None = None,
        pool_size: int = DEFAULT_POOL_SIZE,
    ) -> None:
        config: dict[str, str | bool | int | float | list[str]] = {
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "memory_limit": memory_limit,
        }
        if threads:
            config["threads"] = threads
        self.catalog = db_path.stem
        base = duckdb.connect(":memory:", config=config)
        try:
            base.execute(f"ATTACH {_quote_literal(str(db_path))} AS {_quote_ident(self.catalog)} (READ_ONLY)")
            allowed = str(exports_dir.resolve()) + "/"
            base.execute(f"SET allowed_directories = [{_quote_literal(allowed)}]")
            base.execute("SET enable_external_access = false")
            base.execute("SET lock_configuration = true")
            self._configure(base)
            self.connections = [self._configure(base.cursor()) for _ in range(max(1, pool_size))]
        except BaseException:
            base.close()
            raise
        self.base = base

    def _configure(self, con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
        """Data file first, then the views catalog (USE resets search_path, so it comes first)."""
        con.execute(f"USE {_quote_ident(self.catalog)}")
        path = f"{self.catalog}.main,{VIEWS_CATALOG}.main"
        con.execute(f"SET search_path = {_quote_literal(path)}")
        return con

    def close(self) -> None:
        for con in self.connections:
            con.close()
        self.base.close()


class _Watchdog:
    """One long-lived thread per slot that interrupts its connection at the armed deadline.

    A thread per call (threading.Timer) costs ~1.5 ms to start on a small machine; a
    watchdog waiting on a Condition costs microseconds to arm. `interrupt()` runs while
    holding the condition and `disarm()` takes it too, so once disarm returns no
    interrupt from this call can land on the next borrower's query.

    An optional `guard` (checked every GUARD_POLL_S while armed) interrupts early when it
    returns an error, e.g. an export file growing past its byte quota; `stopped_by` keeps
    that error for the session to raise instead of QUERY_TIMEOUT.
    """

    GUARD_POLL_S = 0.05

    def __init__(self, con: duckdb.DuckDBPyConnection, name: str) -> None:
        self._con = con
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._guard: Guard | None = None
        self._stopped = False
        self.stopped_by: ToolError | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def arm(self, seconds: float) -> None:
        with self._cond:
            self._deadline = time.monotonic() + seconds
            self._guard = None
            self.stopped_by = None
            self._cond.notify()

    def guard(self, check: Guard | None) -> None:
        with self._cond:
            self._guard = check
            self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._deadline = None
            self._guard = None

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                remaining = self._deadline - time.monotonic()
                error = self._guard() if self._guard and remaining > 0 else None
                if remaining > 0 and error is None:
                    self._cond.wait(min(remaining, self.GUARD_POLL_S) if self._guard else remaining)
                    continue
                self._deadline = None
                self._guard = None
                self.stopped_by = error
                log.info("analytics query interrupted by %s", error.code if error else "deadline")
                self._con.interrupt()


def _cancel_guard(call: CallContext | None) -> Guard | None:
    """A watchdog guard that interrupts the query once `call` is cancelled (its caller went away):
    DuckDB stops within a poll instead of running on to the deadline for nobody."""
    if call is None:
        return None
    return lambda: _CANCELLED if call.cancelled() else None


_CANCELLED = RequestTimeoutError("the call was cancelled; nothing was saved")
"""What the watchdog records for a cancelled call; `session` raises CallCancelled instead."""


class Slot:
    """One pooled connection and its watchdog."""

    def __init__(self, con: duckdb.DuckDBPyConnection, index: int) -> None:
        self.con = con
        self.watchdog = _Watchdog(con, f"analytics-deadline-{index}")


class QueryRunner:
    """Lends each call a pooled connection under a deadline; maps DuckDB failures to catalogued errors.

    `session()` takes a free slot (waiting at most the deadline for one), arms its
    watchdog, which calls `interrupt()` on that connection alone when the deadline
    passes; DuckDB then raises InterruptException in the running query and the
    connection stays usable for the next borrower.
    """

    def __init__(self, sandbox: Sandbox, *, timeout_s: float = 10.0, scrub: tuple[str, ...] = ()):
        self.sandbox = sandbox
        self.con = sandbox.base  # for start-up and tests; calls use the pool
        self.timeout_s = timeout_s
        self.slots = [Slot(con, i) for i, con in enumerate(sandbox.connections)]
        self._free: queue.LifoQueue[Slot] = queue.LifoQueue()
        for slot in self.slots:
            self._free.put(slot)
        self._local = threading.local()
        self._scrub = tuple(s for s in scrub if s)

    @property
    def pool_size(self) -> int:
        return len(self.slots)

    @contextmanager
    def session(self, timeout_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """Hold one pooled connection for one tool call: the deadline becomes QUERY_TIMEOUT, a full pool
        REQUEST_TIMEOUT, a failing disk STORAGE_UNAVAILABLE (see `user_session` for the caller's SQL)."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        started = time.monotonic()
        try:
            slot = self._free.get(timeout=limit)
        except queue.Empty:
            raise RequestTimeoutError(
                f"All {self.pool_size} analytics connections are busy with other queries; retry in a few "
                f"seconds (waited {limit:g} s).",
            ) from None
        outer, self._local.slot = getattr(self._local, "slot", None), slot
        call = current_call()
        outer_guard, self._local.guard = getattr(self._local, "guard", None), _cancel_guard(call)
        try:
            slot.watchdog.arm(max(0.01, limit - (time.monotonic() - started)))
            slot.watchdog.guard(self._local.guard)
            try:
                yield slot.con
            except duckdb.InterruptException as exc:
                if call is not None and call.cancelled():
                    raise CallCancelled(call.run_id) from exc
                if slot.watchdog.stopped_by is not None:
                    raise slot.watchdog.stopped_by from exc
                raise QueryTimeoutError(
                    f"The query did not finish within {limit:g} s and was cancelled. Filter more (WHERE on "
                    "activity_id or a time range), aggregate in SQL, or materialize an intermediate result.",
                ) from exc
            except duckdb.Error as exc:
                if is_storage_failure(exc):
                    raise storage_unavailable(exc) from exc
                raise
            except OSError as exc:
                if is_storage_failure(exc):
                    raise storage_unavailable(exc) from exc
                raise
        finally:
            slot.watchdog.disarm()
            self._local.slot, self._local.guard = outer, outer_guard
            self._free.put(slot)

    @contextmanager
    def user_session(self, timeout_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """`session()` for a call that runs the caller's SQL: the engine's refusals become SQL_ERROR or
        UNSAFE_QUERY (scrubbed). Only the tools that declare those codes use it; elsewhere a DuckDB error
        is the server's fault (INTERNAL)."""
        with self.session(timeout_s) as con:
            try:
                yield con
            except duckdb.InterruptException:
                raise  # the session's: deadline, cancellation, a watchdog guard
            except duckdb.Error as exc:
                raise self.map_error(exc) from exc

    @contextmanager
    def guarded(self, check: Guard) -> Iterator[None]:
        """Watch the calling thread's running query with `check` (see _Watchdog) inside this block."""
        slot: Slot | None = getattr(self._local, "slot", None)
        if slot is None:
            raise RuntimeError("guarded() outside a session")
        base: Guard | None = getattr(self._local, "guard", None)
        slot.watchdog.guard(check if base is None else lambda: base() or check())
        try:
            yield
        finally:
            slot.watchdog.guard(base)

    def close(self) -> None:
        for slot in self.slots:
            slot.watchdog.stop()
        self.sandbox.close()

    def map_error(self, exc: duckdb.Error) -> SqlErrorError | UnsafeQueryError | StorageUnavailableError:
        """Turn a DuckDB exception into a catalogued error with a scrubbed message."""
        if is_storage_failure(exc):
            return storage_unavailable(exc)
        text = str(exc).strip()
        for secret in self._scrub:
            text = text.replace(secret, "<server>")
        first = text.splitlines()[0] if text else type(exc).__name__
        if isinstance(exc, duckdb.PermissionException):
            return UnsafeQueryError(f"The query tried something the sandbox forbids: {first}")
        if isinstance(exc, duckdb.OutOfMemoryException):
            return SqlErrorError(
                "The query needs more memory than the service allows; filter or aggregate first.",
            )
        detail = "\n".join(text.splitlines()[:4])
        return SqlErrorError(f"DuckDB rejected the query: {detail}")
