"""The spec's tools and resources as Litestar routes: read the body, hand it to the pipeline, write
the Outcome back (kumitate.transports.http.wire); a tool that can run as a task starts one when the
caller prefers it (kumitate.tasks.http, which builds on the wire module too).
"""

import asyncio
import importlib
import re
from collections.abc import Sequence

from litestar import HttpMethod, Response, route
from litestar.exceptions import HTTPException, MethodNotAllowedException, NotFoundException
from litestar.handlers import BaseRouteHandler, HTTPRouteHandler
from litestar.types import ControllerRouterHandler, Empty

from kumitate.bindings import ResourceBinding, ToolBinding
from kumitate.intake import JsonBody
from kumitate.runtime import Runtime
from kumitate.transports.disconnect import ClientGone, unless_disconnected
from kumitate.transports.edge.paths import segment_text
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
        if shaped and not rest.answers(request, binding):  # `/users/x` is not `/users/{user}:getStats`
            raise NotFoundException()
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
        opt={BINDING: binding},
    )(endpoint)


BINDING = "kumitate_tool"
"""The `opt` key of a tool route's handler that holds its binding (`shared_routes` reads it)."""


def _node(path: str) -> str:
    """A route's place in Litestar's router: each segment with a variable in it is one variable slot
    (Litestar routes by whole segments, so `{p0:str}:getStats` and `{p0:str}` are the one place)."""
    return re.sub(r"(?<=/)[^/]*\{[^/]*", "{}", path)


def shared_routes(handlers: Sequence[ControllerRouterHandler]) -> list[ControllerRouterHandler]:
    """`handlers` with the tool routes that land on one place in the router made one route that calls
    the tool whose method and path the request's are (`GET /users/{user}`, `GET /users/{user}:getStats`
    and `PATCH /users/{user}` of an API in Google's custom-method style): Litestar keeps the methods of
    only one of the routes it files at one place, the last."""
    out: list[ControllerRouterHandler] = []
    shared: dict[str, list[HTTPRouteHandler]] = {}
    for handler in handlers:
        binding = handler.opt.get(BINDING) if isinstance(handler, HTTPRouteHandler) else None
        if isinstance(handler, HTTPRouteHandler) and isinstance(binding, ToolBinding):
            shared.setdefault(_node(next(iter(handler.paths))), []).append(handler)
        else:
            out.append(handler)
    for group in shared.values():  # one path for all of them: Litestar files their methods together itself
        out += [_dispatch(group)] if len({path for h in group for path in h.paths}) > 1 else group
    return out


def _dispatch(group: list[HTTPRouteHandler]) -> HTTPRouteHandler:
    """One route for tools sharing a place: the request goes to the first tool of its method, most fixed
    text first, whose path it is; under the largest body cap among them (each tool's own is Litestar's,
    per route)."""
    ordered = sorted(group, key=lambda h: -rest.specificity(h.opt[BINDING]))
    methods = sorted({h.opt[BINDING].http_method for h in group})
    caps = [h.request_max_body_size for h in group]
    cap = Empty if any(c in (None, Empty) for c in caps) else max(c for c in caps if isinstance(c, int))

    async def endpoint(request: HttpRequest) -> Response[bytes]:
        answering = [h for h in ordered if rest.answers(request, h.opt[BINDING])]
        for handler in answering:
            if handler.opt[BINDING].http_method == request.method:
                response: Response[bytes] = await handler.fn(request)
                return response
        if answering:
            raise MethodNotAllowedException()
        raise NotFoundException()

    first: ToolBinding = ordered[-1].opt[BINDING]
    endpoint.__name__ = f"tools_{first.service}_{'_'.join(h.opt[BINDING].name for h in ordered)}"
    return route(
        next(iter(ordered[-1].paths)),
        http_method=[HttpMethod(method) for method in methods],
        name="+".join(str(h.name) for h in ordered),
        include_in_schema=False,
        status_code=200,
        request_max_body_size=cap,
    )(endpoint)


def resource_route(runtime: Runtime, binding: ResourceBinding) -> BaseRouteHandler:
    """The GET route of one resource: its URI template's variables as path parameters, read through the pipeline."""
    path = binding.http_path
    for param in binding.params:
        path = path.replace(f"{{{param}}}", f"{{{param}:str}}")

    async def endpoint(request: HttpRequest) -> Response[bytes]:
        params = {p: segment_text(str(request.path_params[p])) for p in binding.params}
        outcome = await runtime.pipeline.read_resource(binding, params, call_request(request))
        return to_response(outcome)

    endpoint.__name__ = f"resource_{binding.service}_{binding.name}"
    return route(path, http_method=["GET"], name=binding.key, include_in_schema=False, status_code=200)(endpoint)
