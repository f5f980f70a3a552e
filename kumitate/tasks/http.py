"""Tasks over HTTP: `Prefer: respond-async` starts one (202 Accepted + Location), operations report it.

The operation resource has the shape of Google AIP-151: `name` (`operations/<id>`), `done`,
`metadata` (tool, status, progress, times) and, once done, `response` (the tool's result) or
`error` (the catalogue's `{code, message, retryable}`), plus the call's `run_id` and `trace_id`.
A client that does not send the preference gets the synchronous answer, as from any tool.

    GET  /v1/operations/{id}          the operation (only to the caller who started it)
    POST /v1/operations/{id}:cancel   cancel it if it still runs; the operation as it now is
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from litestar import Response, route
from litestar.handlers import HTTPRouteHandler

from kumitate.bindings import ToolBinding
from kumitate.errors import ToolError
from kumitate.runtime import Runtime
from kumitate.tasks.store import COMPLETED, TaskRow
from kumitate.transports.http.wire import HttpRequest, call_request, request_ids, to_response

OPERATIONS = "/v1/operations"
RESPOND_ASYNC = "respond-async"
POLL_AFTER_S = 2


def wants_task(binding: ToolBinding, request: HttpRequest) -> bool:
    """A tool that may run as a task, asked to by RFC 7240's `Prefer: respond-async`."""
    if binding.task_timeout_s is None:
        return False
    prefer = ",".join(request.headers.getall("prefer", []))
    return any(p.split(";", 1)[0].strip().lower() == RESPOND_ASYNC for p in prefer.split(","))


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def operation(row: TaskRow) -> dict[str, object]:
    """The task's row as an AIP-151 operation (module docstring): metadata always, and once it is done
    the response or the catalogue's error."""
    body: dict[str, object] = {
        "name": f"operations/{row.id}",
        "done": row.done,
        "metadata": {
            "tool": row.tool,
            "status": row.status,
            "progress": row.progress,
            "create_time": _time(row.created_at),
            "update_time": _time(row.updated_at),
        },
    }
    if row.status == COMPLETED:
        body["response"] = row.result
    elif row.done:
        body["error"] = row.result["error"]
    return body | {"run_id": row.run_id, "trace_id": row.trace_id}


def _answer(row: TaskRow, status: int = 200, headers: dict[str, str] | None = None) -> Response[dict[str, object]]:
    headers = dict(headers or {})
    if not row.done:
        headers["Retry-After"] = str(POLL_AFTER_S)
    return Response(operation(row), status_code=status, headers=headers, media_type="application/json")


async def start(
    runtime: Runtime, binding: ToolBinding, request: HttpRequest, read: Callable[[], Awaitable[object]]
) -> Response[bytes] | Response[dict[str, object]]:
    """202 with the operation once the call is admitted; a call refused before its handler gets its refusal."""
    started = await runtime.tasks.start(binding, call_request(request), read=read)
    if not isinstance(started, TaskRow):
        return to_response(started)
    location = f"{OPERATIONS}/{started.id}"
    return _answer(started, 202, {"Location": location, "Preference-Applied": RESPOND_ASYNC})


def _not_found(task_id: str) -> ToolError:
    return ToolError(f"no operation {task_id!r} (it never existed, is not yours, or has expired)", code="NOT_FOUND")


def operation_routes(runtime: Runtime) -> list[HTTPRouteHandler]:
    """The routes that read and cancel operations, each answering only the principal who started the task."""

    async def caller(request: HttpRequest, what: str) -> str:
        ctx = await runtime.pipeline.identify(call_request(request), what)
        return ctx.principal.id

    def refused(request: HttpRequest, exc: ToolError) -> Response[bytes]:
        return to_response(runtime.pipeline.error_outcome(exc, *request_ids(request)))

    async def answer(
        request: HttpRequest,
        task_id: str,
        what: str,
        act: Callable[[str, str], Awaitable[TaskRow | None]],
    ) -> Response[bytes] | Response[dict[str, object]]:
        """The operation as `act` (get or cancel, for the caller) leaves it; the refusal when there is none."""
        try:
            row = await act(task_id, await caller(request, what))
            if row is None:
                raise _not_found(task_id)
        except ToolError as exc:
            return refused(request, exc)
        return _answer(row)

    async def get_operation(request: HttpRequest, name: str) -> Response[bytes] | Response[dict[str, object]]:
        return await answer(request, name, "get_operation", runtime.tasks.get)

    async def cancel_operation(request: HttpRequest, name: str) -> Response[bytes] | Response[dict[str, object]]:
        task_id, _, verb = name.partition(":")
        if verb != "cancel":
            method = ToolError(
                f"no such operation method {verb!r}; use POST {OPERATIONS}/<id>:cancel", code="NOT_FOUND"
            )
            return refused(request, method)
        return await answer(request, task_id, "cancel_operation", runtime.tasks.cancel)

    # one Litestar path holds `{id}` (GET) and `{id}:cancel` (POST), so OPTIONS is answered here: its
    # Allow header names the methods of the address asked about, as the OpenAPI document does
    @route(f"{OPERATIONS}/{{name:str}}", http_method=["GET", "POST", "OPTIONS"], include_in_schema=False)
    async def operation(request: HttpRequest, name: str) -> Response[bytes] | Response[dict[str, object]]:
        if request.method == "OPTIONS":
            allow = "OPTIONS, POST" if name.endswith(":cancel") else "GET, OPTIONS"
            return Response(b"", status_code=204, headers={"Allow": allow})
        if request.method == "GET":
            return await get_operation(request, name)
        return await cancel_operation(request, name)

    return [operation]
