"""The HTTP edge of an MCP endpoint: what arrives before the MCP SDK reads a request.

The 2026-07-28 routing headers (`Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`) must equal
the body's values; a header value's surrounding whitespace is not part of it (RFC 9110 5.5),
but the SDK compares the raw value and answers −32020 to `Mcp-Name: "  drop_materialized  "`.
`TrimRoutingHeaders` strips it, for every server behind it (passed to fastmcp's public
`http_app(middleware=...)`).
"""

from __future__ import annotations

from starlette.middleware import Middleware as StarletteMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

ROUTING_HEADERS = frozenset({b"mcp-method", b"mcp-name", b"mcp-protocol-version"})


class TrimRoutingHeaders:
    """ASGI middleware: the MCP routing headers without surrounding spaces and tabs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Strip blanks around the routing headers' values before the MCP app reads them."""
        if scope["type"] == "http" and any(k in ROUTING_HEADERS and v != v.strip(b" \t") for k, v in scope["headers"]):
            headers = [(k, v.strip(b" \t") if k in ROUTING_HEADERS else v) for k, v in scope["headers"]]
            scope = {**scope, "headers": headers}
        await self.app(scope, receive, send)


HTTP_MIDDLEWARE = [StarletteMiddleware(TrimRoutingHeaders)]
"""What `FastMCP.http_app(middleware=...)` gets for every kumitate MCP endpoint."""
