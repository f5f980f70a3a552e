"""The sandboxed DuckDB, run in worker processes under an OS memory limit, and per-call deadlines.

No DuckDB query runs in the server process. Each call borrows one worker process (worker.py) from a
bounded pool: the worker holds its own DuckDB database instance (an in-memory primary database for
the materialized views, the activities file attached READ_ONLY, access limited to the exports
directory, configuration locked) and runs one statement at a time, with RLIMIT_DATA set (why that
limit: worker.py). The server keeps everything else: the registries in its relational database,
the quotas, the commits; the domain code (profile, histogram, the SQL guard) runs here and sends
each statement to the worker, which returns plain rows.

What the process boundary buys: a query past the memory bound fails in the worker (DuckDB's
OutOfMemoryException, or the worker dies), never in the server: the caller gets QUERY_TOO_EXPENSIVE
and the slot gets a fresh worker. A query past its deadline, or whose caller went away, or whose
export outgrew its quota, is interrupted (DuckDB's interrupt, sent to the worker) and, if it has not
stopped KILL_GRACE_S later, the worker is killed; either way the call ends and the slot returns to
the pool. The waiting thread in the server does the watching itself (it polls every POLL_S while
it waits for the worker's answer), so no state of the call can disable the deadline.

Workers start lazily (a call that finds its slot empty starts one, ~0.3 s) and are replaced the
same way after they die, are killed, or grow past half their memory bound (RSS read after each call,
so an idle server holds little memory). Each worker's catalog exposes the materialized views the
registry names: `WorkerConnection.exposed` is that worker's state, synced at the start of each call
(materialize.py).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import duckdb

from generated.errors import (
    QueryTimeoutError,
    QueryTooExpensiveError,
    RequestTimeoutError,
    SqlError,
    StorageDamagedError,
    StorageUnavailableError,
    UnsafeQueryError,
)
from kumitate.context import CallCancelled, CallContext, current_call
from kumitate.errors import ToolError

from ..storage_errors import is_storage_failure, storage_unavailable, worker_start_error

log = logging.getLogger("kumitate.analytics")

VIEWS_CATALOG = "memory"  # the in-memory primary database: materialized views live here
DEFAULT_POOL_SIZE = 4
DEFAULT_WORKER_MEMORY_MB = 1024
DEFAULT_WORKER_IDLE_MB = 192
WORKER_SCRIPT = Path(__file__).with_name("worker.py")
START_TIMEOUT_S = 30.0
POLL_S = 0.05
KILL_GRACE_S = 1.0
DUCKDB_SHARE = 0.6  # of the worker's bound, for DuckDB's buffer manager (it spills or fails cleanly first)
Guard = Callable[[], ToolError | None]


class Rows(Protocol):
    def fetchall(self) -> list[tuple[Any, ...]]: ...


class SqlConnection(Protocol):
    """What the domain code needs of a connection: a worker's (WorkerConnection) or DuckDB's own."""

    def execute(self, query: str, parameters: Any = None, /) -> Rows: ...

    def extract_statements(self, query: str, /) -> list[Any]: ...


@dataclass(frozen=True, slots=True)
class Sandbox:
    """What every worker opens: the data file, the one directory it may touch, its memory bound."""

    database: Path
    exports_dir: Path
    temp_dir: Path
    """Each worker spills to a directory of its own below this one, removed when the worker goes."""
    memory_bytes: int = DEFAULT_WORKER_MEMORY_MB << 20
    threads: int | None = None

    @property
    def catalog(self) -> str:
        return self.database.stem

    def config(self, temp_directory: Path) -> str:
        return json.dumps(
            {
                "temp_directory": str(temp_directory),
                "database": str(self.database),
                "catalog": self.catalog,
                "allowed_directory": str(self.exports_dir.resolve()) + "/",
                "memory_bytes": self.memory_bytes,
                "memory_limit": f"{int(self.memory_bytes * DUCKDB_SHARE) >> 20}MB",
                "threads": self.threads,
            }
        )


class WorkerDied(RuntimeError):
    """The worker process ended while it ran a statement nobody stopped (its memory bound, or a crash)."""


def _duckdb_error(name: str, message: str) -> duckdb.Error:
    kind = getattr(duckdb, name, None)
    if not (isinstance(kind, type) and issubclass(kind, duckdb.Error)):
        kind = duckdb.Error
    return kind(message)


class Worker:
    """One worker process and the two pipes to it; used by one thread at a time (its slot's borrower)."""

    def __init__(self, sandbox: Sandbox, temp_directory: Path) -> None:
        to_child, from_parent = os.pipe()
        from_child, to_parent = os.pipe()
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    str(WORKER_SCRIPT),
                    str(to_child),
                    str(to_parent),
                    sandbox.config(temp_directory),
                ],
                pass_fds=(to_child, to_parent),
                stdin=subprocess.DEVNULL,
            )
        except BaseException:
            for fd in (from_parent, from_child):
                os.close(fd)
            raise
        finally:
            os.close(to_child)
            os.close(to_parent)
        self._out = Connection(from_parent, readable=False)
        self._in = Connection(from_child, writable=False)
        self._seq = 0
        self.exposed: dict[str, str] = {}
        """The views this worker's catalog exposes: view -> file (materialize.py keeps it in line)."""
        try:
            ready = self._in.recv() if self._in.poll(START_TIMEOUT_S) else ("failed", "timeout", "no answer")
        except EOFError:
            ready = ("failed", "exited", "")
        if ready[0] != "ready":
            self.kill()
            raise worker_start_error(ready[1], ready[2])  # a damaged file or a failing disk is catalogued

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def rss_bytes(self) -> int:
        try:
            with open(f"/proc/{self.pid}/statm", encoding="ascii") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return 0

    def request(self, op: str, args: tuple[Any, ...], stop: Callable[[], object | None]) -> Any:
        """Run `op` in the worker; poll `stop` while waiting: once it says stop, interrupt, then kill."""
        if stop() is not None:  # nothing starts past the deadline (an interrupt before a query is lost)
            raise duckdb.InterruptException("stopped before it started")
        self._seq += 1
        ident = self._seq
        try:
            self._out.send(("run", ident, op, args))
            while not self._in.poll(POLL_S):
                if not self.alive():
                    raise WorkerDied(f"analytics worker exited with {self.process.returncode}")
                if stop() is not None:
                    self._out.send(("interrupt", ident))
                    if not self._in.poll(KILL_GRACE_S):
                        log.warning("analytics worker pid=%d did not stop within %g s; killed", self.pid, KILL_GRACE_S)
                        self.kill()
                        raise duckdb.InterruptException("the worker was killed")
                    break
            reply = self._in.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            self.wait()
            raise WorkerDied(f"analytics worker exited with {self.process.returncode}") from None
        if reply[0] == "ok":
            return reply[2]
        raise _duckdb_error(reply[2], reply[3])

    def wait(self, timeout: float = 5.0) -> None:
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout)

    def kill(self) -> None:
        with suppress(OSError):
            self.process.kill()
        self.wait()
        for end in (self._out, self._in):
            with suppress(OSError):
                end.close()


