"""Admission: at most N calls of a service in flight on this instance; past that, 503 at once.

Under overload a server that admits everything queues every call behind the others: all of them
get slow (at 500 connections p99 went to 9 s) and the clients' time-outs fire on work that is
still done. Here a call that finds its service's KUMITATE_MAX_IN_FLIGHT calls running waits at
most KUMITATE_ADMISSION_WAIT_MS for one to finish, then is answered 503 SERVICE_UNAVAILABLE with
Retry-After, its body unread, so the admitted calls keep their latency and a balancer or client
retries elsewhere or later. The default bound is CALLS_PER_THREAD calls per worker thread of the
service: a queue a fast tool drains in a fraction of a second, and a slow one's callers are refused
sooner by its bulkhead's own wait (KUMITATE_BULKHEAD_WAIT_MS). A tighter bound (twice the threads)
was tried and refused most calls at 256 connections where every call could be served
(docs/BENCHMARKS.md, wrk). The bound is per service, like the bulkheads: a stuck service's callers
fill its own slots, never another's; the instance's bound is the sum.

A bound on calls in flight does not see the queue in front of them: under overload requests
wait in the event loop before the application sees them (issue 32: at 500 connections nothing
reached the bound while p99 was seconds). So the lean HTTP path (kumitate.transports.http.lean)
also sheds a call that waited longer than KUMITATE_ADMISSION_QUEUE_MS between its headers
arriving and the application taking it (`overdue`): it is answered 503 at once, before its body
is read, and the loop's queue drains to what it can serve in time.

It bounds tool calls and resource reads, on every transport; the health and metrics endpoints
are not calls and are never refused.
"""

from __future__ import annotations

import asyncio

from kumitate.errors import ToolError

RETRY_AFTER_MS = 1000
CALLS_PER_THREAD = 16
"""The default bound per worker thread of the service (256 for the default 16 threads)."""


def overloaded(service: str, limit: int, waited_ms: int, queued: bool = False) -> ToolError:
    """The 503 SERVICE_UNAVAILABLE (with Retry-After) for a call refused: its service full past the wait, or queued too long."""
    why = (
        f"the call waited {waited_ms} ms in this server's queue"
        if queued
        else f"service {service!r} has its limit of {limit} calls in flight on this server (waited {waited_ms} ms)"
    )
    return ToolError(
        f"{why}; nothing was run; retry shortly",
        code="SERVICE_UNAVAILABLE",
        details={"retry_after_ms": RETRY_AFTER_MS},
    )


class Admission:
    """One service's admission gate on this instance: at most `limit` calls in flight, a newcomer waits `wait_s` for a slot;
    a call queued in the event loop longer than `queue_s` before the application took it is shed."""

    def __init__(self, service: str, limit: int, wait_s: float, queue_s: float = 0.0) -> None:
        self.service = service
        self.limit = limit
        self.wait_s = wait_s
        self.queue_s = queue_s
        self.in_flight = 0
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def enter(self) -> None:
        """Take a slot (waiting at most `wait_s`), or raise SERVICE_UNAVAILABLE."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._slots is None:  # a new loop (tests run several): fresh slots
            self._slots, self._loop = asyncio.Semaphore(max(0, self.limit - self.in_flight)), loop
        if self._slots.locked():
            if self.wait_s <= 0:
                raise overloaded(self.service, self.limit, 0)
            try:
                await asyncio.wait_for(self._slots.acquire(), self.wait_s)
            except TimeoutError:
                raise overloaded(self.service, self.limit, round(self.wait_s * 1000)) from None
        else:
            await self._slots.acquire()  # free: no suspension
        self.in_flight += 1

    @property
    def full(self) -> bool:
        """Every slot taken: a call now would wait (or be refused)."""
        return self.in_flight >= self.limit

    def overdue(self, queued_s: float) -> bool:
        """A call that waited this long before the application took it is shed (0: never)."""
        return 0 < self.queue_s < queued_s

    def exit(self) -> None:
        """Give the slot back when the call has been answered (paired with `enter`)."""
        self.in_flight -= 1
        if self._slots is not None:
            self._slots.release()
