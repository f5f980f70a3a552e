"""The tool's deadline: REQUEST_TIMEOUT when the handler has not finished in time.

At the deadline the call is timed out unless the handler holds its commit gate
(`CallContext.committing`): then the commit finishes and its result is sent, so a client is
never told "nothing was committed" about a change that was. This holds for both kinds of
handler: an async one may commit in a thread that cancelling it would not stop. A timed-out
task is cancelled; a worker thread cannot be interrupted, but its commit gate now refuses.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kumitate.errors import ToolError
from kumitate.steps import Call, CallNext, Outcome


def timeout_s(declared_ms: int | None, cap_ms: int | None) -> float | None:
    """The tool's declared deadline, capped by the operator's KUMITATE_MAX_TIMEOUT_MS."""
    ms = min(declared_ms, cap_ms) if declared_ms and cap_ms else declared_ms or cap_ms
    return ms / 1000 if ms else None


def consume(future: asyncio.Future[Any]) -> None:
    """Retrieve an exception nobody awaits any more (a timed-out call), so asyncio does not log it as lost."""
    if not future.cancelled():
        future.exception()


class Deadline:
    """Only in the chain of a tool with a deadline; wraps the handler's invocation alone."""

    def __init__(self, name: str, seconds: float) -> None:
        self.name = name
        self.seconds = seconds

    async def __call__(self, call: Call, call_next: CallNext) -> Outcome:
        ctx = call.ctx
        ctx.deadline = time.monotonic() + self.seconds
        task = asyncio.ensure_future(call_next(call))  # the task copies the bound call context
        task.add_done_callback(consume)
        try:
            done, _ = await asyncio.wait({task}, timeout=self.seconds)
        except asyncio.CancelledError:
            task.cancel()  # the caller went away: the invocation step stops the handler
            raise
        if not done and ctx.time_out():
            task.cancel()
            raise ToolError(
                f"{self.name} did not finish within {round(self.seconds * 1000)} ms; nothing was committed",
                code="REQUEST_TIMEOUT",
            )
        return await task
