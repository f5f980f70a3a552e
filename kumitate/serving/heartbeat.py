"""The event loop's heartbeat: is the loop free to serve, and was it lately?

Every request of the process runs on one asyncio loop; code that blocks it (a sync call in an
async path, a native library holding the GIL) stops every service at once. A task on the loop
wakes every `INTERVAL_S` and records how late it woke; a monitor thread logs a stall while it
lasts (`event_loop_stalled` with where the loop thread is, then `event_loop_recovered`), since
nothing on the loop can report while it is blocked. `/healthz` asks `problem()`: a stall past
the threshold now, or one that ended less than `memory_s` ago (a probe answered right after a
stall would otherwise find a loop that looks fine; an orchestrator restarts after several failed
probes, so a single stall costs one, a loop that keeps stalling a restart).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time

from kumitate.observability.calllog import log_event

INTERVAL_S = 0.25
WHERE_FRAMES = 6


class LoopWatch:
    """Watches the event loop: a task records when it last woke, a thread reports a stall while it lasts."""

    def __init__(self, threshold_s: float) -> None:
        self.threshold_s = threshold_s
        self.memory_s = 3 * threshold_s
        self._beat = time.monotonic()
        self._last_stall: tuple[float, float] | None = None
        """(seconds stalled, when it ended) of the latest stall past the threshold."""
        self._task: asyncio.Task[None] | None = None
        self._stop = threading.Event()
        self._loop_thread: int | None = None

    async def start(self) -> None:
        """Start beating on the running loop, and the monitor thread."""
        self._beat = time.monotonic()
        self._loop_thread = threading.get_ident()
        self._stop.clear()
        self._task = asyncio.create_task(self._beating(), name="kumitate-heartbeat")
        threading.Thread(target=self._monitor, name="kumitate-loop-monitor", daemon=True).start()

    async def stop(self) -> None:
        """Stop the heartbeat task and the monitor thread."""
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def problem(self) -> str | None:
        """Why the loop cannot be trusted to serve, or None."""
        now = time.monotonic()
        if self._task is None:
            return None
        late = now - self._beat - INTERVAL_S
        if late > self.threshold_s:
            return f"the event loop has been blocked for {late:.1f} s (KUMITATE_LOOP_STALL_MS)"
        if self._last_stall is not None and now - self._last_stall[1] < self.memory_s:
            stalled, ended = self._last_stall
            return f"the event loop was blocked for {stalled:.1f} s, {now - ended:.0f} s ago (KUMITATE_LOOP_STALL_MS)"
        return None

    async def _beating(self) -> None:
        while True:
            await asyncio.sleep(INTERVAL_S)
            now = time.monotonic()
            late = now - self._beat - INTERVAL_S
            if late > self.threshold_s:
                self._last_stall = (late, now)
            self._beat = now

    def _monitor(self) -> None:
        stalled = False
        while not self._stop.wait(INTERVAL_S):
            late = time.monotonic() - self._beat - INTERVAL_S
            if late > self.threshold_s and not stalled:
                stalled = True
                log_event("event_loop_stalled", seconds=round(late, 1), where=self._where())
            elif late <= self.threshold_s and stalled:
                stalled = False
                log_event("event_loop_recovered")

    def _where(self) -> str:
        """The innermost frames the loop thread is running (file:line function, innermost first): what
        blocks it (code only, no values)."""
        # sys._current_frames is documented standard library (the one way to read another thread's stack).
        frame = sys._current_frames().get(self._loop_thread or -1)  # noqa: SLF001
        found: list[str] = []
        while frame is not None and len(found) < WHERE_FRAMES:
            found.append(f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}")
            frame = frame.f_back
        return " < ".join(found) or "unknown"
