"""The end of every chain: the handler, run on the loop (async) or on a thread of its service's
bulkhead (sync; kumitate.serving.bulkhead).

A tool whose spec sets `inline_max_bytes` (pure computation) runs a sync handler on the loop
when its HTTP body is that small: the hop to a thread and back, and the GIL hand-offs it causes,
cost more than such a call's work (docs/BENCHMARKS.md, wrk).

A call whose caller went away (MCP notifications/cancelled, a closed connection) is
cancelled here: an async handler is stopped, and a worker thread's commit gate refuses from
then on and its next `ctx.progress` raises, so a cancelled call saves nothing.

A handler may raise only the codes its tool declares (`binding.allowed`): any other code
(a misspelt one, or one the spec never promised) is logged with the tool and the code and
answers INTERNAL, so a client never meets a code the contract does not list.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Callable
from functools import partial
from typing import Any

from pydantic import BaseModel

from kumitate import faults
from kumitate.bindings import PromptBinding, ResourceBinding, ToolBinding
from kumitate.context import Attachment, CallContext, Message, state_of
from kumitate.errors import ToolError
from kumitate.intake import Intake, JsonBody
from kumitate.observability import calllog, tracing
from kumitate.offloop import OffLoopIntake
from kumitate.serving.bulkhead import Bulkhead
from kumitate.steps import Call, Outcome
from kumitate.steps.errors import internal


def json_data(result: object) -> object:
    """A handler's result as JSON data: a generated model is dumped once, here; data passes as it is."""
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return result


class Handler:
    """One handler method, how to run it, and which codes it may raise; built once per tool."""

    def __init__(self, method: Callable[..., Any], bulkhead: Bulkhead, allowed: frozenset[str]) -> None:
        self.method = method
        self.is_async = inspect.iscoroutinefunction(method)
        self.bulkhead = bulkhead
        self.allowed = allowed

    async def __call__(self, ctx: CallContext, *args: object, **kw: object) -> object:
        """Call the handler as a plain function would be called (in its bulkhead, off the loop when sync)."""
        return await self.run(ctx, args, kw)

    async def run(
        self, ctx: CallContext, args: tuple[object, ...], kw: dict[str, object], inline: bool = False
    ) -> object:
        """`inline`: a sync handler runs here, on the loop (a small call of a pure tool)."""
        try:
            if self.is_async:
                result = await self.method(*args, **kw)
            elif inline:
                result = self.method(*args, **kw)
            else:
                result = await self._in_thread(ctx, *args, **kw)
            if inspect.isawaitable(result):
                result = await result
            return result
        except asyncio.CancelledError:
            state = state_of(ctx)
            if not state.expired():  # a time-out is the deadline step's; this is the caller going away
                stopped = state.cancel()  # a worker thread's commit gate refuses from now on
                calllog.log_event(
                    "call_cancelled", service=ctx.service, tool=ctx.tool, run_id=ctx.run_id, committed=not stopped
                )
            raise
        except ToolError as exc:
            if exc.code in self.allowed or faults.storage_failure(exc) is not None:
                raise
            calllog.log_event("undeclared_code", service=ctx.service, tool=ctx.tool, run_id=ctx.run_id, code=exc.code)
            raise internal(ctx) from None

    async def _in_thread(self, ctx: CallContext, *args: object, **kw: object) -> object:
        # a plain executor per service (its bulkhead): about half the hop cost of anyio.to_thread here
        return await self.bulkhead.run(ctx, partial(contextvars.copy_context().run, self.method, *args, **kw))


class InvokeTool:
    """Input validation (kumitate.intake), then the handler with its input and context."""

    def __init__(self, binding: ToolBinding, handler: Handler, intake: Intake, large: OffLoopIntake) -> None:
        self.binding = binding
        self.handler = handler
        self.intake = intake
        self.large = large
        self.inline_max = binding.inline_max_bytes

    async def __call__(self, call: Call) -> Outcome:
        """Validate the arguments, call the handler, and give its result as the outcome: the end of a tool's
        chain."""
        ctx = call.ctx
        arguments = call.arguments
        inline = (
            self.inline_max is not None and isinstance(arguments, JsonBody) and len(arguments.raw) <= self.inline_max
        )
        with tracing.stage("validate"):
            if self.large.wants(arguments):  # parsed and checked off the loop (kumitate.offloop)
                handler_input = await self.large.prepare(
                    self.binding, arguments, partial(self.handler.bulkhead.run, ctx)
                )
            else:
                handler_input = self.intake.prepare(self.binding, arguments)
        if call.request.on_admitted is not None:
            call.request.on_admitted(ctx)
        with tracing.stage("handler"):
            result = await self.handler.run(ctx, (handler_input, ctx), {}, inline)
        body = json_data(result)
        return Outcome(
            True, 200, "OK", body, ctx.run_id, ctx.trace_id, attachments=ctx.attachments, warnings=ctx.warnings
        )


class InvokeResource:
    """A resource's reader with its URI parameters: JSON data, or bytes of its declared type."""

    def __init__(self, binding: ResourceBinding, handler: Handler, disabled: Callable[[], bool]) -> None:
        self.binding = binding
        self.handler = handler
        self.disabled = disabled

    async def __call__(self, call: Call) -> Outcome:
        """Call the resource's reader and give what it read as the outcome (JSON, or bytes with their media
        type): the end of a resource's chain."""
        ctx, binding = call.ctx, self.binding
        if self.disabled():  # an opt-in resource not enabled here: NOT_FOUND, after auth like any route
            raise ToolError(f"resource {binding.uri} is not enabled on this server", code="NOT_FOUND")
        with tracing.stage("handler"):
            result = await self.handler(ctx, ctx, **call.params)
        if binding.is_json:
            return Outcome(True, 200, "OK", json_data(result), ctx.run_id, ctx.trace_id)
        media_type = binding.mime_type
        if isinstance(result, Attachment):  # the handler knows the exact type (csv vs parquet export)
            media_type, result = result.mime_type, result.data
        if not isinstance(result, bytes | bytearray):
            raise TypeError(f"resource {binding.name} must return bytes")
        return Outcome(True, 200, "OK", bytes(result), ctx.run_id, ctx.trace_id, media_type=media_type)


class InvokePrompt:
    """A prompt's renderer with its arguments (strings): the list of Messages, as the body."""

    def __init__(self, binding: PromptBinding, handler: Handler) -> None:
        self.binding = binding
        self.handler = handler

    async def __call__(self, call: Call) -> Outcome:
        """Check the prompt's arguments against the spec, call the handler and give its messages as the
        outcome: the end of a prompt's chain."""
        ctx, binding = call.ctx, self.binding
        declared = {a["name"] for a in binding.arguments}
        missing = [a["name"] for a in binding.arguments if a["required"] and a["name"] not in call.params]
        unknown = sorted(set(call.params) - declared)
        if missing or unknown:
            raise ToolError(f"prompt {binding.name}: missing {missing}, unknown {unknown}", code="BAD_REQUEST")
        with tracing.stage("handler"):
            result = await self.handler(ctx, ctx, **call.params)
        if not (isinstance(result, list) and all(isinstance(m, Message) for m in result)):
            raise TypeError(f"prompt {binding.name} must return a list of Message")
        return Outcome(True, 200, "OK", result, ctx.run_id, ctx.trace_id)
