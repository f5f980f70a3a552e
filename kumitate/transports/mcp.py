"""MCP adapter (fastmcp): wire format <-> pipeline, nothing else.

Tools advertise the spec's input and output schemas verbatim (a type repeated within one schema
as a local `$defs` entry, codegen/shared.py). A success returns
structuredContent (plus image content for attachments); a failure returns
`isError: true` with the same error body the HTTP side sends.
"""

from __future__ import annotations

import base64
import inspect
import json
import logging
from typing import Any

import mcp_types as mt
import msgspec
from fastmcp import FastMCP
from fastmcp.exceptions import DisabledError, NotFoundError
from fastmcp.resources import Resource, ResourceTemplate
from fastmcp.server.dependencies import fastmcp_request_ctx
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import Tool, ToolResult
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, ImageContent, TextContent, ToolAnnotations
from pydantic import Field

from kumitate import __version__, calllog, correlation
from kumitate.bindings import ResourceBinding, ToolBinding
from kumitate.errors import ToolError
from kumitate.pipeline import CallRequest, Outcome
from kumitate.policies.idempotency import MAX_KEY_LENGTH
from kumitate.runtime import Runtime
from kumitate.transports.asgi import SERVED_OVER_NETWORK
from kumitate.transports.mcp_completions import complete_params as complete_params  # used by generated bindings
from kumitate.transports.mcp_elicit import InputRequired, asker
from kumitate.transports.origin import base_url_of
from kumitate.transports.progress import Send, relaying

ANNOTATION_FIELDS = {
    "title": "title",
    "readOnlyHint": "read_only_hint",
    "destructiveHint": "destructive_hint",
    "idempotentHint": "idempotent_hint",
    "openWorldHint": "open_world_hint",
}


def current_request(idempotency_key: str | None = None) -> CallRequest:
    """Correlation from `_meta`, falling back to the streamable-HTTP request's headers.

    Over streamable HTTP the connection's bearer token is the caller's; stdio and
    in-memory sessions have no network peer and run as the local principal. The local
    principal holds every scope, so it is granted only to a call that did not come
    through the network ASGI layer: a network call without an HTTP request attached
    fails closed (no token) instead of running as local.
    """
    rc = fastmcp_request_ctx.get()
    meta = dict(rc.meta or {}) if rc is not None else {}
    headers: dict[str, str] = {}
    fallback = None
    base_url = None
    if rc is not None and rc.request is not None:
        base_url = base_url_of(rc.request.scope)
        headers = {k.lower(): v for k, v in rc.request.headers.items()}
        state = rc.request.scope.get("state") or {}
        fallback = state.get("kumitate_ids") or correlation.from_headers(headers)
        client = rc.request.client.host if rc.request.client else None
    else:
        client = None
    return CallRequest(
        transport="mcp",
        headers=headers,
        meta=meta,
        ids=correlation.from_meta(meta, fallback),
        client=client,
        authorization=headers.get("authorization"),
        local=(rc is None or rc.request is None) and not SERVED_OVER_NETWORK.get(),
        idempotency_key=idempotency_key,
        base_url=base_url,
    )


def _progress_sender() -> Send | None:
    """Sends `notifications/progress` for this request, if the client gave a progressToken."""
    rc = fastmcp_request_ctx.get()
    meta = rc._srctx.meta if rc is not None else None
    token = meta.get("progress_token") if meta else None
    if rc is None or token is None:
        return None
    session, request_id = rc.session, rc.request_id

    async def send(done: float, total: float | None, message: str | None) -> None:
        await session.send_progress_notification(
            progress_token=token, progress=done, total=total, message=message, related_request_id=request_id
        )

    return send


_ENCODER = msgspec.json.Encoder()


def _tool_result(outcome: Outcome) -> ToolResult:
    """structuredContent is the body itself (the SDK serialises the response once); the text
    content, which the MCP spec asks for alongside, is one msgspec encoding of it."""
    text = _ENCODER.encode(outcome.body).decode("utf-8")
    content: list[Any] = [TextContent(type="text", text=text)]
    for attachment in outcome.attachments:
        if attachment.mime_type.startswith("image/"):
            content.append(
                ImageContent(
                    type="image", data=base64.b64encode(attachment.data).decode("ascii"), mime_type=attachment.mime_type
                )
            )
    meta: dict[str, Any] = {"kumitate": {"run_id": outcome.run_id, "trace_id": outcome.trace_id}}
    if outcome.warnings:
        meta["kumitate"]["warnings"] = list(outcome.warnings)
    if outcome.replayed:
        meta["kumitate"]["replayed"] = True
    return ToolResult(content=content, structured_content=outcome.body, is_error=not outcome.ok, meta=meta)


