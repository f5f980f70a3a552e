"""`resources/subscribe` and `resources/unsubscribe` (protocol versions up to 2025-11-25): a client
subscribed to a resource this server serves gets `notifications/resources/updated` whenever a
handler says it changed (`CallContext.changed`, heard through the pipeline's ResourceChanges).

Only where the transport keeps a session per client (stdio, streamable HTTP unless stateless): a
stateless server has nobody to notify between requests, so it neither serves the methods nor
declares `resources.subscribe` (the SDK declares it exactly when the method is served). 2026-07-28
clients subscribe through `subscriptions/listen` instead, which kumitate does not serve yet.
Subscriptions live in this process: a session is dropped once a notification to it fails, and a
resource keeps at most KUMITATE_MCP_MAX_SESSIONS subscribers (the oldest, likely a session gone
without unsubscribing, makes room), so sessions that end silently cannot pile up.
URIs are compared percent-decoded: a client that expands a template as RFC 6570 does
(`yana://brands/%E7%8D%BA%E7%A5%AD`) and one that writes the value as it is hear the same change, each
under the URI it subscribed with.
"""

from __future__ import annotations

import asyncio
from urllib.parse import unquote

import mcp_types as mt
from fastmcp import FastMCP
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from kumitate.compat.fastmcp import serve_request
from kumitate.observability import calllog
from kumitate.runtime import Runtime


class Subscriptions:
    """Who is subscribed to which URI on one server, and the notifications they get."""

    def __init__(self, server: FastMCP, most: int) -> None:
        self.server = server
        self.most = most
        self.sessions: dict[str, list[tuple[ServerSession, str]]] = {}
        """decoded URI -> (session, the URI as that session subscribed to it)"""
        self.loop: asyncio.AbstractEventLoop | None = None

    async def subscribe(self, ctx: ServerRequestContext, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
        """Subscribe the session to a resource this server serves, else INVALID_PARAMS."""
        uri = str(params.uri)
        if not await self._serves(uri):
            raise MCPError(INVALID_PARAMS, "no resource with this URI on this server", data={"uri": uri})
        self.loop = asyncio.get_running_loop()
        subscribed = self.sessions.setdefault(unquote(uri), [])
        if not any(_same_client(s, ctx.session) for s, _ in subscribed):
            subscribed.append((ctx.session, uri))
            del subscribed[: -self.most]
        return mt.EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext, params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
        """Stop telling the session about the resource's changes."""
        self._drop(str(params.uri), ctx.session)
        return mt.EmptyResult()

    def _drop(self, uri: str, session: ServerSession) -> None:
        key = unquote(uri)
        left = [(s, u) for s, u in self.sessions.get(key, []) if not _same_client(s, session)]
        if left:
            self.sessions[key] = left
        else:
            self.sessions.pop(key, None)

    async def _serves(self, uri: str) -> bool:
        if await self.server.get_resource(uri) is not None:
            return True
        return any(t.matches(uri) is not None for t in await self.server.list_resource_templates(run_middleware=False))

    def changed(self, uri: str) -> None:
        """A resource changed (from any thread): notify its subscribers on the event loop."""
        key = unquote(uri)
        if self.loop is not None and self.sessions.get(key):
            self.loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._notify(key)))

    async def _notify(self, key: str) -> None:
        for session, uri in list(self.sessions.get(key, [])):
            try:
                await session.send_resource_updated(uri)
            except Exception as exc:  # the session is gone: forget it
                calllog.log_event("subscription_dropped", error_type=type(exc).__name__)
                self._drop(uri, session)


def _same_client(one: ServerSession, other: ServerSession) -> bool:
    """Whether two requests' sessions are one client's connection. The SDK builds a session object
    per request; the connection's `client_params` (its initialize request) is one object for its life."""
    return one is other or (one.client_params is not None and one.client_params is other.client_params)


def serve_subscriptions(server: FastMCP, runtime: Runtime) -> None:
    """Serve resources/subscribe and resources/unsubscribe on `server` (see the module docstring)."""
    subscriptions = Subscriptions(server, runtime.settings.mcp_max_sessions)
    serve_request(server, "resources/subscribe", mt.SubscribeRequestParams, subscriptions.subscribe)
    serve_request(server, "resources/unsubscribe", mt.UnsubscribeRequestParams, subscriptions.unsubscribe)
    runtime.pipeline.changes.listen(subscriptions.changed)
