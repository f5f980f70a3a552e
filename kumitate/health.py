"""Liveness and readiness: what /healthz and /readyz report, each within a second whatever happens.

`/healthz` (liveness: restart me if this fails) is 503 when the process cannot serve however long
one waits: its event loop is or was lately blocked past KUMITATE_LOOP_STALL_MS (kumitate.heartbeat),
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

Every check runs on a thread of its own (never on the event loop, never on a pool the calls use)
and is waited on for CHECK_TIMEOUT_S at most; a check still running from an earlier probe (a hung
database) is waited on again, not started twice. Each check reports only its reason, never a URL
or a password.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from kumitate import datadir
from kumitate.errors import ToolError
from kumitate.heartbeat import LoopWatch
from kumitate.threads import started_pool

CHECK_TIMEOUT_S = 0.7
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


class Health:
    """What /healthz and /readyz report for one runtime; `start` and `stop` run with the server."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.loop = LoopWatch(runtime.settings.loop_stall_ms / 1000)
        self.checks = Checks()

    async def start(self) -> None:
        """Start the event-loop heartbeat (liveness reads it)."""
        await self.loop.start()

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

    async def ready(self) -> tuple[bool, dict[str, Any]]:
        """/readyz: whether this instance can serve its traffic now (not draining, data dir and database
        answer within the check timeout; Redis down only degrades) and its body."""
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
        body: dict[str, Any] = {"ok": ready, "services": sorted(self.runtime.services), "checks": checks}
        if draining:
            body["draining"] = True
        if problems:
            body["problems"] = problems
        return ready, body

    def _data_dir(self) -> str | None:
        return datadir.probe(self.runtime.settings.data_dir)

    def _redis(self) -> str | None:
        self.runtime.stores.redis.ping()
        return None

    def _database(self) -> str | None:
        """Only a database the services opened is checked: one no service uses (stays alone) is not opened for it."""
        from sqlalchemy import text

        database = self.runtime.stores.database
        with database.within(self.checks.timeout_s), database.read() as conn:
            conn.execute(text("SELECT 1"))
        return None


def _result(reason: str | None) -> dict[str, Any]:
    return {"ok": reason is None} | ({"error": reason} if reason else {})