class SpecTool(Tool):
    """A tool whose schemas, annotations and description come from the spec."""

    runtime: Any = Field(default=None, exclude=True)
    binding: Any = Field(default=None, exclude=True)

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        key = None
        if IDEMPOTENCY_ARGUMENT in arguments:  # accepted on every tool; harmless on a read-only one
            arguments = dict(arguments)
            key = arguments.pop(IDEMPOTENCY_ARGUMENT)
            if not (isinstance(key, str) and 1 <= len(key) <= MAX_KEY_LENGTH):
                return _tool_result(await self._refuse_key())
        request = current_request(key)
        request.asker = asker()
        try:
            sender = _progress_sender()
            if sender is None:  # the common case: no relay task, no context manager
                return _tool_result(await self.runtime.pipeline.call_tool(self.binding, arguments, request))
            async with relaying(sender) as relay:
                request.progress = relay
                outcome = await self.runtime.pipeline.call_tool(self.binding, arguments, request)
        except InputRequired as question:  # 2026-07-28: the question is this round's result (mcp_elicit)
            calllog.log_event("input_required", service=self.binding.service, tool=self.binding.name)
            return question.result()
        return _tool_result(outcome)

    async def _refuse_key(self) -> Outcome:
        """A key that breaks the advertised schema is a BAD_REQUEST, after admission like any input error."""

        async def refuse() -> Any:
            raise ToolError(
                f"{IDEMPOTENCY_ARGUMENT} must be a string of 1 to {MAX_KEY_LENGTH} characters", code="BAD_REQUEST"
            )

        return await self.runtime.pipeline.call_tool(self.binding, None, current_request(None), read=refuse)


IDEMPOTENCY_ARGUMENT = "idempotency_key"


def mcp_input_schema(binding: ToolBinding) -> dict[str, Any]:
    """The spec's input schema, plus `idempotency_key` for tools that accept one (HTTP takes a header)."""
    if not binding.rules.idempotency:
        return binding.input_schema
    schema = dict(binding.input_schema)
    schema["properties"] = {
        **schema.get("properties", {}),
        IDEMPOTENCY_ARGUMENT: {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_KEY_LENGTH,
            "description": "Optional. Repeat a call with the same key to get the first result back instead of running it twice.",
        },
    }
    return schema


def tool_component(runtime: Runtime, binding: ToolBinding) -> SpecTool:
    annotations = ToolAnnotations(
        **{ANNOTATION_FIELDS[k]: v for k, v in binding.annotations.items() if k in ANNOTATION_FIELDS}
    )
    return SpecTool(
        name=binding.name,
        title=binding.annotations.get("title") or binding.summary,
        description=binding.description,
        parameters=mcp_input_schema(binding),
        output_schema=binding.output_schema,
        annotations=annotations,
        runtime=runtime,
        binding=binding,
    )


def _resource_reader(runtime: Runtime, binding: ResourceBinding) -> Any:
    async def read(**params: str) -> str | bytes:
        outcome = await runtime.pipeline.read_resource(binding, params, current_request())
        if not outcome.ok:
            raise CatalogueError(outcome)
        if isinstance(outcome.body, bytes):
            return outcome.body
        return json.dumps(outcome.body, ensure_ascii=False)

    read.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, annotation=str) for p in binding.params]
    )
    read.__annotations__ = {**{p: str for p in binding.params}, "return": str | bytes}
    read.__name__ = binding.name
    return read


class CatalogueError(MCPError):
    """A failed resource read on the wire: resources have no error result the way tools do, so
    the JSON-RPC error carries the catalogue's message and, as `data`, the same body HTTP sends."""

    def __init__(self, outcome: Outcome) -> None:
        code = INVALID_PARAMS if outcome.status < 500 else INTERNAL_ERROR
        super().__init__(code, str(outcome.body["error"]["message"]), data=outcome.body)


