"""Liveness and readiness: what /healthz and /readyz report, each within a second whatever happens.

`/healthz` (liveness: restart me if this fails) is 503 when the process cannot serve however long
one waits: its event loop is or was lately blocked past KUMITATE_LOOP_STALL_MS (kumitate.serving.heartbeat),
or a service's worker threads have all been busy past KUMITATE_WORKERS_STUCK_MS with none
finishing. It reports the data directory's state without judging it: a restart cannot free a full
disk, so a full disk must not restart the server.

`/readyz` (readiness: send me traffic) is 503 with Retry-After while this instance cannot serve
its calls: draining (SIGTERM, `Runtime.draining`), a liveness problem, the data directory not
writable (a small probe file is written, synced and removed), or the relational database failing
or not answering (checked once a service or the idempotency store has opened it: an instance
serving only services without relational state, such as stays, has none to check). Redis is not required: when it is down the runtime goes on without it (rate
limits per instance, the shared cache a miss), so its check is reported as `degraded` and the
instance stays ready.

A damaged database file is reported per service (`by_service`): the service whose data it holds is
not ready (`/readyz` 503 naming it; `/readyz?service=<name>` 503 for that service alone) while the
others stay ready (`/readyz?service=<other>` 200). Damage is found where the storage layer maps
database errors (kumitate.faults marks the service of a call that met it) and, at start, by a quick
check of the SQLite database (`PRAGMA quick_check` of each table, bounded by START_CHECK_S; a table
belongs to the service its name is prefixed with, and one of the runtime's own, or a file SQLite cannot
read at all, fails `checks.database`). A service whose data lives elsewhere checks its own files as it
starts (analytics opens its DuckDB file in its first worker, in the background) and meets the same marks.

Every check runs on a thread of its own (never on the event loop, never on a pool the calls use)
and is waited on for CHECK_TIMEOUT_S at most; a check still running from an earlier probe (a hung
database) is waited on again, not started twice. Each check reports only its reason, never a URL
or a password.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kumitate import datadir, faults
from kumitate.errors import ToolError
from kumitate.observability.calllog import log_event, log_info
from kumitate.serving.heartbeat import LoopWatch
from kumitate.serving.threads import started_pool

if TYPE_CHECKING:
    from kumitate.service import Stores
    from kumitate.serving.bulkhead import Bulkhead
    from kumitate.settings import Settings

CHECK_TIMEOUT_S = 0.7
START_CHECK_S = 1.0
"""The longest the start-up check of the SQLite database may take: `PRAGMA quick_check` of every table took
2-3 ms on the sample data (1.5 MB, 21 tables); past this bound a large database is left unchecked (logged),
so start-up stays fast, and damage is still found by the first call that meets it."""
REDIS_DOWN = "rate limits are per instance and the shared cache is empty until Redis answers again"

Check = Callable[[], "str | None"]


class Checks:
    """Blocking checks run on threads of their own, each waited on for a bounded time."""

    def __init__(self, timeout_s: float = CHECK_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self._threads = started_pool(3, "kumitate-health")  # one per check: data_dir, database, redis
        self._running: dict[str, Future[str | None]] = {}
        self._lock = threading.Lock()

    async def run(self, checks: Mapping[str, Check]) -> dict[str, str | None]:
        """`{name: None (ok) or the reason}`, within `timeout_s`."""
        with self._lock:
            futures = {name: self._start(name, check) for name, check in checks.items()}
        waiting = {asyncio.wrap_future(f) for f in futures.values()}
        await asyncio.wait(waiting, timeout=self.timeout_s)
        return {
            name: future.result() if future.done() else f"no answer within {round(self.timeout_s * 1000)} ms"
            for name, future in futures.items()
        }

    def _start(self, name: str, check: Check) -> Future[str | None]:
        running = self._running.get(name)
        if running is None or running.done():
            running = self._running[name] = self._threads.submit(_reason_of, check)
        return running

    def close(self) -> None:
        """Stop the check threads without waiting (a hung check cannot be joined)."""
        self._threads.shutdown(wait=False, cancel_futures=True)


def _reason_of(check: Check) -> str | None:
    try:
        return check()
    except ToolError as exc:
        return exc.message
    except Exception as exc:
        return type(exc).__name__


class Bulkheads(Protocol):
    """Where the liveness check finds each service's worker threads (the runtime's pipeline)."""

    @property
    def bulkheads(self) -> Mapping[str, Bulkhead]:
        """Each served service's bulkhead, by service name."""
        ...