class Statement(NamedTuple):
    type: duckdb.StatementType
    query: str
    serialized: tuple[str, str] | None = None
    """For a sole SELECT: (its text without trailing semicolons, that text's json_serialize_sql), parsed by
    the worker along with the statements (sql_guard uses it instead of asking again)."""


class _Result:
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows


class WorkerConnection:
    """What a session lends: DuckDB's `execute` and `extract_statements`, run by the slot's worker."""

    def __init__(self, worker: Worker, stop: Callable[[], object | None]) -> None:
        self._worker = worker
        self._stop = stop

    @property
    def exposed(self) -> dict[str, str]:
        return self._worker.exposed

    def execute(self, query: str, parameters: Any = None, /) -> _Result:
        return _Result(self._worker.request("execute", (query, parameters), self._stop))

    def execute_all(self, queries: list[str], /) -> list[list[tuple[Any, ...]]]:
        """Each query's rows, the queries run in order in one round trip to the worker; the first failure ends it."""
        return list(self._worker.request("execute_all", (queries,), self._stop))

    def extract_statements(self, query: str, /) -> list[Statement]:
        found, serialized = self._worker.request("statements", (query,), self._stop)
        return [Statement(duckdb.StatementType.__members__[kind], text, serialized) for kind, text in found]


@dataclass
class _Session:
    """One call's hold on a slot: why its statement should stop (cancelled, a guard, the deadline)."""

    deadline: float
    call: CallContext | None
    guards: list[Guard] = field(default_factory=list)
    stopped_by: ToolError | None = None

    def stop(self) -> object | None:
        if self.call is not None and self.call.cancelled():
            return "cancelled"
        for guard in self.guards:
            error = guard()
            if error is not None:
                self.stopped_by = error
                return error
        return "deadline" if time.monotonic() >= self.deadline else None


