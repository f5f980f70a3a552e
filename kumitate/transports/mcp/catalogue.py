"""Requests fastmcp refuses on its own (an unknown tool or resource) answered the catalogue's way.

MCP lists an unknown tool among the protocol errors (−32602, invalid params), not the tool
results, as it does an unknown resource: both become a `CatalogueError` (JSON-RPC −32602 whose
`data` is the catalogue body plus the `name` or `uri` asked for), and the pipeline logs them
like any refused call.
"""

from __future__ import annotations

import logging

import mcp_types as mt
from fastmcp.exceptions import DisabledError, NotFoundError
from fastmcp.resources import ResourceResult
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import ToolResult

from kumitate.errors import ToolError
from kumitate.runtime import Runtime
from kumitate.transports.mcp.request import current_request
from kumitate.transports.mcp.results import CatalogueError


class CatalogueErrors(Middleware):
    """Unknown tools and resources as −32602 with the catalogue's NOT_FOUND body."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        """Call the tool; an unknown or disabled tool becomes the catalogue's NOT_FOUND."""
        try:
            return await call_next(context)
        except (NotFoundError, DisabledError):
            name = context.message.name
            error = ToolError(f"no tool named {name!r} on this server", code="NOT_FOUND")
            refused = self.runtime.pipeline.refuse("unknown_tool", error, current_request())
            raise CatalogueError(refused, name=name) from None

    async def on_read_resource(
        self,
        context: MiddlewareContext[mt.ReadResourceRequestParams],
        call_next: CallNext[mt.ReadResourceRequestParams, ResourceResult],
    ) -> ResourceResult:
        """Read the resource; an unknown or disabled URI becomes the catalogue's NOT_FOUND."""
        try:
            return await call_next(context)
        except (NotFoundError, DisabledError):
            error = ToolError("no resource with this URI on this server", code="NOT_FOUND")
            refused = self.runtime.pipeline.refuse("unknown_resource", error, current_request())
            raise CatalogueError(refused, uri=str(context.message.uri)) from None


class _ExpectedErrorsOnly(logging.Filter):
    """fastmcp logs every failing resource read with its traceback. A CatalogueError was
    already logged by the pipeline, in one line without the URI: drop fastmcp's record."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], CatalogueError))


QUIET = _ExpectedErrorsOnly()
"""One filter object: adding it to a logger again is a no-op."""
