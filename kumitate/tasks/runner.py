"""Runs tool calls as tasks: started through the one pipeline, answered before the handler ends.

`start` hands the call to the pipeline as it is (authentication, rate limit, idempotency, input
validation: the same steps as a synchronous call, once). When the pipeline admits the call
(`CallRequest.on_admitted`, just before the handler), the task's row is written and the caller
gets it back (HTTP 202, an MCP CreateTaskResult); a call refused before then gets its refusal, as
if synchronous, and leaves no task behind. The handler then runs on under the task's own deadline
(spec `execution.timeout_ms`), at most KUMITATE_TASK_WORKERS of them per instance, and its outcome
(bounded: KUMITATE_TASK_MAX_RESULT_BYTES) goes to the row, where any instance reads it.

A task may ask its caller something (`CallContext.ask`, `sample`, `roots`) when the transport says
which kinds of question its caller can answer (`start(asks=...)`): the task then waits
`input_required` with the questions in its row, and its worker thread waits for the answers, which
any instance may write (`answer`); this one takes them at once when they arrive here, else within
ANSWER_POLL_S. The task's deadline and its cancellation run meanwhile.

One heartbeat per instance renews the leases of its running tasks, carries their latest progress
to the rows, and stops the ones cancelled meanwhile (maybe through another instance).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import asdict, dataclass, field
from typing import TypeVar

from kumitate.bindings import ToolBinding
from kumitate.callstate import Asker, CallCancelled, Question
from kumitate.context import CallContext, current_call
from kumitate.errors import ToolError
from kumitate.observability import calllog
from kumitate.pipeline import CallRequest, Outcome, Pipeline
from kumitate.tasks.store import COMPLETED, FAILED, LIVE, TaskRow, TaskStore

T = TypeVar("T")
BUSY_RETRY_AFTER_MS = 5000
ANSWER_POLL_S = 1.0
"""How often a task waiting for answers reads its row (answers given through another instance)."""


@dataclass(slots=True)
class _Running:
    id: str
    inner: asyncio.Future[Outcome]
    progress: dict[str, object] | None = None
    reported: dict[str, object] | None = None
    created: threading.Event = field(default_factory=threading.Event)
    """Set once the task's row exists (the handler may start before it is written)."""
    settler: asyncio.Future[None] | None = None
    answered: threading.Event = field(default_factory=threading.Event)
    """Set when answers to its questions were written through this instance."""

    def report(self, done: float, total: float | None, message: str | None) -> None:
        self.progress = {"done": done, "total": total, "message": message}

    def news(self) -> dict[str, object] | None:
        """The progress not yet written to the row (None: nothing new)."""
        latest = self.progress
        if latest is None or latest == self.reported:
            return None
        self.reported = latest
        return latest


def _waiting_on(event: threading.Event) -> None:
    """On a task's worker thread: until `event` is set or ANSWER_POLL_S passed; CallCancelled once the
    call was cancelled, REQUEST_TIMEOUT past its deadline."""
    event.wait(ANSWER_POLL_S)
    call = current_call()
    if call is not None:
        if call.cancelled():
            raise CallCancelled(call.run_id)
        call.check_deadline()


def new_task_id() -> str:
    """An unguessable task id: the id in a URL is not a capability (only the caller who started the task
    may read it), but it must not tell one caller how many tasks others run."""
    return secrets.token_hex(16)