class Slot:
    """A place in the pool: a worker process, or none yet (started when a call needs it)."""

    def __init__(self, index: int, temp_dir: Path) -> None:
        self.index = index
        self.temp_dir = temp_dir / f"worker-{index}"
        self.worker: Worker | None = None

    def ensure(self, sandbox: Sandbox) -> Worker:
        if self.worker is None or not self.worker.alive():
            self.retire()
            self.temp_dir.mkdir(parents=True, exist_ok=True)
            self.worker = Worker(sandbox, self.temp_dir)
        return self.worker

    def retire(self) -> None:
        """Kill the worker (if any) and remove what it spilled (a killed DuckDB leaves its temp files)."""
        if self.worker is not None:
            self.worker.kill()
            self.worker = None
        shutil.rmtree(self.temp_dir, ignore_errors=True)


class QueryRunner:
    """Lends each call a worker under a deadline; maps DuckDB failures to catalogued errors."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        timeout_s: float = 10.0,
        scrub: tuple[str, ...] = (),
        idle_bytes: int = DEFAULT_WORKER_IDLE_MB << 20,
    ) -> None:
        self.sandbox = sandbox
        self.timeout_s = timeout_s
        self.slots = [Slot(i, sandbox.temp_dir) for i in range(max(1, pool_size))]
        self._free: queue.LifoQueue[Slot] = queue.LifoQueue()
        for slot in reversed(self.slots):
            self._free.put(slot)
        self._local = threading.local()
        self._scrub = tuple(s for s in scrub if s)
        self.recycle_bytes = min(idle_bytes, sandbox.memory_bytes // 2)
        """A worker holding more than this after a call is replaced: idle workers stay small, so the pool's
        idle memory is at most pool_size times it (docs/deployment.md, Memory)."""
        self.con = _OneShot(self)
        """Runs each statement in a session of its own (start-up checks, scripts, tests)."""

    @property
    def pool_size(self) -> int:
        return len(self.slots)

    def idle(self) -> int:
        """Slots no call holds."""
        return self._free.qsize()

    @contextmanager
    def session(self, timeout_s: float | None = None) -> Iterator[WorkerConnection]:
        """Hold one worker for one tool call: the deadline becomes QUERY_TIMEOUT, a full pool
        REQUEST_TIMEOUT, a failing disk STORAGE_UNAVAILABLE (see `user_session` for the caller's SQL)."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        started = time.monotonic()
        try:
            slot = self._free.get(timeout=limit)
        except queue.Empty:
            raise RequestTimeoutError(
                f"All {self.pool_size} analytics workers are busy with other queries; retry in a few "
                f"seconds (waited {limit:g} s).",
            ) from None
        call = current_call()
        state = _Session(deadline=started + limit, call=call)
        outer, self._local.session = getattr(self._local, "session", None), state
        try:
            worker = slot.ensure(self.sandbox)
            try:
                yield WorkerConnection(worker, state.stop)
            except duckdb.InterruptException as exc:
                if call is not None and call.cancelled():
                    raise CallCancelled(call.run_id) from exc
                if state.stopped_by is not None:
                    raise state.stopped_by from exc
                raise QueryTimeoutError(
                    f"The query did not finish within {limit:g} s and was cancelled. Filter more (WHERE on "
                    "activity_id or a time range), aggregate in SQL, or materialize an intermediate result.",
                ) from exc
            except (duckdb.Error, OSError) as exc:
                if is_storage_failure(exc):
                    raise storage_unavailable(exc) from exc
                raise
        finally:
            self._local.session = outer
            self._check_in(slot)

    def _check_in(self, slot: Slot) -> None:
        """Back to the pool; a dead worker, or one holding more than `recycle_bytes`, is replaced by the next call."""
        worker = slot.worker
        try:
            if worker is not None and (not worker.alive() or worker.rss_bytes() > self.recycle_bytes):
                log.info("analytics worker pid=%d retired (exit=%s)", worker.pid, worker.process.returncode)
                slot.retire()
        finally:
            self._free.put(slot)

    @contextmanager
    def user_session(self, timeout_s: float | None = None) -> Iterator[WorkerConnection]:
        """`session()` for a call that runs the caller's SQL: the engine's refusals become SQL_ERROR,
        UNSAFE_QUERY or QUERY_TOO_EXPENSIVE (scrubbed). Only the tools that declare those codes use it;
        elsewhere a DuckDB error is the server's fault (INTERNAL)."""
        with self.session(timeout_s) as con:
            try:
                yield con
            except duckdb.InterruptException:
                raise  # the session's: deadline, cancellation, a guard
            except duckdb.Error as exc:
                raise self.map_error(exc) from exc
            except WorkerDied as exc:
                raise self.too_expensive() from exc

    @contextmanager
    def guarded(self, check: Guard) -> Iterator[None]:
        """Stop the calling thread's running statement once `check` returns an error, inside this block."""
        state: _Session | None = getattr(self._local, "session", None)
        if state is None:
            raise RuntimeError("guarded() outside a session")
        state.guards.append(check)
        try:
            yield
        finally:
            state.guards.remove(check)

    def close(self) -> None:
        for slot in self.slots:
            slot.retire()

    def too_expensive(self) -> QueryTooExpensiveError:
        mb = self.sandbox.memory_bytes >> 20
        return QueryTooExpensiveError(
            f"The query needs more memory than an analytics query may use ({mb:,} MB) and was stopped; "
            "nothing was saved. Narrow it: aggregate in SQL (GROUP BY with count/avg/min/max) instead of "
            "returning every row, filter (WHERE activity_id = ... or a time range), select fewer columns or "
            "rows (LIMIT), and do not build huge lists or strings (range(), unnest(), list(), string_agg() "
            "over millions of values).",
            details={"memory_limit_mb": mb},
        )

    def map_error(
        self, exc: duckdb.Error
    ) -> SqlError | UnsafeQueryError | StorageUnavailableError | StorageDamagedError | QueryTooExpensiveError:
        """Turn a DuckDB exception into a catalogued error with a scrubbed message."""
        if is_storage_failure(exc):
            return storage_unavailable(exc)
        if isinstance(exc, duckdb.OutOfMemoryException):
            return self.too_expensive()
        text = str(exc).strip()
        for secret in self._scrub:
            text = text.replace(secret, "<server>")
        first = text.splitlines()[0] if text else type(exc).__name__
        if isinstance(exc, duckdb.PermissionException):
            return UnsafeQueryError(f"The query tried something the sandbox forbids: {first}")
        detail = "\n".join(text.splitlines()[:4])
        return SqlError(f"DuckDB rejected the query: {detail}")


class _OneShot:
    """A connection-like object whose every statement borrows a worker for itself."""

    def __init__(self, runner: QueryRunner) -> None:
        self._runner = runner

    def execute(self, query: str, parameters: Any = None, /) -> _Result:
        with self._runner.session() as con:
            return con.execute(query, parameters)

    def extract_statements(self, query: str, /) -> list[Statement]:
        with self._runner.session() as con:
            return con.extract_statements(query)
