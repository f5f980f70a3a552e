"""A call's progress as MCP `notifications/progress`, reported from any thread, sent in order.

Sync handlers run in worker threads, which must not touch the event loop's objects: a report
is handed to the loop with `call_soon_threadsafe`, queued, and one task sends the
notifications in order. When reports come faster than the client is sent them, only the
newest one is sent (progress is a level, not a log); values that do not increase are
dropped (the MCP spec asks progress to increase with each notification). Once the call has
finished, later reports (a timed-out thread still running) are ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

Report = tuple[float, float | None, str | None]
Send = Callable[[float, float | None, str | None], Awaitable[None]]


class ProgressRelay:
    """The `ProgressSink` of one call; `send` delivers one notification on the event loop."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[Report | None] = asyncio.Queue()
        self._last: float | None = None
        self._open = True

    def __call__(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress from any thread (a sync handler's); a report after the relay closed is dropped."""
        if not self._open:
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed (server shutting down)
            self._loop.call_soon_threadsafe(self._queue.put_nowait, (float(done), total, message))

    async def drain(self) -> None:
        """Send the reports until the relay closes, only the newest of those that queued up meanwhile."""
        while True:
            item = await self._queue.get()
            finished = item is None
            while not self._queue.empty():  # coalesce: only the newest report is worth sending
                newer = self._queue.get_nowait()
                if newer is None:
                    finished = True
                else:
                    item = newer
            if item is not None and (self._last is None or item[0] > self._last):
                self._last = item[0]
                with contextlib.suppress(Exception):  # a client gone away; the call itself decides what follows
                    await self._send(*item)
            if finished:
                return

    def close(self) -> None:
        """No more reports: `drain` sends what is queued and returns."""
        self._open = False
        self._queue.put_nowait(None)


@contextlib.asynccontextmanager
async def relaying(send: Send | None) -> AsyncIterator[ProgressRelay | None]:
    """A relay running for the block (None without `send`); every report made in it is sent
    before the block's result, so a client sees progress before the answer."""
    if send is None:
        yield None
        return
    relay = ProgressRelay(send)
    task = asyncio.ensure_future(relay.drain())
    try:
        yield relay
    except BaseException:  # cancelled: nothing more is sent
        relay.close()
        task.cancel()
        raise
    relay.close()
    await task
