"""The outermost ASGI layer: Host/Origin checks, correlation headers on every response, MCP dispatch.

It runs before Litestar's router, so even a routing 404/405 and every /mcp
response carry X-Run-Id, X-Trace-Id and X-Request-Duration-Ms, and a request from
a foreign site (DNS rebinding, cross-site writes) is refused before any body is
read. Paths under /mcp go to the MCP apps (all tools at /mcp, one service's at
/mcp/<service>, a named toolset's at /mcp/<toolset>). CORS headers are sent only to origins the operator configured.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from contextvars import ContextVar
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.middleware.cors import CORSMiddleware

from kumitate import calllog, correlation
from kumitate.transports.origin import OriginPolicy

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]
Refuse = Callable[[str, tuple[str, str]], tuple[int, bytes]]
"""(message, (run_id, trace_id)) -> (status, JSON body) of the catalogue's ORIGIN_NOT_ALLOWED."""
Refusal = tuple[int, dict[str, str], bytes]
Gate = Callable[[Scope, Receive], Awaitable[tuple[Refusal | None, Receive]]]
"""An MCP request's admission before the MCP app sees it: None or (status, headers, JSON body),
and the `receive` to go on with (a gate that read the body hands it on through it)."""
EXPOSED_HEADERS = (
    "X-Run-Id",
    "X-Trace-Id",
    "X-Request-Duration-Ms",
    "Retry-After",
    "Idempotent-Replayed",
    "Deprecation",
    "Sunset",
    "Mcp-Session-Id",
    "WWW-Authenticate",
)

IDS_KEY = "kumitate_ids"
MCP_PREFIX = "/mcp"

SERVED_OVER_NETWORK: ContextVar[bool] = ContextVar("kumitate_mcp_over_network", default=False)
"""True for MCP served through this ASGI layer. MCP session tasks start inside a request and
inherit it, so a tool call that reached the server over the network is never mistaken for a
stdio (local principal) call, even if the SDK did not attach the HTTP request to it."""


class KumitateASGI:
    def __init__(
        self,
        app: ASGIApp,
        mcp_all: ASGIApp | None,
        mcp_services: Mapping[str, ASGIApp],
        origins: OriginPolicy | None = None,
        refuse: Refuse | None = None,
        gate: Gate | None = None,
    ) -> None:
        self.app = app
        self.gate = gate
        self.mcp_all = mcp_all
        self.mcp_services = mcp_services
        self.origins = origins
        self.refuse = refuse
        self._inner: ASGIApp = self._dispatch
        if origins is not None and origins.cors_origins:
            self._inner = CORSMiddleware(
                self._dispatch,
                allow_origins=origins.cors_origins,
                allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
                allow_headers=["*"],
                expose_headers=list(EXPOSED_HEADERS),
            )

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
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        run_id, trace_id = correlation.from_headers(headers)
        replaced = correlation.run_id_replaced(headers)
        scope.setdefault("state", {})[IDS_KEY] = (run_id, trace_id)
        started = time.perf_counter()
        reason = self.origins.refusal(scope, headers) if self.origins is not None else None
        if reason is not None:
            calllog.log_event("request_refused", code="ORIGIN_NOT_ALLOWED", run_id=run_id, trace_id=trace_id)
            await self._refuse(scope, send, reason, (run_id, trace_id), started)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return

        async def send_with_ids(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                out["X-Run-Id"] = run_id
                out["X-Trace-Id"] = trace_id
                if replaced:
                    out[correlation.RUN_ID_REPLACED_HEADER] = "invalid"
                out["X-Request-Duration-Ms"] = f"{(time.perf_counter() - started) * 1000:.2f}"
            await send(message)

        await self._inner(scope, receive, send_with_ids)

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = self._mcp_target(scope["path"])
        if target is not None:
            app, path = target
            refusal = None
            if self.gate is not None and scope["method"] != "OPTIONS":
                refusal, receive = await self.gate(scope, receive)
            if refusal is not None:
                await _respond(send, *refusal)
                return
            token = SERVED_OVER_NETWORK.set(True)
            try:
                await app({**scope, "path": path, "raw_path": path.encode()}, receive, send)
            finally:
                SERVED_OVER_NETWORK.reset(token)
            return
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, send: Send, reason: str, ids: tuple[str, str], started: float) -> None:
        """403 with the catalogue body, sent before the request body is read."""
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        status, body = self.refuse(reason, ids) if self.refuse is not None else (403, b"")
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"x-run-id", ids[0].encode()),
                    (b"x-trace-id", ids[1].encode()),
                    (b"x-request-duration-ms", f"{(time.perf_counter() - started) * 1000:.2f}".encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def _respond(send: Send, status: int, headers: Mapping[str, str], body: bytes) -> None:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    raw += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