class TaskRunner:
    """The task runner of one instance (module docstring): built with the pipeline that admits each call,
    the store that holds every task, and how many may run here at once (`workers`) and how large a
    result a row may hold (`max_result_bytes`)."""

    def __init__(
        self, pipeline: Pipeline, store: TaskStore, *, workers: int = 4, max_result_bytes: int = 1 << 20
    ) -> None:
        self.pipeline = pipeline
        self.store = store
        self.workers = workers
        self.max_result_bytes = max_result_bytes
        self._running: dict[str, _Running] = {}
        self._heartbeat: asyncio.Task[None] | None = None

    async def _db(self, fn: Callable[..., T], *args: object) -> T:
        """A store method on the storage threads, outside any call's context (and commit gate), bounded by
        KUMITATE_DB_TIMEOUT_MS all the same (a frozen database answers STORAGE_UNAVAILABLE, never hangs)."""
        from kumitate.storage import bounds  # SQLAlchemy: only once a task store exists

        db = self.store.db
        until, what = time.monotonic() + db.timeout_s, f"{round(db.timeout_s * 1000)} ms (KUMITATE_DB_TIMEOUT_MS)"
        return await db.run(contextvars.Context().run, bounds.call_until, until, what, fn, *args)

    # -- start -----------------------------------------------------------------------------
    async def start(
        self,
        binding: ToolBinding,
        request: CallRequest,
        arguments: object = None,
        read: Callable[[], Awaitable[object]] | None = None,
        asks: Collection[str] = (),
        answered: Mapping[str, object] | None = None,
    ) -> Outcome | TaskRow:
        """The task's row once the call is admitted, else the call's own (synchronous) outcome.

        `asks`: the kinds of Question the caller can answer (none: the handler's questions get None);
        `answered`: answers the caller gave before the task started (by question key)."""
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
        if asks:
            request.asker = self._asker(entry, frozenset(asks), dict(answered or {}))
        try:
            waiting: set[asyncio.Future[Outcome] | asyncio.Future[CallContext]] = {inner, admitted}
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

    # -- questions -------------------------------------------------------------------------
    def _asker(self, entry: _Running, kinds: frozenset[str], answered: dict[str, object]) -> Asker:
        """The task's asker: questions not yet answered put the task `input_required` and wait."""
        loop = asyncio.get_running_loop()

        def db(fn: Callable[..., T], *args: object) -> T:
            return asyncio.run_coroutine_threadsafe(self._db(fn, *args), loop).result()

        def stopped() -> CallCancelled:
            """The task no longer runs (cancelled or lost, maybe through another instance): stop its call."""
            loop.call_soon_threadsafe(entry.inner.cancel)
            return CallCancelled(entry.id)

        def ask(questions: Mapping[str, Question]) -> dict[str, object]:
            askable = {key: q for key, q in questions.items() if q.kind in kinds}
            waiting = {key: asdict(q) for key, q in askable.items() if key not in answered}
            if waiting:
                while not entry.created.is_set():  # the row is written just after the handler starts
                    _waiting_on(entry.created)
                entry.answered.clear()
                if not db(self.store.ask, entry.id, waiting):
                    raise stopped()
                calllog.log_info("task_input_required", task=entry.id, questions=len(waiting))
                while True:
                    _waiting_on(entry.answered)
                    entry.answered.clear()
                    status, answers = db(self.store.taken, entry.id)
                    if status not in LIVE:
                        raise stopped()
                    if answers is not None:
                        answered.update(answers)
                        break
            return {key: answered.get(key) if key in askable else None for key in questions}

        return ask

    async def answer(self, task_id: str, principal: str, answers: Mapping[str, object]) -> TaskRow | None:
        """Answers to the caller's `input_required` task (keys it does not wait on are ignored);
        the task as it now is (None: no such task)."""
        row = await self._db(self.store.answer, task_id, principal, answers)
        running = self._running.get(task_id)
        if running is not None:
            running.answered.set()
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

    def _stored(self, outcome: Outcome) -> tuple[str, int, object]:
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
        """The caller's task as the store holds it now; None when there is no such task or another principal
        started it (the two are indistinguishable to the caller); a task whose instance died reads failed."""
        return await self._db(self.store.get, task_id, principal)

    async def cancel(self, task_id: str, principal: str) -> TaskRow | None:
        """Cancel the caller's task if it still works; it stops here at once, elsewhere at that instance's next beat."""
        row = await self._db(self.store.cancel, task_id, principal)
        running = self._running.get(task_id)
        if row is not None and running is not None and row.status != COMPLETED:
            running.inner.cancel()
            running.answered.set()
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
