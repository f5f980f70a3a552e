"""`CallContext.log` over MCP: `notifications/message` on the request's own stream.

Which messages a client gets is the protocol's rule, applied by fastmcp and the SDK: on 2026-07-28
only at or above the level the request's `_meta` asked for (none without it); on handshake versions
at or above the session's `logging/setLevel`. A worker thread's message is handed to the event
loop and waited for (briefly), so messages arrive in order and before the call's result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib

from fastmcp.server.dependencies import get_context
from mcp_types import LoggingLevel

from kumitate.callstate import LogSink

SEND_WAIT_S = 1.0
LEVELS: dict[str, LoggingLevel] = {
    level: level for level in ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
}
"""The MCP log levels, by name (a handler's level outside them is sent as info)."""


def log_sender() -> LogSink | None:
    """The log sink of the MCP request being served (None outside one)."""
    try:
        ctx = get_context()
    except RuntimeError:
        return None
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task[None]] = set()

    def send(level: str, message: str) -> None:
        coro = ctx.log(message, LEVELS.get(level, "info"))
        if _on(loop):  # an async handler: in order on the loop, not awaited here
            task = loop.create_task(coro)
            pending.add(task)
            task.add_done_callback(pending.discard)
            return
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        with contextlib.suppress(concurrent.futures.TimeoutError, Exception):  # a client gone: nothing to tell
            future.result(timeout=SEND_WAIT_S)

    return send


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
