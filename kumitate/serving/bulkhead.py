"""Bulkheads: each service's sync handlers run on threads of their own, at most N at once.

A sync handler cannot be interrupted, so a service whose calls hang (a frozen database, a
native loop) keeps its threads until they return. With one shared pool that service would take
every thread and every other service would queue behind it. Here each service has its own
limit (KUMITATE_WORKER_THREADS, per service KUMITATE_SERVICE_WORKER_THREADS) and its own pool: a
call waits for one of its service's threads no longer than KUMITATE_BULKHEAD_WAIT_MS or its
deadline, then is answered 503 SERVICE_UNAVAILABLE with Retry-After. A slot is given back when
the thread returns, not when the caller stops waiting (a timed-out thread still holds it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from kumitate.context import CallContext, state_of
from kumitate.errors import ToolError
from kumitate.serving.threads import started_pool

RETRY_AFTER_MS = 2000

T = TypeVar("T")


def busy(service: str, waited: str) -> ToolError:
    """SERVICE_UNAVAILABLE for a call that found every thread of its service taken."""
    return ToolError(
        f"every worker thread of service {service!r} is busy ({waited}); nothing was run; retry shortly",
        code="SERVICE_UNAVAILABLE",
        details={"retry_after_ms": RETRY_AFTER_MS},
    )


class Bulkhead:
    """One service's own thread pool and slot limit, so its hung sync handlers hold only its own threads."""

    def __init__(self, service: str, limit: int, wait_s: float) -> None:
        self.service = service
        self.limit = limit
        self.wait_s = wait_s
        self._threads = started_pool(limit, f"kumitate-{service}")
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.running = 0
        self.waiting = 0
        self.full_since: float | None = None
        """time.monotonic() since every thread has been busy with no call finishing (None: not full)."""

    async def run(self, ctx: CallContext, fn: Callable[[], T]) -> T:
        """`fn()` on one of the service's threads, once one is free (see the module docstring)."""
        await self._enter(ctx)
        try:
            future = self._threads.submit(fn)
        except BaseException:
            self._exit()
            raise
        future.add_done_callback(self._finished)
        return await asyncio.wrap_future(future)

    async def _enter(self, ctx: CallContext) -> None:
        loop = asyncio.get_running_loop()
        if self._slots is None or self._loop is not loop:
            self._slots, self._loop = asyncio.Semaphore(self.limit - self.running), loop
        wait = self.wait_s
        if ctx.deadline is not None:
            wait = min(wait, max(0.0, ctx.deadline - time.monotonic()))
        if self._slots.locked():
            state = state_of(ctx)
            before, state.blocked_on = state.blocked_on, "worker"
            self.waiting += 1
            try:
                await asyncio.wait_for(self._slots.acquire(), wait)
            except TimeoutError:
                raise busy(self.service, f"waited {round(wait * 1000)} ms") from None
            finally:
                self.waiting -= 1
                state.blocked_on = before
        else:
            await self._slots.acquire()
        self.running += 1
        if self.running >= self.limit and self.full_since is None:
            self.full_since = time.monotonic()

    def _finished(self, _future: Future[Any]) -> None:
        """From the worker thread (or the loop, if the call never started): give the slot back on the loop."""
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            loop.call_soon_threadsafe(self._exit)

    def _exit(self) -> None:
        self.running -= 1
        self.full_since = time.monotonic() if self.running >= self.limit else None
        if self._slots is not None:
            self._slots.release()

    def stuck_for(self) -> float:
        """Seconds every thread has been busy with none finishing (0 when one is free)."""
        return 0.0 if self.full_since is None else time.monotonic() - self.full_since

    def close(self) -> None:
        """Stop the pool without waiting: a thread stuck in a handler cannot be joined, queued work is dropped."""
        self._threads.shutdown(wait=False, cancel_futures=True)
