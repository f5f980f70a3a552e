"""The HTTP/1.1 connection protocol `kumitate serve` runs: uvicorn's httptools protocol with edge limits.

uvicorn 0.54 leaves three things to the application. Its httptools parser buffers a request's
headers without limit (a 64 MiB header was accepted); neither of its protocols times out a
connection that never finishes its headers (slowloris); and what it answers to a request it
cannot parse is a plain-text 400. This protocol is uvicorn's httptools one (h11, which has a
header limit, parses several times slower: about a third fewer requests a second) with:

* the header block bounded (KUMITATE_HTTP_MAX_HEADER_BYTES): the bytes read while a request's
  headers are incomplete are counted, and past the limit the request is answered 431
  HEADERS_TOO_LARGE and the connection closed, so at most the limit plus one read is ever held.
  (A header block that arrives whole within one read is measured exactly in edge/limits.py; the count
  here can include the tail of a previous pipelined request read together with it);
* a header deadline (KUMITATE_HTTP_HEADER_TIMEOUT_S) from the connection's start, and from the
  first byte of each further request on a kept-alive connection: a request whose headers are not
  complete by then is answered 408 REQUEST_TIMEOUT and closed (a connection that sent nothing
  is just closed, as uvicorn's keep-alive time-out closes an idle one);
* every answer it gives itself in the catalogue's envelope (`edge.errors.EdgeErrors`);
* the time a request's headers were complete, in its scope (ARRIVED_KEY), so the application can
  shed a call that queued too long in the loop before it was taken (kumitate.serving.admission).

The body's own deadline and the header count are checked in the ASGI edge (edge/limits.py, edge/body_deadline.py), where a
request exists. What the server answers before any request line was read (a connection reset,
TLS garbage) is a closed connection, as with any server.

What of uvicorn's protocol this relies on (a subclass of a class outside its documented API) is
listed and checked at start-up in kumitate/compat/uvicorn.py.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from uvicorn.config import Config
from uvicorn.server import ServerState

from kumitate.compat import uvicorn as uvicorn_compat
from kumitate.compat.uvicorn import HttpToolsProtocol
from kumitate.errors import ErrorCode
from kumitate.observability import calllog
from kumitate.transports.edge.asgi import ARRIVED_KEY
from kumitate.transports.edge.errors import EdgeErrors


@dataclass(frozen=True, slots=True)
class EdgeLimits:
    """The limits EdgeProtocol holds a connection to (module docstring): the header block's size, and
    the time a request may take to finish its headers."""

    max_header_bytes: int
    header_timeout_s: float


class EdgeProtocol(HttpToolsProtocol):
    """uvicorn's HttpToolsProtocol plus the limits above; uvicorn builds one per connection."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        limits: EdgeLimits,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = limits
        self._header_timer: asyncio.TimerHandle | None = None
        self._in_head = False
        self._head_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the header timer as the connection opens."""
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        """Count the bytes of an unfinished header block; past the limit, 431 and close."""
        if self.transport.is_closing():
            return
        if self._header_timer is None and not uvicorn_compat.response_pending(self):
            self._arm_header_timer()  # the first byte of a request on a kept-alive connection
        super().data_received(data)
        if self._in_head and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_header_bytes:
                message = f"the request line and headers are larger than {self.limits.max_header_bytes} bytes"
                self._answer("HEADERS_TOO_LARGE", message, "http_request_refused")

    def on_message_begin(self) -> None:
        """A new request's header block begins: count it from zero."""
        super().on_message_begin()
        self._in_head, self._head_bytes = True, 0

    def on_headers_complete(self) -> None:
        """The headers are complete: stop the header timer, and stamp when the request arrived."""
        self._in_head = False
        self._cancel_header_timer()
        self.scope[ARRIVED_KEY] = self.loop.time()  # type: ignore[literal-required]  # for admission.overdue
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the header timer with the connection."""
        self._cancel_header_timer()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """httptools could not parse the request."""
        self._answer(
            "BAD_REQUEST", "malformed HTTP request (request line, headers or chunked body)", "http_request_refused"
        )

    def _arm_header_timer(self) -> None:
        self._header_timer = self.loop.call_later(self.limits.header_timeout_s, self._headers_timed_out)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or uvicorn_compat.response_pending(self):
            return
        if not self._in_head:  # nothing sent yet: closed as a keep-alive would be
            self.transport.close()
            return
        message = f"the request headers did not arrive within {self.limits.header_timeout_s:g} s"
        self._answer("REQUEST_TIMEOUT", message, "http_headers_timed_out")

    def _answer(self, code: ErrorCode, message: str, event: str) -> None:
        """Write the envelope as a complete response and close: the request (if any) is not read on."""
        status, _, body = EdgeErrors.of_project().reply(code, message)  # rare: read when answered
        calllog.log_event(event, code=code, status=status)
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            "content-type: application/json\r\n"
            f"content-length: {len(body)}\r\n"
            "connection: close\r\n\r\n"
        ).encode("ascii")
        self._cancel_header_timer()
        self.transport.write(head + body)
        self.transport.close()


def protocol_for(limits: EdgeLimits) -> functools.partial[EdgeProtocol]:
    """The `http=` value for uvicorn: a picklable factory (worker processes rebuild it). Checks first
    that uvicorn still has what EdgeProtocol relies on (a start fails in one line otherwise)."""
    uvicorn_compat.check()
    return functools.partial(EdgeProtocol, limits=limits)
