"""The outermost ASGI layer: Host/Origin checks, correlation headers on every response, MCP dispatch.

It runs before Litestar's router, so even a routing 404/405 and every /mcp
response carry X-Run-Id, X-Trace-Id and X-Request-Duration-Ms, and a request from
a foreign site (DNS rebinding, cross-site writes) is refused before any body is
read. Paths under /mcp go to the MCP apps (all tools at /mcp, one service's at
/mcp/<service>, a named toolset's at /mcp/<toolset>). CORS headers are sent only to origins the operator configured.

It also holds the limits that need a request: at most KUMITATE_HTTP_MAX_HEADERS header fields
and KUMITATE_HTTP_MAX_HEADER_BYTES of them (431; protocol.py refuses a header block that is still
incomplete past that size, this layer one that arrived whole in a single read; both close the connection, as after every refusal here), a request body that arrives whole within KUMITATE_HTTP_BODY_TIMEOUT_S of the first read
(else 408 and the connection closed), and every error body in the catalogue's envelope: what the
MCP SDK or Starlette answer in plain text on /mcp (400, 404, 413), the SDK's 503 at the session
cap, and an exception no handler turned into a response (500, which uvicorn would send as text).
JSON-RPC errors of the MCP protocol itself (a parse error, an unknown session) stay JSON-RPC.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import msgspec
from starlette.datastructures import MutableHeaders
from starlette.middleware.cors import CORSMiddleware

from kumitate import calllog, correlation
from kumitate.errors import STATUS_CODES, ErrorCode, ToolError
from kumitate.transports.edge.hosts import OriginPolicy

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]
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
ARRIVED_KEY = "kumitate_arrived"
"""The loop's time when the request's headers were complete, in the scope (set by transports/protocol.py)."""
HEADERS_KEY = "kumitate_headers"
"""The request's headers as a dict of lower-cased names (the last of a repeated one), in scope["state"]."""
Lean = Callable[[Scope, Receive, Send], Awaitable[bool]]
"""A path in front of Litestar (kumitate.transports.http.lean): True when it answered the request."""
MCP_PREFIX = "/mcp"
RETRY_AFTER_MS = 1000
"""Retry-After of a 503 the MCP SDK gives at its session cap (a session ends or idles out soon)."""
MAX_REWRITTEN_BODY = 65536


def code_for_status(status: int) -> ErrorCode:
    """The code of an answer a library gave on its own: a status not in STATUS_CODES is INTERNAL (5xx) or
    BAD_REQUEST."""
    return STATUS_CODES.get(status, "INTERNAL" if status >= 500 else "BAD_REQUEST")


@functools.cache
def _error_map() -> Any:
    from kumitate.project import load_generated
    from kumitate.steps.errors import ErrorMap

    return ErrorMap(load_generated()[0])


