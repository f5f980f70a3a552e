"""An HTTP call whose client goes away is cancelled, like an MCP call after `notifications/cancelled`.

Once the request body has been read, the only message the server can still receive is
`http.disconnect`: it arrives when the client closes the connection before the response
(or after it, when it no longer matters). Watching for it while the call runs and cancelling
the call then makes the pipeline cancel the handler (`CallContext.cancel`): its commit gate
refuses, so a client that gave up saved nothing, and a retry (with the same Idempotency-Key)
runs once instead of finding a half-done change.

The watcher starts only once a call has run for WATCH_AFTER_S: most calls answer sooner, and a
task per request (created, scheduled, cancelled) was a measurable share of a small call's cost
(docs/BENCHMARKS.md, wrk). A client that leaves earlier has its call cancelled at that point.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

T = TypeVar("T")
Receive = Callable[[], Awaitable[Mapping[str, object]]]
"""An ASGI receive: ours (edge.asgi.Receive) or Litestar's, whose messages are TypedDicts."""
WATCH_AFTER_S = 0.05


class ClientGone(Exception):
    """The client disconnected before the call finished; the call was cancelled."""


async def _disconnected(receive: Receive, body_read: asyncio.Event) -> None:
    await body_read.wait()  # before that, receive() belongs to the body reader
    while (await receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(receive: Receive, body_read: asyncio.Event, call: Awaitable[T]) -> T:
    """`call`'s result, or ClientGone once the client disconnects (after `body_read` is set).

    The call runs in the request's own task (no task of its own: this is on every request's
    path); a watcher task, started after WATCH_AFTER_S, cancels that task when the disconnect arrives."""
    current = asyncio.current_task()
    assert current is not None
    gone = False
    watch: asyncio.Future[None] | None = None

    def on_watch_done(watch: asyncio.Future[None]) -> None:
        nonlocal gone
        if not watch.cancelled() and watch.exception() is None:
            gone = True
            current.cancel()

    def start_watch() -> None:
        nonlocal watch
        watch = asyncio.ensure_future(_disconnected(receive, body_read))
        watch.add_done_callback(on_watch_done)

    later = asyncio.get_running_loop().call_later(WATCH_AFTER_S, start_watch)
    try:
        return await call
    except asyncio.CancelledError:
        if gone and current.uncancel() == 0:  # our own cancellation, not the server's
            raise ClientGone from None
        raise
    finally:
        later.cancel()
        if watch is not None:
            watch.remove_done_callback(on_watch_done)
            watch.cancel()