class _ExpectedErrorsOnly(logging.Filter):
    """fastmcp logs every failing resource read with its traceback. A CatalogueError was
    already logged by the pipeline, in one line without the URI: drop fastmcp's record."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], CatalogueError))


_QUIET = _ExpectedErrorsOnly()


class CatalogueErrors(Middleware):
    """Requests fastmcp answers on its own (an unknown tool or resource) get the catalogue's body too."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        try:
            return await call_next(context)
        except (NotFoundError, DisabledError):
            error = ToolError(f"no tool named {context.message.name!r} on this server", code="NOT_FOUND")
            return _tool_result(self.runtime.pipeline.refuse("unknown_tool", error, current_request()))

    async def on_read_resource(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        try:
            return await call_next(context)
        except (NotFoundError, DisabledError):
            error = ToolError("no resource with this URI on this server", code="NOT_FOUND")
            raise CatalogueError(self.runtime.pipeline.refuse("unknown_resource", error, current_request())) from None


def resource_template_component(runtime: Runtime, binding: ResourceBinding) -> ResourceTemplate:
    """A resource whose URI has parameters (chart://{chart_id})."""
    return ResourceTemplate.from_function(
        _resource_reader(runtime, binding),
        uri_template=binding.uri,
        name=binding.name,
        description=binding.description,
        mime_type=binding.mime_type,
    )


def resource_component(runtime: Runtime, binding: ResourceBinding) -> Resource:
    return Resource.from_function(
        _resource_reader(runtime, binding),
        uri=binding.uri,
        name=binding.name,
        description=binding.description,
        mime_type=binding.mime_type,
    )


def build_server(runtime: Runtime, services: list[str] | None = None, toolset: str | None = None) -> FastMCP:
    """One FastMCP server with the tools and resources of the given services (all by default), or
    of a named toolset: its tools, and the resources of the services they come from."""
    import importlib

    keys = runtime.toolsets[toolset] if toolset is not None else None
    names = sorted({k.partition(".")[0] for k in keys}) if keys is not None else services or list(runtime.services)
    instructions = "\n\n".join(
        f"[{n}] {runtime.services[n].instructions}".strip() for n in names if runtime.services[n].instructions
    )
    title = toolset or (names[0] if len(names) == 1 else "kumitate")
    # dereference_schemas=False: the spec's schemas keep their local $defs (codegen/shared.py), which
    # fastmcp would otherwise inline again, repeating a shared type at every use
    server = FastMCP(
        title,
        instructions=instructions or None,
        version=__version__,
        mask_error_details=True,
        dereference_schemas=False,
    )
    server.add_middleware(CatalogueErrors(runtime))
    logging.getLogger("fastmcp.server.server").addFilter(_QUIET)  # idempotent: one filter object
    for name in names:
        importlib.import_module(f"generated.{name}.mcp").register(server, runtime)
        if keys is not None:
            for tool in runtime.services[name].tools:
                if tool.key not in keys:
                    server.local_provider.remove_tool(tool.name)

    served = [t for n in names for t in runtime.services[n].tools if keys is None or t.key in keys]
    if any(t.task_timeout_s for t in served):  # long tools may run as tasks (kumitate.tasks)
        from kumitate.tasks.mcp import TasksExtension

        server.add_extension(TasksExtension(runtime))

    def versions() -> str:
        return json.dumps(runtime.versions(names), ensure_ascii=False)

    server.add_resource(
        Resource.from_function(
            versions,
            uri="kumitate://versions",
            name="versions",
            description="Server and policy version of each service.",
            mime_type="application/json",
        )
    )
    return server


def configure_sessions(app: Any, body_cap: int, max_sessions: int) -> None:
    """Give MCP over streamable HTTP the HTTP routes' request cap, and the session cap.

    The SDK's session manager refuses bodies over 4 MiB (a 100k-record summarize_stays call is
    ~13 MB) and admits 10,000 sessions (~40 KB each, per endpoint); fastmcp builds it in the
    app's lifespan without a way to pass either, so both are set here once the lifespan has
    started. The SDK enforces the body cap as the body streams in, and answers a new session
    past `max_sessions` with 503 (asgi.catalogue_errors puts it in the catalogue's envelope).
    Idle sessions are closed by the SDK after the `session_idle_timeout` given to `http_app`."""
    from mcp.server.transport_security import RequestBodyLimitMiddleware

    for route in getattr(app, "routes", []):
        manager = getattr(getattr(route, "endpoint", None), "session_manager", None)
        if manager is not None:
            manager.max_sessions = max_sessions
            manager.max_request_body_size = body_cap
            manager.asgi_app = RequestBodyLimitMiddleware(manager._handle_request, body_cap)