def error_reply(
    code: ErrorCode, message: str, ids: tuple[str, str] | None = None, details: dict[str, Any] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, catalogue envelope) of an answer given outside any route (fresh ids unless given)."""
    run_id, trace_id = ids or (correlation.new_id(), correlation.new_id())
    outcome = _error_map().outcome(ToolError(message, code=code, details=details), run_id, trace_id)
    return outcome.status, dict(outcome.headers), msgspec.json.encode(outcome.body)


@dataclass(frozen=True, slots=True)
class RequestLimits:
    max_headers: int = 100
    max_header_bytes: int = 32768
    body_timeout_s: float = 60.0


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
        gate: Gate | None = None,
        limits: RequestLimits | None = None,
        lean: Lean | None = None,
        draining: threading.Event | None = None,
    ) -> None:
        self.app = app
        self.lean = lean
        self.draining = draining
        self.gate = gate
        self.mcp_all = mcp_all
        self.mcp_services = mcp_services
        self.origins = origins
        self.limits = limits or RequestLimits()
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
        state = scope.setdefault("state", {})
        state[IDS_KEY] = (run_id, trace_id)
        state[HEADERS_KEY] = headers
        started = time.perf_counter()
        ids = (run_id, trace_id)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            code, message = refusal
            calllog.log_event("request_refused", code=code, run_id=run_id, trace_id=trace_id)
            await self._refuse(scope, send, code, message, ids, started)
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
                if self.draining is not None and self.draining.is_set():
                    out["Connection"] = "close"  # a balancer stops reusing the connection before the port closes
            await send(message)

        exchange = Exchange(receive, send_with_ids, self.limits.body_timeout_s, ids)
        try:
            await self._inner(scope, exchange.receive, exchange.send)
        except Exception as exc:
            if exchange.started:
                raise  # uvicorn closes the connection: the response is cut short, as it must be
            calllog.log_crash("request_crashed", exc, run_id=run_id, method=scope.get("method"))
        else:
            if exchange.started or exchange.answered:
                return
            calllog.log_event("request_unanswered", code="INTERNAL", run_id=run_id)
        await _respond(exchange.send, *error_reply("INTERNAL", f"internal error; quote run_id {run_id}", ids))

    def _refusal(self, scope: Scope, headers: Mapping[str, str]) -> tuple[ErrorCode, str] | None:
        """(code, message) when the request is refused before routing, else None."""
        fields = scope.get("headers", [])
        if len(fields) > self.limits.max_headers:
            return "HEADERS_TOO_LARGE", f"the request has more than {self.limits.max_headers} header fields"
        size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        if size + sum(len(k) + len(v) + 4 for k, v in fields) > self.limits.max_header_bytes:
            return (
                "HEADERS_TOO_LARGE",
                f"the request line and headers are larger than {self.limits.max_header_bytes} bytes",
            )
        if "host" not in headers and scope.get("http_version") == "1.1":
            return "BAD_REQUEST", "an HTTP/1.1 request must carry a Host header"
        reason = self.origins.refusal(scope, headers) if self.origins is not None else None
        return ("ORIGIN_NOT_ALLOWED", reason) if reason is not None else None

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
            ids = (scope.get("state") or {}).get(IDS_KEY)
            try:
                await app({**scope, "path": path, "raw_path": path.encode()}, receive, catalogue_errors(send, ids))
            finally:
                SERVED_OVER_NETWORK.reset(token)
            return
        if self.lean is not None and await self.lean(scope, receive, send):
            return
        await self.app(scope, receive, send)

    async def _refuse(
        self, scope: Scope, send: Send, code: ErrorCode, message: str, ids: tuple[str, str], started: float
    ) -> None:
        """The catalogue body, sent before the request body is read; the connection is closed after it."""
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        status, headers, body = error_reply(code, message, ids)
        headers |= {
            "x-run-id": ids[0],
            "x-trace-id": ids[1],
            "x-request-duration-ms": f"{(time.perf_counter() - started) * 1000:.2f}",
        }
        # Closed after the answer (uvicorn's httptools and h11 protocols both close a connection whose
        # response says `Connection: close`), as protocol.py closes a header block still arriving: a client
        # refused here (oversized headers, no Host, a foreign origin) is not kept on, and the body it may
        # still send is not parsed on the way to a next request.
        headers["connection"] = "close"
        await _respond(send, status, headers, body)


class Exchange:
    """One HTTP request's `receive` and `send` as the app sees them.

    The body must arrive whole within `body_timeout_s` of the app's first read (a body the
    server already holds is handed on at once, however late it is asked for): past that the
    client is answered 408 with `Connection: close`, the app reads a disconnect, and whatever
    it sends after is dropped. Reads after the last body chunk (an SSE stream waiting for the
    client to leave) are not bounded.
    """

    def __init__(self, receive: Receive, send: Send, body_timeout_s: float, ids: tuple[str, str]) -> None:
        self._receive = receive
        self._send = send
        self._timeout_s = body_timeout_s
        self._ids = ids
        self._deadline: float | None = None
        self._body_done = False
        self.started = False
        self.answered = False

    async def receive(self) -> Message:
        if self.answered:
            return {"type": "http.disconnect"}
        if self._body_done:
            return await self._receive()
        loop = asyncio.get_running_loop()
        if self._deadline is None:
            self._deadline = loop.time() + self._timeout_s
        try:
            async with asyncio.timeout_at(self._deadline):
                message = await self._receive()
        except TimeoutError:
            await self._timed_out()
            return {"type": "http.disconnect"}
        if message["type"] != "http.request" or not message.get("more_body", False):
            self._body_done = True
        return message

    async def send(self, message: Message) -> None:
        if self.answered:
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)

    async def _timed_out(self) -> None:
        calllog.log_event("http_body_timed_out", code="REQUEST_TIMEOUT", run_id=self._ids[0])
        if not self.started:
            status, headers, body = error_reply(
                "REQUEST_TIMEOUT", f"the request body did not arrive within {self._timeout_s:g} s", self._ids
            )
            await _respond(self.send, status, headers | {"connection": "close"}, body)
        self.answered = True


def catalogue_errors(send: Send, ids: tuple[str, str] | None) -> Send:
    """`send` for an MCP app: an error it answers outside JSON-RPC (Starlette's and the SDK's plain-text
    400/404/413) or at its session cap (503) leaves in the catalogue's envelope instead."""
    held: Message | None = None
    chunks: list[bytes] = []

    async def wrapped(message: Message) -> None:
        nonlocal held
        if held is None:
            if message["type"] == "http.response.start" and _rewritten(message):
                held = message
                return
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body", False) and sum(map(len, chunks)) <= MAX_REWRITTEN_BODY:
            return
        status = held["status"]
        text = _message_of(b"".join(chunks)) or f"HTTP {status}"
        details = {"retry_after_ms": RETRY_AFTER_MS} if status == 503 else None
        reply = error_reply(code_for_status(status), text, ids, details)
        await _respond(send, status, _passed_on(held) | reply[1], reply[2])

    return wrapped


def _rewritten(start: Message) -> bool:
    status = int(start["status"])
    if status < 400:
        return False
    media = next((v for k, v in start.get("headers", []) if k.lower() == b"content-type"), b"")
    return status == 503 or not media.startswith(b"application/json")


def _message_of(body: bytes) -> str:
    """The words of a plain-text or JSON-RPC error body (at most 200 characters)."""
    try:
        decoded = msgspec.json.decode(body)
        if isinstance(decoded, dict) and isinstance(decoded.get("error"), dict):
            return str(decoded["error"].get("message", ""))[:200]
    except msgspec.DecodeError:
        pass
    return body.decode("utf-8", "replace").strip()[:200]


def _passed_on(start: Message) -> dict[str, str]:
    """The headers of a rewritten error worth keeping (ids, Allow, the session id), not its length or type."""
    keep = {"allow", "mcp-session-id", "www-authenticate"}
    return {
        k.decode("latin-1"): v.decode("latin-1")
        for k, v in start.get("headers", [])
        if k.lower().decode("latin-1") in keep or k.lower().startswith(b"x-")
    }


async def _respond(send: Send, status: int, headers: Mapping[str, str], body: bytes) -> None:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    raw += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
