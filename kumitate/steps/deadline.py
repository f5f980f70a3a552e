"""The tool's deadline: the call is answered by then, whatever the handler is doing.

At the deadline the call is timed out unless the handler holds its commit gate
(`CallContext.committing`, `kumitate.callstate.CallState`). A timed-out task is cancelled; a worker thread cannot be interrupted,
but its commit gate now refuses, so nothing it does from then on is saved. The answer says what
held the call: 503 STORAGE_UNAVAILABLE while the database held it, SERVICE_UNAVAILABLE while it
waited for a thread of its service (both with Retry-After: the dependency is the problem), else
408 REQUEST_TIMEOUT.

A commit under way at the deadline gets the commit grace (KUMITATE_COMMIT_GRACE_MS): one that ends
within it reports its result, so a client is never told "nothing was saved" about a change that
was. Past the grace the call is answered 408 all the same, saying the change may or may not have
been saved: a hung database must not hold the caller for ever (the storage watchdog cuts that
connection at the same time).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kumitate.errors import ToolError
from kumitate.faults import STORAGE_RETRY_AFTER_MS
from kumitate.observability import calllog
from kumitate.serving.bulkhead import busy
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

    def __init__(self, name: str, seconds: float, grace_s: float = 2.0) -> None:
        self.name = name
        self.seconds = seconds
        self.grace_s = grace_s

    async def __call__(self, call: Call, call_next: CallNext) -> Outcome:
        """Run the rest of the chain under the call's deadline: past it the handler is cancelled and the
        call answered REQUEST_TIMEOUT, unless it is committing, which gets `grace_s` more to report."""
        ctx, state = call.ctx, call.state
        seconds = call.request.task_timeout_s or self.seconds
        if not seconds:  # a task tool with no deadline of its own, called synchronously
            return await call_next(call)
        state.deadline = time.monotonic() + seconds
        task = asyncio.ensure_future(call_next(call))  # the task copies the bound call context
        task.add_done_callback(consume)
        try:
            done, _ = await asyncio.wait({task}, timeout=seconds)
            if not done and state.time_out():
                task.cancel()
                raise self._expired(ctx.service, state.blocked_on, seconds)
            if not done:  # a commit is under way: it may still report within the grace
                done, _ = await asyncio.wait({task}, timeout=self.grace_s)
            if not done:
                task.cancel()
                state.outcome_unknown = True
                calllog.log_event("commit_outcome_unknown", service=ctx.service, tool=ctx.tool, run_id=ctx.run_id)
                raise ToolError(
                    f"{self.name} did not finish within {round(seconds * 1000)} ms while committing its change: the change "
                    "may or may not have been saved; retry with the same Idempotency-Key",
                    code="REQUEST_TIMEOUT",
                )
        except asyncio.CancelledError:
            task.cancel()  # the caller went away: the invocation step stops the handler
            raise
        return await task

    def _expired(self, service: str, blocked_on: str | None, seconds: float) -> ToolError:
        if blocked_on == "storage":
            return ToolError(
                f"{self.name} did not finish within {round(seconds * 1000)} ms: the database did not answer in time; "
                "nothing was saved; retry shortly",
                code="STORAGE_UNAVAILABLE",
                details={"retry_after_ms": STORAGE_RETRY_AFTER_MS},
            )
        if blocked_on == "worker":
            return busy(service, f"{self.name} did not start within {round(seconds * 1000)} ms")
        return ToolError(
            f"{self.name} did not finish within {round(seconds * 1000)} ms; nothing was committed",
            code="REQUEST_TIMEOUT",
        )
