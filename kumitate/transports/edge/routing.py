"""Where a request goes once the edge lets it in: paths under /mcp to the MCP apps (all tools at /mcp,
one service's at /mcp/<service>, a named toolset's at /mcp/<toolset>), after the MCP gate (OAuth scopes,
kumitate.transports.oauth); then the lean HTTP path (kumitate.transports.http.lean); then Litestar.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar

from kumitate.transports.edge.asgi import ASGIApp, Receive, Scope, Send, respond
from kumitate.transports.edge.errors import CatalogueErrors, EdgeErrors, Refusal

Gate = Callable[[Scope, Receive], Awaitable[tuple[Refusal | None, Receive]]]
"""An MCP request's admission before the MCP app sees it: None or (status, headers, JSON body),
and the `receive` to go on with (a gate that read the body hands it on through it)."""
Lean = Callable[[Scope, Receive, Send], Awaitable[bool]]
"""A path in front of Litestar (kumitate.transports.http.lean): True when it answered the request."""
MCP_PREFIX = "/mcp"

SERVED_OVER_NETWORK: ContextVar[bool] = ContextVar("kumitate_mcp_over_network", default=False)
"""True for MCP served through this ASGI layer. MCP session tasks start inside a request and
inherit it, so a tool call that reached the server over the network is never mistaken for a
stdio (local principal) call, even if the SDK did not attach the HTTP request to it."""


class McpRouting:
    """ASGI middleware: /mcp and /mcp/<name> to their MCP app, each behind `CatalogueErrors`."""

    def __init__(
        self,
        app: ASGIApp,
        mcp_all: ASGIApp,
        mcp_services: Mapping[str, ASGIApp],
        gate: Gate | None,
        errors: EdgeErrors,
    ) -> None:
        self.app = app
        self.gate = gate
        self._all = CatalogueErrors(mcp_all, errors)
        self._services = {name: CatalogueErrors(mcp, errors) for name, mcp in mcp_services.items()}

    def _target(self, path: str) -> tuple[ASGIApp, str] | None:
        if not (path == MCP_PREFIX or path.startswith(MCP_PREFIX + "/")):
            return None
        rest = path[len(MCP_PREFIX) :].strip("/")
        if not rest:
            return self._all, "/"
        head, _, tail = rest.partition("/")
        if head in self._services:
            return self._services[head], "/" + tail
        return None

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """Serve a path the MCP endpoints own with its app; pass anything else on."""
        target = self._target(scope["path"]) if scope["type"] == "http" else None
        if target is None:
            return self.app(scope, receive, send)
        return self._serve(target, scope, receive, send)

    async def _serve(self, target: tuple[ASGIApp, str], scope: Scope, receive: Receive, send: Send) -> None:
        app, path = target
        refusal = None
        if self.gate is not None and scope["method"] != "OPTIONS":
            refusal, receive = await self.gate(scope, receive)
        if refusal is not None:
            await respond(send, *refusal)
            return
        token = SERVED_OVER_NETWORK.set(True)
        try:
            await app({**scope, "path": path, "raw_path": path.encode()}, receive, send)
        finally:
            SERVED_OVER_NETWORK.reset(token)


class LeanPaths:
    """ASGI middleware: the lean HTTP path answers what it takes, the rest goes on to Litestar."""

    def __init__(self, app: ASGIApp, lean: Lean) -> None:
        self.app = app
        self.lean = lean

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a request the lean path answers itself; pass anything else on."""
        if scope["type"] == "http" and await self.lean(scope, receive, send):
            return
        await self.app(scope, receive, send)
