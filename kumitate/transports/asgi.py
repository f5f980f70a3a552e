"""The outermost ASGI layer: correlation headers on every response, and MCP dispatch.

It runs before Litestar's router, so even a routing 404/405 and every /mcp
response carry X-Run-Id, X-Trace-Id and X-Request-Duration-Ms. Paths under /mcp
go to the MCP apps (all tools at /mcp, one service's at /mcp/<service>).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from contextvars import ContextVar
from typing import Any

from starlette.datastructures import MutableHeaders

from kumitate import correlation

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]

IDS_KEY = "kumitate_ids"
MCP_PREFIX = "/mcp"

SERVED_OVER_NETWORK: ContextVar[bool] = ContextVar("kumitate_mcp_over_network", default=False)
"""True for MCP served through this ASGI layer. MCP session tasks start inside a request and
inherit it, so a tool call that reached the server over the network is never mistaken for a
stdio (local principal) call, even if the SDK did not attach the HTTP request to it."""


class KumitateASGI:
    def __init__(self, app: ASGIApp, mcp_all: ASGIApp | None, mcp_services: Mapping[str, ASGIApp]) -> None:
        self.app = app
        self.mcp_all = mcp_all
        self.mcp_services = mcp_services

    def _mcp_target(self, path: str) -> tuple[ASGIApp, str] | None:
        if self.mcp_all is None or not (path == MCP_PREFIX or path.startswith(MCP_PREFIX + "/")):
            return None
        rest = path[len(MCP_PREFIX) :].strip("/")
        if not rest:
            return self.mcp_all, "/"
        head, _, tail = rest.partition("/")
        if head in self.mcp_services:
            return self.mcp_services[head], "/" + tail
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        run_id, trace_id = correlation.from_headers(headers)
        scope.setdefault("state", {})[IDS_KEY] = (run_id, trace_id)
        started = time.perf_counter()

        async def send_with_ids(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                out["X-Run-Id"] = run_id
                out["X-Trace-Id"] = trace_id
                out["X-Request-Duration-Ms"] = f"{(time.perf_counter() - started) * 1000:.2f}"
            await send(message)

        target = self._mcp_target(scope["path"])
        if target is not None:
            app, path = target
            token = SERVED_OVER_NETWORK.set(True)
            try:
                await app({**scope, "path": path, "raw_path": path.encode()}, receive, send_with_ids)
            finally:
                SERVED_OVER_NETWORK.reset(token)
            return
        await self.app(scope, receive, send_with_ids)