class CheckedRuntime(Protocol):
    """What the health checks read of the runtime they report on (`kumitate.runtime.Runtime`, which
    builds its `Health`: named here, it would close an import circle)."""

    @property
    def settings(self) -> Settings:
        """The process's settings (check timeouts, the data directory)."""
        ...

    @property
    def stores(self) -> Stores:
        """The database and Redis the readiness check pings."""
        ...

    @property
    def services(self) -> Mapping[str, object]:
        """The names of the services served (the report lists them)."""
        ...

    @property
    def pipeline(self) -> Bulkheads:
        """The call pipeline, for its bulkheads."""
        ...

    @property
    def draining(self) -> threading.Event:
        """Set once the instance is going away (readiness then answers 503)."""
        ...


class Health:
    """What /healthz and /readyz report for one runtime; `start` and `stop` run with the server."""

    def __init__(self, runtime: CheckedRuntime) -> None:
        self.runtime = runtime
        self.loop = LoopWatch(runtime.settings.loop_stall_ms / 1000)
        self.checks = Checks()
        self.database_damage: str | None = None
        """What the start-up check found damaged in the runtime's own tables (or the whole file), if anything."""

    async def start(self) -> None:
        """Start the event-loop heartbeat (liveness reads it) and check the database files (bounded, off the loop)."""
        await self.loop.start()
        await asyncio.to_thread(self.check_files)

    def check_files(self) -> None:
        """The start-up check: an SQLite database opened by a service is read table by table (quick_check);
        a damaged table marks the service it belongs to (its name's prefix), one of the runtime's own the
        database as a whole."""
        database = self.runtime.stores.opened_database
        if database is None or database.dialect != "sqlite" or not database.engine.url.database:
            return
        path = Path(database.engine.url.database)
        started = time.monotonic()
        found = sqlite_damage(path, START_CHECK_S)
        if found is None:
            log_info("storage_check_skipped", database=path.name, limit_s=START_CHECK_S)
            return
        runtime_tables = []
        for table, reason in found.items():
            owner = next((name for name in self.runtime.services if table.startswith(name + "_")), None)
            what = f"table {table} of {path.name} ({reason})" if table else f"{path.name} ({reason})"
            if owner is not None:
                faults.DAMAGE.mark(owner, what)
            else:
                runtime_tables.append(what)
        if runtime_tables:
            self.database_damage = "; ".join(runtime_tables)
            log_event("storage_damaged", service="(runtime)", damaged=self.database_damage)
        log_info(
            "storage_checked", database=path.name, damaged=len(found), ms=round((time.monotonic() - started) * 1000, 1)
        )

    async def stop(self) -> None:
        """Stop the event-loop heartbeat."""
        await self.loop.stop()

    def close(self) -> None:
        """Release the check threads."""
        self.checks.close()

    def problems(self) -> list[str]:
        """Why this process cannot serve (liveness), or nothing."""
        found = [p for p in [self.loop.problem()] if p]
        limit_s = self.runtime.settings.workers_stuck_ms / 1000
        for name, bulkhead in self.runtime.pipeline.bulkheads.items():
            stuck = bulkhead.stuck_for()
            if limit_s and stuck > limit_s:
                found.append(
                    f"every worker thread of service {name!r} ({bulkhead.limit}) has been busy for {stuck:.0f} s "
                    "with none finishing (KUMITATE_WORKERS_STUCK_MS)"
                )
        return found

    async def live(self) -> tuple[bool, dict[str, Any]]:
        """/healthz: whether this process can serve at all (loop not stalled, workers not exhausted) and its body."""
        problems = self.problems()
        storage = (await self.checks.run({"data_dir": self._data_dir}))["data_dir"]
        body: dict[str, Any] = {"ok": not problems, "services": sorted(self.runtime.services)}
        body["storage"] = _result(storage)
        if problems:
            body["problems"] = problems
        return not problems, body

    async def ready(self, service: str | None = None) -> tuple[bool, dict[str, Any]]:
        """/readyz: whether this instance can serve its traffic now (not draining, data dir and database
        answer within the check timeout, no service's database damaged; Redis down only degrades) and its
        body, which reports each service (`by_service`). With `service`: whether that service can (the
        instance's checks, and its own data undamaged), whatever another service's damage."""
        stores = self.runtime.stores
        found = await self.checks.run(
            {"data_dir": self._data_dir}
            | ({"database": self._database} if stores.opened_database is not None else {})
            | ({"redis": self._redis} if stores.redis is not None else {})
        )
        checks = {name: _result(reason) for name, reason in found.items()}
        if "redis" in checks and not checks["redis"]["ok"]:
            checks["redis"]["degraded"] = REDIS_DOWN
        problems = self.problems()
        draining = self.runtime.draining.is_set()
        ready = (
            not draining
            and not problems
            and all(checks[name]["ok"] for name in ("data_dir", "database") if name in checks)
        )
        by_service = {name: _damage_result(faults.DAMAGE.of(name)) for name in sorted(self.runtime.services)}
        if service is None:
            ready = ready and all(result["ok"] for result in by_service.values())
        else:
            ready = ready and by_service.get(service, {"ok": False})["ok"]
        body: dict[str, Any] = {"ok": ready, "services": sorted(self.runtime.services), "checks": checks}
        body["by_service"] = by_service
        if service is not None and service not in by_service:
            body["error"] = f"this instance does not serve {service!r}"
        if draining:
            body["draining"] = True
        if problems:
            body["problems"] = problems
        return ready, body

    def _data_dir(self) -> str | None:
        return datadir.probe(self.runtime.settings.data_dir)

    def _redis(self) -> str | None:
        redis = self.runtime.stores.redis
        if redis is None:  # not asked: `ready` checks Redis only where one is configured
            return "not configured"
        redis.ping()
        return None

    def _database(self) -> str | None:
        """Only a database the services opened is checked: one no service uses (stays alone) is not opened for it."""
        from sqlalchemy import text

        if self.database_damage is not None:
            return f"damaged: {self.database_damage}; restore it from a backup (kumitate db restore)"
        database = self.runtime.stores.database
        with database.within(self.checks.timeout_s), database.read() as conn:
            conn.execute(text("SELECT 1"))
        return None


