"""An HTTP call whose client goes away is cancelled, like an MCP call after `notifications/cancelled`.

Once the request body has been read, the only message the server can still receive is
`http.disconnect`: it arrives when the client closes the connection before the response
(or after it, when it no longer matters). Watching for it while the call runs and cancelling
the call then makes the pipeline cancel the handler (`CallContext.cancel`): its commit gate
refuses, so a client that gave up saved nothing, and a retry (with the same Idempotency-Key)
runs once instead of finding a half-done change.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
Receive = Callable[[], Awaitable[Any]]


class ClientGone(Exception):
    """The client disconnected before the call finished; the call was cancelled."""


async def _disconnected(receive: Receive, body_read: asyncio.Event) -> None:
    await body_read.wait()  # before that, receive() belongs to the body reader
    while (await receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(receive: Receive, body_read: asyncio.Event, call: Coroutine[Any, Any, T]) -> T:
    """`call`'s result, or ClientGone once the client disconnects (after `body_read` is set)."""
    task = asyncio.ensure_future(call)
    watch = asyncio.ensure_future(_disconnected(receive, body_read))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        watch.cancel()
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise ClientGone
    return task.result()
