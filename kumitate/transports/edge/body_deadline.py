"""A request body arrives whole within KUMITATE_HTTP_BODY_TIMEOUT_S of the app's first read, else 408
REQUEST_TIMEOUT and the connection closed.

A body the server already holds is handed on at once, however late it is asked for; reads after the
last body chunk (an SSE stream waiting for the client to leave) are not bounded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from kumitate.observability import calllog
from kumitate.transports.edge.asgi import ASGIApp, Message, Receive, Scope, Send, ids_of, respond
from kumitate.transports.edge.errors import EdgeErrors


class BodyDeadline:
    """ASGI middleware: each HTTP request's `receive` and `send` through an `Exchange`."""

    def __init__(self, app: ASGIApp, timeout_s: float, errors: EdgeErrors) -> None:
        self.app = app
        self.timeout_s = timeout_s
        self.errors = errors

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """Give an HTTP request's app the receive and send of an Exchange; other scopes pass through."""
        if scope["type"] != "http":
            return self.app(scope, receive, send)
        exchange = Exchange(receive, send, self.timeout_s, ids_of(scope), self.errors)
        return self.app(scope, exchange.receive, exchange.send)


class Exchange:
    """One HTTP request's `receive` and `send` as the app sees them.

    Past the deadline the client is answered 408 with `Connection: close` (unless the response had
    started), the app reads a disconnect, and whatever it sends after is dropped.
    """

    def __init__(
        self, receive: Receive, send: Send, body_timeout_s: float, ids: tuple[str, str], errors: EdgeErrors
    ) -> None:
        self._receive = receive
        self._send = send
        self._timeout_s = body_timeout_s
        self._ids = ids
        self._errors = errors
        self._deadline: float | None = None
        self._body_done = False
        self.started = False
        self.answered = False

    async def receive(self) -> Message:
        """The next message from the client, the body within its deadline: past it, REQUEST_TIMEOUT is
        answered and the app reads a disconnect."""
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
        """Send the app's message, unless the deadline has already been answered (one answer per request)."""
        if self.answered:
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)

    async def _timed_out(self) -> None:
        calllog.log_event("http_body_timed_out", code="REQUEST_TIMEOUT", run_id=self._ids[0])
        if not self.started:
            status, headers, body = self._errors.reply(
                "REQUEST_TIMEOUT", f"the request body did not arrive within {self._timeout_s:g} s", self._ids
            )
            await respond(self.send, status, headers | {"connection": "close"}, body)
        self.answered = True
