"""Tasks over MCP: the io.modelcontextprotocol/tasks extension (SEP-2663) on kumitate's task runner.

A `tools/call` of a tool whose spec says `execution: {mode: task}`, from a 2026-07-28 client that
declares the extension for that request (`_meta` clientCapabilities), is started as a task:
the answer is a flat CreateTaskResult (`resultType: "task"`, `taskId`, `status`, times, `ttlMs`,
`pollIntervalMs`). Without the declaration, or on an older protocol, the call runs synchronously
as before, unless the spec says the tool runs only as a task (`execution.required`): then -32021. The task is the same row HTTP's operations read, so either transport may follow it.

A task may ask the client what the client declared it can answer (elicitation, sampling, roots):
it then reads `input_required` with the questions as `inputRequests`, and `tasks/update` brings
the answers. Questions the spec lists in `execution.asks_first` are asked before the task starts,
as multi-round-trip rounds of the `tools/call` itself (SEP-2322); the round that carries all their
answers starts the task, which gets them.

    tasks/get     the task; once completed its CallToolResult inlined under `result` (a catalogued
                  error from the tool is a completed task with `isError: true`, as a synchronous
                  call's), or, for a task lost with its instance or an internal failure, `failed`
                  with a JSON-RPC `error` whose `data` is the catalogue's body
    tasks/cancel  an empty ack; the task reads `cancelled` once it stopped (a finished one stays as it was)
    tasks/get     while `input_required`: the questions still unanswered, `inputRequests` {key: request}
    tasks/update  an empty ack; the `inputResponses` to questions the task waits on are its answers
                  (others are ignored); the task works on once every one is answered
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from fastmcp.exceptions import NotFoundError
from fastmcp.server.context import Context
from fastmcp.server.dependencies import get_http_request
from fastmcp.server.extensions import (
    MethodBinding,
    ServerExtension,
    ToolCallContinuation,
    ToolCallOutcome,
    read_client_extension_settings,
)
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolRequestParams, CallToolResult, RequestParams
from mcp_types.jsonrpc import HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field

from kumitate.errors import ErrorCode
from kumitate.pipeline import Outcome
from kumitate.runtime import Runtime
from kumitate.tasks.store import CANCELLED, COMPLETED, INPUT_REQUIRED, LIVE, TaskRow
from kumitate.transports.mcp.elicit import answer_of, declared_kinds, given_answers, input_request
from kumitate.transports.mcp.request import current_request
from kumitate.transports.mcp.results import tool_result
from kumitate.transports.mcp.tools import IDEMPOTENCY_ARGUMENT

if TYPE_CHECKING:
    from fastmcp.server.dependencies import FastMCPRequestContext

POLL_INTERVAL_MS = 1000
LOST_CODES: frozenset[ErrorCode] = frozenset({"TASK_LOST", "INTERNAL"})
"""Catalogue codes that are no answer of the tool's: a `failed` task; any other code is the tool's error result."""


class TaskParams(RequestParams):
    """The params of `tasks/get` and `tasks/cancel`: the task's id, as the protocol spells it (`taskId`)."""

    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(alias="taskId")


class UpdateParams(TaskParams):
    """The params of `tasks/update`: the task, and the answers to its questions keyed as it asked them."""

    input_responses: dict[str, object] = Field(default_factory=dict, alias="inputResponses")


class CreateTaskResult(BaseModel):
    """SEP-2663's flat `Result & Task` answer to a tools/call run as a task."""

    result_type: str = Field(default="task", serialization_alias="resultType")
    task_id: str = Field(serialization_alias="taskId")
    status: str
    created_at: str = Field(serialization_alias="createdAt")
    last_updated_at: str = Field(serialization_alias="lastUpdatedAt")
    ttl_ms: int = Field(serialization_alias="ttlMs")
    poll_interval_ms: int = Field(default=POLL_INTERVAL_MS, serialization_alias="pollIntervalMs")


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _opted_in(ctx: FastMCPRequestContext | None, settings: dict[str, object] | None) -> bool:
    """A 2026-07-28 request (`ctx`: its request context) that declares the extension (`settings`)."""
    return ctx is not None and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and settings is not None


def _missing_extension(why: str) -> MCPError:
    """JSON-RPC -32021 naming the extension the request did not declare (SEP-2575's data shape)."""
    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"{why}: declare the {TASKS_EXTENSION_ID} extension in this request's _meta (2026-07-28)",
        data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION_ID: {}}}},
    )


def _check_name_header(task_id: str) -> None:
    """SEP-2243 for the tasks namespace: an `Mcp-Name` header (surrounding blanks ignored) must name the
    body's `taskId`, so a router that read the header routed what the server runs."""
    try:
        header = get_http_request().headers.get(MCP_NAME_HEADER)
    except RuntimeError:  # stdio, in memory: no headers
        return
    if header is not None and (decode_header_value(header) or "").strip() != task_id:
        raise MCPError(HEADER_MISMATCH, f"the {MCP_NAME_HEADER} header does not match the request's taskId")


