"""The lean HTTP path: a plain JSON tool call answered in the outer ASGI layer, without Litestar.

`POST /v1/<service>/<tool>` with a JSON body (Content-Length within the tool's cap) and ordinary
headers is the common call. Litestar's routing, request object, handler signature and response
layers cost about as much as the kumitate pipeline itself (issue 32: 0.56x the bare route's rate),
so this path reads the body, hands it to the same `pipeline.call_tool` the Litestar route calls
(authentication, rate limit, idempotency, deadline and bulkhead all apply) and writes the same
status, headers and body bytes `kumitate.transports.http.to_response` gives Litestar.

It only takes what it answers exactly as the route would; anything else goes to Litestar as it
came, nothing read: another method or path, a query string, another content type, no
Content-Length or one over the cap, a Content-Encoding or Transfer-Encoding, `Prefer` (a task may be
asked for), a header sent twice. tests/e2e/test_http_lean.py compares both paths byte for byte.

Overload is shed here first: a call whose service has its KUMITATE_MAX_IN_FLIGHT calls running, or
that waited in the event loop past KUMITATE_ADMISSION_QUEUE_MS before it got here, is answered 503
at once (kumitate.serving.admission, without the pipeline's short wait), before its body is read, so a
refusal costs the loop as little as possible and the admitted calls keep their latency.
KUMITATE_HTTP_LEAN=0 turns the path off.
"""

from __future__ import annotations

import asyncio

from litestar.exceptions import InternalServerException
from litestar.exceptions.http_exceptions import RequestEntityTooLarge

from kumitate.bindings import ToolBinding
from kumitate.intake import JsonBody
from kumitate.pipeline import CallRequest, Outcome
from kumitate.runtime import Runtime
from kumitate.transports.disconnect import ClientGone, unless_disconnected
from kumitate.transports.edge.asgi import ARRIVED_KEY, HEADERS_KEY, IDS_KEY, Receive, Scope, Send
from kumitate.transports.edge.hosts import base_url_of
from kumitate.transports.http import CLIENT_CLOSED_REQUEST, encoded, http_error, json_arguments

JSON = "application/json"
PASSED_ON = ("content-encoding", "transfer-encoding", "prefer")
"""Headers whose request Litestar answers (a compressed or chunked body, a task asked for)."""
FLUSHED_ABOVE = 1 << 20
"""An answer larger than this is sent as its body and then an empty last part, which the server holds
back until its write buffer has drained (ASGI backpressure; uvicorn waits before it writes). Only then
does the call return and free its large objects: freeing a 7.9 MB result of 100k rows keeps the loop
busy for tens of milliseconds, during which it wrote none of the bytes still owed (the client then
waited 40-77 ms for the rest, in about half the calls). The bytes on the wire are the same."""


class LeanHTTP:
    """The outer ASGI layer's hook: `await lean(scope, receive, send)` is True when it answered."""

    def __init__(self, runtime: Runtime, body_cap: int) -> None:
        self.runtime = runtime
        self.pipeline = runtime.pipeline
        self.enabled = True
        self.routes: dict[str, tuple[ToolBinding, int]] = {
            tool.http_path: (tool, tool.policy.max_request_bytes or body_cap)
            for service in runtime.services.values()
            for tool in service.tools
            if tool.http_method == "POST"
            and JSON in tool.content_types
            and "{" not in tool.http_path
            and tool.http_shape.plain
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Answer the request when the lean path can (a plain POST to a tool's route); False leaves it to the
        full HTTP app."""
        if not self.enabled or scope["method"] != "POST" or scope.get("query_string"):
            return False
        route = self.routes.get(scope["path"])
        if route is None:
            return False
        binding, cap = route
        state = scope.get("state") or {}
        headers: dict[str, str] | None = state.get(HEADERS_KEY)
        if (
            headers is None
            or len(headers) != len(scope["headers"])
            or headers.get("content-type", "").partition(";")[0].strip().lower() != JSON
            or any(name in headers for name in PASSED_ON)
        ):
            return False
        length = headers.get("content-length", "")
        if not (length.isascii() and length.isdigit() and int(length) <= cap):
            return False
        request = CallRequest(
            transport="http",
            headers=headers,
            ids=state[IDS_KEY],
            client=scope["client"][0] if scope.get("client") else None,
            authorization=headers.get("authorization"),
            idempotency_key=headers.get("idempotency-key"),
            base_url=base_url_of(scope),
        )
        arrived = scope.get(ARRIVED_KEY)
        queued_s = asyncio.get_running_loop().time() - arrived if arrived is not None else 0.0
        outcome = self.pipeline.shed(binding, request, queued_s)
        if outcome is None:
            await self._call(binding, cap, request, receive, send)
        else:
            await _send_outcome(send, outcome)
        return True

    async def _call(self, binding: ToolBinding, cap: int, request: CallRequest, receive: Receive, send: Send) -> None:
        """Run the call and write its answer. The parsed arguments live in this frame until the answer is
        written: 100k parsed records take the loop milliseconds to free, which must not delay the bytes owed."""
        body_read = asyncio.Event()
        parsed: JsonBody | None = None

        async def read() -> JsonBody:
            nonlocal parsed
            try:
                parsed = json_arguments(await self._body(receive, cap))
                return parsed
            finally:
                body_read.set()

        call = self.pipeline.call_tool(binding, None, request, read=read)
        try:
            outcome = await unless_disconnected(receive, body_read, call)
        except ClientGone:  # nobody reads the answer
            outcome = Outcome(True, CLIENT_CLOSED_REQUEST, "CLIENT_CLOSED", b"", *request.ids or ("", ""))
        await _send_outcome(send, outcome)

    async def _body(self, receive: Receive, cap: int) -> bytearray:
        """The body, as Litestar's `Request.stream` reads it (the same refusals, as the same errors)."""
        buffer = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.request":
                buffer += message.get("body", b"")
                if len(buffer) > cap:
                    raise http_error(self.runtime, RequestEntityTooLarge())
                if not message.get("more_body", False):
                    return buffer
            elif message["type"] == "http.disconnect":
                raise http_error(self.runtime, InternalServerException("client disconnected prematurely"))


async def _send_outcome(send: Send, outcome: Outcome) -> None:
    """The response Litestar sends for `to_response(outcome)`: its headers lower-cased in order,
    then content-type (with a charset for text) and content-length, unless the outcome set them."""
    body, media_type = encoded(outcome)
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in outcome.headers.items()]
    names = {k for k, _ in headers}
    if b"content-type" not in names:
        content_type = f"{media_type}; charset=utf-8" if media_type.startswith("text/") else media_type
        headers.append((b"content-type", content_type.encode("latin-1")))
    if b"content-length" not in names:
        headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": outcome.status, "headers": headers})
    if len(body) <= FLUSHED_ABOVE:
        await send({"type": "http.response.body", "body": body})
        return
    await send({"type": "http.response.body", "body": body, "more_body": True})
    await send({"type": "http.response.body", "body": b""})
