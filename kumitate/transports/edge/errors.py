"""Every answer the edge gives itself, in the catalogue's envelope: refusals, the crash fallback, and the
MCP SDK's own error pages rewritten.

- `EdgeErrors`: the envelope of a code outside any route, from the project's catalogue, given to each
  layer that answers (no module-level cache: the app passes the pipeline's `ErrorMap` in);
- `refuse`: a request turned away before routing (and before its body is read), connection closed;
- `CrashFallback`: an exception no handler turned into a response, or an app that answered nothing,
  is a 500 envelope (uvicorn would send plain text), unless the response had already started;
- `CatalogueErrors`: what the MCP SDK or Starlette answer in plain text on /mcp (400, 404, 413) and the
  SDK's 503 at its session cap leave in the envelope instead. JSON-RPC errors of the MCP protocol itself
  (a parse error, an unknown session) stay JSON-RPC.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import msgspec

from kumitate.errors import STATUS_CODES, ErrorCode, ToolError
from kumitate.observability import calllog, correlation
from kumitate.project import load_generated
from kumitate.steps.errors import ErrorMap
from kumitate.transports.edge.asgi import IDS_KEY, ASGIApp, Message, Receive, Scope, Send, ids_of, respond

Refusal = tuple[int, dict[str, str], bytes]
"""An answer given outside any route: (status, headers, JSON body)."""
RETRY_AFTER_MS = 1000
"""Retry-After of a 503 the MCP SDK gives at its session cap (a session ends or idles out soon)."""
MAX_REWRITTEN_BODY = 65536


def code_for_status(status: int) -> ErrorCode:
    """The code of an answer a library gave on its own: a status not in STATUS_CODES is INTERNAL (5xx) or
    BAD_REQUEST."""
    return STATUS_CODES.get(status, "INTERNAL" if status >= 500 else "BAD_REQUEST")


class EdgeErrors:
    """The catalogue's envelope for answers given outside any route (and so outside the pipeline)."""

    def __init__(self, errors: ErrorMap) -> None:
        self.errors = errors

    @classmethod
    def of_project(cls) -> EdgeErrors:
        """From the active project's catalogue, read now (for a layer built without a runtime: the
        uvicorn protocol, a test's bare edge)."""
        return cls(ErrorMap(load_generated()[0]))

    def reply(
        self, code: ErrorCode, message: str, ids: tuple[str, str] | None = None, details: dict[str, Any] | None = None
    ) -> Refusal:
        """(status, headers, catalogue envelope) of `code` (fresh ids unless given)."""
        run_id, trace_id = ids or (correlation.new_id(), correlation.new_id())
        outcome = self.errors.outcome(ToolError(message, code=code, details=details), run_id, trace_id)
        return outcome.status, dict(outcome.headers), msgspec.json.encode(outcome.body)


async def refuse(scope: Scope, send: Send, errors: EdgeErrors, code: ErrorCode, message: str) -> None:
    """The catalogue body, sent before the request body is read; the connection is closed after it."""
    ids = ids_of(scope)
    calllog.log_event("request_refused", code=code, run_id=ids[0], trace_id=ids[1])
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    status, headers, body = errors.reply(code, message, ids)
    # Closed after the answer (uvicorn's httptools and h11 protocols both close a connection whose
    # response says `Connection: close`), as protocol.py closes a header block still arriving: a client
    # refused here (oversized headers, no Host, a foreign origin) is not kept on, and the body it may
    # still send is not parsed on the way to a next request.
    headers["connection"] = "close"
    await respond(send, status, headers, body)


class CrashFallback:
    """ASGI middleware: a 500 envelope when the app raised or answered nothing before its response started.

    Once the response has started, an exception goes on to uvicorn, which closes the connection: the
    response is cut short, as it must be."""

    def __init__(self, app: ASGIApp, errors: EdgeErrors) -> None:
        self.app = app
        self.errors = errors

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app; a crash before the answer has started, or an app that never answers, gets the
        catalogue's INTERNAL error; a crash after it goes on to the server (a half-sent answer cannot be
        mended)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        ids = ids_of(scope)
        try:
            await self.app(scope, receive, watched)
        except Exception as exc:
            if started:
                raise
            calllog.log_crash("request_crashed", exc, run_id=ids[0], method=scope.get("method"))
        else:
            if started:
                return
            calllog.log_event("request_unanswered", code="INTERNAL", run_id=ids[0])
        await respond(send, *self.errors.reply("INTERNAL", f"internal error; quote run_id {ids[0]}", ids))


class CatalogueErrors:
    """ASGI middleware in front of one MCP app: its plain-text errors (and every 503) in the envelope."""

    def __init__(self, app: ASGIApp, errors: EdgeErrors) -> None:
        self.app = app
        self.errors = errors

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """Run the app with its error answers rewritten into the catalogue's shape."""
        return self.app(scope, receive, self._rewriting(send, (scope.get("state") or {}).get(IDS_KEY)))

    def _rewriting(self, send: Send, ids: tuple[str, str] | None) -> Send:
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
            reply = self.errors.reply(code_for_status(status), text, ids, details)
            await respond(send, status, _passed_on(held) | reply[1], reply[2])

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