def _result(reason: str | None) -> dict[str, Any]:
    return {"ok": reason is None} | ({"error": reason} if reason else {})


def _damage_result(what: str | None) -> dict[str, Any]:
    return _result(f"damaged: {what}; restore it from a backup (kumitate db restore)" if what else None)


def sqlite_damage(path: Path, limit_s: float) -> dict[str, str] | None:
    """The damaged tables of the SQLite database at `path` ({table: reason}; "" for a file whose schema
    cannot be read), or None when the check did not finish within `limit_s` (the file is large): read-only,
    one `PRAGMA quick_check(<table>)` per table, stopped by SQLite's progress handler at the limit."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=limit_s)
    except sqlite3.Error:
        return {}  # cannot open it at all (gone, unreadable): the database check reports that
    deadline = time.monotonic() + limit_s
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    found: dict[str, str] = {}
    try:
        try:
            tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        except sqlite3.DatabaseError as exc:
            if faults.storage_damage(exc) is None:
                return None if time.monotonic() > deadline else {}
            return {"": faults.damage_reason(exc)}
        for table in tables:
            quoted = '"' + table.replace('"', '""') + '"'
            try:
                rows = conn.execute(f"PRAGMA quick_check({quoted})").fetchall()
            except sqlite3.DatabaseError as exc:
                if time.monotonic() > deadline:
                    return None
                if faults.storage_damage(exc) is not None:
                    found[table] = faults.damage_reason(exc)
                continue
            if rows != [("ok",)]:
                found[table] = "SQLite: " + "; ".join(str(row[0]) for row in rows[:3])
        return found
    finally:
        conn.close()
