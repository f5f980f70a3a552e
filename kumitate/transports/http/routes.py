"""The spec's tools and resources as Litestar routes: read the body, hand it to the pipeline, write
the Outcome back (kumitate.transports.http.wire); a tool that can run as a task starts one when the
caller prefers it (kumitate.tasks.http, which builds on the wire module too).
"""

import asyncio
import importlib

from litestar import HttpMethod, Response, route
from litestar.exceptions import HTTPException
from litestar.handlers import BaseRouteHandler
from litestar.types import Empty

from kumitate.bindings import ResourceBinding, ToolBinding
from kumitate.intake import JsonBody
from kumitate.runtime import Runtime
from kumitate.transports.disconnect import ClientGone, unless_disconnected
from kumitate.transports.http import rest
from kumitate.transports.http.wire import (
    CLIENT_CLOSED_REQUEST,
    HttpRequest,
    call_request,
    http_error,
    read_arguments,
    to_response,
)


def tool_route(runtime: Runtime, binding: ToolBinding) -> BaseRouteHandler:
    """The route of one tool (spec `http`): the body read by the pipeline once the caller is admitted,
    under the tool's own body cap; a caller that goes away stops the call (logged as 499)."""
    # its task store loads the storage stack: only for a tool that can run as a task
    tasks_http = importlib.import_module("kumitate.tasks.http") if binding.task_timeout_s is not None else None
    shaped = not binding.http_shape.plain
    reader = rest.read_shaped_arguments if shaped else read_arguments

    async def endpoint(request: HttpRequest) -> Response[bytes]:
        body_read = asyncio.Event()

        async def read() -> JsonBody | dict[str, object]:
            try:
                return await reader(request, binding)
            except HTTPException as exc:  # e.g. 413 from Litestar's body-size cap
                raise http_error(runtime, exc) from None
            finally:
                body_read.set()

        if tasks_http is not None and tasks_http.wants_task(binding, request):  # `Prefer: respond-async`: 202
            return await tasks_http.start(runtime, binding, request, read)
        # the body is read by the pipeline once the caller is admitted (auth, rate limit)
        call = runtime.pipeline.call_tool(binding, None, call_request(request), read=read)
        try:
            outcome = await unless_disconnected(request.receive, body_read, call)
        except ClientGone:
            return Response(b"", status_code=CLIENT_CLOSED_REQUEST)  # nobody reads it
        return to_response(rest.shaped_outcome(outcome, binding) if shaped else outcome)

    endpoint.__name__ = f"tool_{binding.service}_{binding.name}"
    limit = binding.policy.max_request_bytes
    return route(
        rest.route_path(binding) if shaped else binding.http_path,
        http_method=[HttpMethod(binding.http_method)],
        name=binding.key,
        include_in_schema=False,
        status_code=200,
        request_max_body_size=limit or Empty,  # Empty: the app-wide cap
    )(endpoint)


def resource_route(runtime: Runtime, binding: ResourceBinding) -> BaseRouteHandler:
    """The GET route of one resource: its URI template's variables as path parameters, read through the pipeline."""
    path = binding.http_path
    for param in binding.params:
        path = path.replace(f"{{{param}}}", f"{{{param}:str}}")

    async def endpoint(request: HttpRequest) -> Response[bytes]:
        params = {p: str(request.path_params[p]) for p in binding.params}
        outcome = await runtime.pipeline.read_resource(binding, params, call_request(request))
        return to_response(outcome)

    endpoint.__name__ = f"resource_{binding.service}_{binding.name}"
    return route(path, http_method=["GET"], name=binding.key, include_in_schema=False, status_code=200)(endpoint)
