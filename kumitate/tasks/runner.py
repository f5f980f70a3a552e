"""Runs tool calls as tasks: started through the one pipeline, answered before the handler ends.

`start` hands the call to the pipeline as it is (authentication, rate limit, idempotency, input
validation: the same steps as a synchronous call, once). When the pipeline admits the call
(`CallRequest.on_admitted`, just before the handler), the task's row is written and the caller
gets it back (HTTP 202, an MCP CreateTaskResult); a call refused before then gets its refusal, as
if synchronous, and leaves no task behind. The handler then runs on under the task's own deadline
(spec `execution.timeout_ms`), at most KUMITATE_TASK_WORKERS of them per instance, and its outcome
(bounded: KUMITATE_TASK_MAX_RESULT_BYTES) goes to the row, where any instance reads it.

One heartbeat per instance renews the leases of its running tasks, carries their latest progress
to the rows, and stops the ones cancelled meanwhile (maybe through another instance).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kumitate import calllog
from kumitate.bindings import ToolBinding
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.pipeline import CallRequest, Outcome, Pipeline
from kumitate.tasks.store import COMPLETED, FAILED, TaskRow, TaskStore

T = TypeVar("T")
BUSY_RETRY_AFTER_MS = 5000


@dataclass(slots=True)
class _Running:
    id: str
    inner: asyncio.Future[Outcome]
    progress: dict[str, Any] | None = None
    reported: dict[str, Any] | None = None
    created: asyncio.Event = field(default_factory=asyncio.Event)
    settler: asyncio.Future[None] | None = None

    def report(self, done: float, total: float | None, message: str | None) -> None:
        self.progress = {"done": done, "total": total, "message": message}

    def news(self) -> dict[str, Any] | None:
        """The progress not yet written to the row (None: nothing new)."""
        latest = self.progress
        if latest is None or latest == self.reported:
            return None
        self.reported = latest
        return latest


def new_task_id() -> str:
    return secrets.token_hex(16)


class TaskRunner:
    def __init__(
        self, pipeline: Pipeline, store: TaskStore, *, workers: int = 4, max_result_bytes: int = 1 << 20
    ) -> None:
        self.pipeline = pipeline
        self.store = store
        self.workers = workers
        self.max_result_bytes = max_result_bytes
        self._running: dict[str, _Running] = {}
        self._heartbeat: asyncio.Task[None] | None = None

    async def _db(self, fn: Callable[..., T], *args: Any) -> T:
        """A store method on the storage threads, outside any call's context (and commit gate)."""
        return await self.store.db.run(contextvars.Context().run, fn, *args)

    # -- start -----------------------------------------------------------------------------
    async def start(
        self,
        binding: ToolBinding,
        request: CallRequest,
        arguments: Any = None,
        read: Callable[[], Awaitable[Any]] | None = None,
    ) -> Outcome | TaskRow:
        """The task's row once the call is admitted, else the call's own (synchronous) outcome."""
        loop = asyncio.get_running_loop()
        admitted: asyncio.Future[CallContext] = loop.create_future()
        task_id = new_task_id()

        def on_admitted(ctx: CallContext) -> None:
            if len(self._running) >= self.workers:
                raise ToolError(
                    f"this instance already runs {self.workers} tasks; nothing was started; retry shortly",
                    code="SERVICE_UNAVAILABLE",
                    details={"retry_after_ms": BUSY_RETRY_AFTER_MS},
                )
            self._running[task_id] = entry
            admitted.set_result(ctx)

        request.task_timeout_s = binding.task_timeout_s
        request.on_admitted = on_admitted
        # the call starts at the next await: `entry` exists before `on_admitted` can run
        inner = asyncio.ensure_future(self.pipeline.call_tool(binding, arguments, request, read=read))
        entry = _Running(task_id, inner)
        request.progress = entry.report
        try:
            waiting: set[asyncio.Future[Any]] = {inner, admitted}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            inner.cancel()
            self._running.pop(task_id, None)
            raise
        if not admitted.done():
            return inner.result()
        ctx = admitted.result()
        try:
            row = await self._db(self.store.create, task_id, binding.key, ctx.principal.id, ctx.run_id, ctx.trace_id)
        except BaseException as exc:
            inner.cancel()
            self._running.pop(task_id, None)
            if not isinstance(exc, ToolError):
                raise
            return self.pipeline.error_outcome(exc, ctx.run_id, ctx.trace_id)
        entry.created.set()
        entry.settler = asyncio.ensure_future(self._settle(entry, binding))
        self._beat()
        calllog.log_info("task_started", service=binding.service, tool=binding.name, run_id=ctx.run_id, task=task_id)
        return row

    # -- end -------------------------------------------------------------------------------
    async def _settle(self, entry: _Running, binding: ToolBinding) -> None:
        await asyncio.wait({entry.inner})
        try:
            if entry.inner.cancelled():
                return  # cancel() already wrote the row
            status, http_status, body = self._stored(entry.inner.result())
            try:
                kept = await self._db(self.store.finish, entry.id, status, http_status, body)
            except ToolError as exc:
                # the row keeps `working` until its lease runs out, then reads TASK_LOST: never lost in silence
                calllog.log_event(
                    "task_store_failed", service=binding.service, tool=binding.name, task=entry.id, code=exc.code
                )
                return
            calllog.log_event(
                "task_finished", service=binding.service, tool=binding.name, task=entry.id, status=status, kept=kept
            )
        finally:
            self._running.pop(entry.id, None)

    def _stored(self, outcome: Outcome) -> tuple[str, int, Any]:
        if not outcome.ok:
            return FAILED, outcome.status, outcome.body
        size = len(json.dumps(outcome.body, ensure_ascii=False).encode())
        if size <= self.max_result_bytes:
            return COMPLETED, outcome.status, outcome.body
        error = ToolError(
            f"the task's result is {size} bytes, more than the {self.max_result_bytes} a task may store "
            "(KUMITATE_TASK_MAX_RESULT_BYTES); run it again with a narrower input",
            code="OUTPUT_TOO_LARGE",
        )
        refused = self.pipeline.error_outcome(error, outcome.run_id, outcome.trace_id)
        return FAILED, refused.status, refused.body

    # -- reads and cancel ------------------------------------------------------------------
    async def get(self, task_id: str, principal: str) -> TaskRow | None:
        return await self._db(self.store.get, task_id, principal)

    async def cancel(self, task_id: str, principal: str) -> TaskRow | None:
        """Cancel the caller's task if it still works; it stops here at once, elsewhere at that instance's next beat."""
        row = await self._db(self.store.cancel, task_id, principal)
        running = self._running.get(task_id)
        if row is not None and running is not None and row.status != COMPLETED:
            running.inner.cancel()
        return row

    # -- heartbeat -------------------------------------------------------------------------
    def _beat(self) -> None:
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.ensure_future(self._heartbeat_loop())

    async def _heartbeat_loop(self) -> None:
        every = self.store.lease_s / 3
        while self._running:
            await asyncio.sleep(every)
            news = {task_id: entry.news() for task_id, entry in list(self._running.items()) if entry.created.is_set()}
            try:
                stopped = await self._db(self.store.renew, news)
            except ToolError as exc:
                calllog.log_event("task_lease_renewal_failed", code=exc.code, tasks=len(news))
                continue
            for task_id in stopped:
                entry = self._running.get(task_id)
                if entry is not None:
                    entry.inner.cancel()

    def close(self) -> None:
        """This instance stops: its running tasks are reported lost now rather than when their leases end."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        running = [task_id for task_id, entry in self._running.items() if entry.created.is_set()]
        for entry in self._running.values():
            entry.inner.cancel()
        if running:
            try:
                self.store.lose(
                    running, "the instance running this task was stopped before it finished; start it again"
                )
            except ToolError as exc:
                calllog.log_event("task_lose_failed", code=exc.code, tasks=len(running))
