"""Ends a database operation that outlives its bound, whatever the server does.

PostgreSQL's own `statement_timeout` cannot help when the server itself is hung (its processes
frozen, a network path that swallows packets): the client thread would wait on the socket for
ever. So each connection a bounded transaction checks out is armed here with a time; past it the
watchdog cuts the connection (PostgreSQL: `shutdown()` on a duplicate of its socket, so the
blocked driver reads end-of-stream and raises; SQLite: `interrupt()`), the thread gets an error
and the pool slot comes back. One daemon thread per process serves every engine.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kumitate.observability.calllog import log_event


@dataclass(slots=True)
class Entry:
    """One armed cut: when it fires, how to cut the connection, and how to release it once the work is done."""

    at: float
    cut: Callable[[], None] = field(repr=False)
    release: Callable[[], None] = field(repr=False)
    fired: bool = False
    done: bool = False


class Watchdog:
    """One thread that cuts a database connection at its hard limit, for a server that stops answering
    (a statement timeout needs the server to be alive to work)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._heap: list[tuple[float, int, Entry]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, at: float, cut: Callable[[], None], release: Callable[[], None] = lambda: None) -> Entry:
        """Call `cut` at `at` (time.monotonic) unless disarmed first; `release` runs once either way."""
        entry = Entry(at, cut, release)
        with self._wake:
            heapq.heappush(self._heap, (at, next(self._order), entry))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kumitate-storage-watchdog", daemon=True)
                self._thread.start()
            if self._heap[0][2] is entry:
                self._wake.notify()
        return entry

    def disarm(self, entry: Entry) -> None:
        """From now on `entry` is never cut (the heap drops it lazily)."""
        with self._wake:
            if entry.done:
                return
            entry.done = True
        entry.release()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._heap or self._heap[0][0] > self._clock():
                    self._wake.wait(None if not self._heap else max(0.0, self._heap[0][0] - self._clock()))
                _, _, entry = heapq.heappop(self._heap)
                if entry.done:
                    continue
                entry.done = entry.fired = True
                late_ms = round((self._clock() - entry.at) * 1000)
                # cut under the lock: a disarm that returned has its connection back, never cut after
                try:
                    entry.cut()
                except OSError as exc:
                    log_event("storage_cut_failed", error=type(exc).__name__)
            log_event("storage_connection_cut", late_ms=late_ms)
            entry.release()


WATCHDOG = Watchdog()