class TasksExtension(ServerExtension):
    """The tasks extension on a fastmcp server: its `tasks/*` methods, and the `tools/call` of a task
    tool from a client that declares the extension started as a task."""

    identifier = TASKS_EXTENSION_ID

    def __init__(self, runtime: Runtime, task_tools: frozenset[str]) -> None:
        """`task_tools`: the names of the tools this server serves that may run as tasks. A call to any
        other goes straight on, without a second lookup of its tool (fastmcp's `get_tool` walks the
        providers and the session's visibility rules: about a tenth of a small call's time)."""
        self.runtime = runtime
        self.task_tools = task_tools

    def clone(self) -> TasksExtension:
        """A copy for another server (fastmcp registers a clone on each; its default deep copy would copy the
        runtime): the copy shares this one's runtime."""
        return TasksExtension(self.runtime, self.task_tools)

    def methods(self) -> Sequence[MethodBinding]:
        """The JSON-RPC methods this extension adds, on the protocol versions that have them."""
        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return [
            MethodBinding("tasks/get", TaskParams, self._get, versions),
            MethodBinding("tasks/update", UpdateParams, self._update, versions),
            MethodBinding("tasks/cancel", TaskParams, self._cancel, versions),
        ]

    # -- tools/call ------------------------------------------------------------------------
    async def intercept_tool_call(
        self, params: CallToolRequestParams, context: Context, call_next: ToolCallContinuation
    ) -> ToolCallOutcome:
        """Start a task tool's call as a task when the client declared the extension; run any other call on."""
        if params.name not in self.task_tools:
            return await call_next()
        try:
            tool = await context.fastmcp.get_tool(params.name)
        except NotFoundError:
            tool = None
        binding = getattr(tool, "binding", None)
        if binding is None or binding.task_timeout_s is None:
            return await call_next()
        if not _opted_in(context.request_context, context.client_extension_settings(TASKS_EXTENSION_ID)):
            if binding.task_required:
                raise _missing_extension("this tool runs only as a task")
            return await call_next()
        arguments = dict(params.arguments or {})
        key = arguments.pop(IDEMPOTENCY_ARGUMENT, None)
        if key is not None and not isinstance(key, str):
            return await call_next()  # the synchronous path refuses it, after admission
        kinds = declared_kinds()
        answered = given_answers(self.runtime.settings) if kinds else {}
        if kinds and any(first not in answered for first in binding.execution.asks_first):
            return await call_next()  # the questions asked first: a synchronous round (input_required)
        request = current_request(key)
        started = await self.runtime.tasks.start(binding, request, arguments=arguments, asks=kinds, answered=answered)
        if isinstance(started, Outcome):
            return tool_result(started, binding.text_content)
        return CreateTaskResult(
            task_id=started.id,
            status=started.status,
            created_at=_time(started.created_at),
            last_updated_at=_time(started.updated_at),
            ttl_ms=self._ttl_ms(),
        )

    def _text_content(self, key: str) -> str | None:
        """`mcp.text_content` of the tool `key` (service.tool) names."""
        service = self.runtime.services.get(key.partition(".")[0])
        found = [t for t in service.tools if t.key == key] if service is not None else []
        return found[0].text_content if found else None

    def _ttl_ms(self) -> int:
        return int(self.runtime.tasks.store.ttl_s * 1000)

    # -- tasks/* ---------------------------------------------------------------------------
    async def _row(self, ctx: ServerRequestContext[object, object], task_id: str, cancel: bool = False) -> TaskRow:
        if read_client_extension_settings(ctx, TASKS_EXTENSION_ID) is None:
            raise _missing_extension("the tasks methods need it")
        _check_name_header(task_id)
        try:
            caller = await self.runtime.pipeline.identify(current_request(), "cancel_task" if cancel else "get_task")
        except Exception as exc:  # a refused token: the same as any refusal of a request that names no tool
            raise MCPError(INVALID_PARAMS, f"Task {task_id} not found") from exc
        tasks = self.runtime.tasks
        row = await (tasks.cancel(task_id, caller.principal.id) if cancel else tasks.get(task_id, caller.principal.id))
        if row is None:
            raise MCPError(INVALID_PARAMS, f"Task {task_id} not found")
        return row

    async def _get(self, ctx: ServerRequestContext[object, object], params: TaskParams) -> dict[str, object]:
        row = await self._row(ctx, params.task_id)
        answer: dict[str, object] = {
            "resultType": "complete",
            "taskId": row.id,
            "status": row.status,
            "createdAt": _time(row.created_at),
            "lastUpdatedAt": _time(row.updated_at),
            "ttlMs": self._ttl_ms(),
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if row.status == INPUT_REQUIRED:
            answer["inputRequests"] = {k: input_request(q) for k, q in (row.questions or {}).items()}
        if row.status in LIVE:
            if row.progress and row.progress.get("message"):
                answer["statusMessage"] = row.progress["message"]
            return answer
        if row.status == CANCELLED:
            return answer
        code = None if row.status == COMPLETED else row.result["error"]["code"]
        if code in LOST_CODES:
            message = row.result["error"]["message"]
            answer |= {"status": "failed", "statusMessage": message}
            answer["error"] = {"code": INTERNAL_ERROR, "message": message, "data": row.result}
            return answer
        outcome = Outcome(
            row.status == COMPLETED, row.http_status or 200, code or "OK", row.result, row.run_id, row.trace_id
        )
        result = tool_result(outcome, self._text_content(row.tool)).to_mcp_result()
        assert isinstance(result, CallToolResult)  # a result with _meta always is
        answer |= {"status": "completed", "result": result.model_dump(by_alias=True, mode="json", exclude_none=True)}
        return answer

    async def _cancel(self, ctx: ServerRequestContext[object, object], params: TaskParams) -> dict[str, object]:
        await self._row(ctx, params.task_id, cancel=True)
        return {"resultType": "complete"}

    async def _update(self, ctx: ServerRequestContext[object, object], params: UpdateParams) -> dict[str, object]:
        row = await self._row(ctx, params.task_id)
        waiting = row.questions or {} if row.status == INPUT_REQUIRED else {}
        answers = {k: answer_of(waiting[k], r) for k, r in params.input_responses.items() if k in waiting}
        if answers:
            await self.runtime.tasks.answer(row.id, row.principal, answers)
        return {"resultType": "complete"}
