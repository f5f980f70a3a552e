"""The HTTP/1.1 connection protocol `kumitate serve` runs: uvicorn's h11 protocol with edge limits.

uvicorn 0.54 leaves three things to the application. Its default parser (httptools) buffers a
request's headers without limit (a 64 MiB header was accepted); neither of its protocols times
out a connection that never finishes its headers (slowloris); and what it answers to a request
it cannot parse is a plain-text 400. This protocol is uvicorn's h11 one with:

* the header block bounded by h11's `max_incomplete_event_size` (KUMITATE_HTTP_MAX_HEADER_BYTES):
  past it the request is answered 431 HEADERS_TOO_LARGE and the connection closed, so at most
  that many bytes (plus one read) are ever held for a request's headers;
* a header deadline (KUMITATE_HTTP_HEADER_TIMEOUT_S) from the connection's start, and from the
  first byte of each further request on a kept-alive connection: a request whose headers are not
  complete by then is answered 408 REQUEST_TIMEOUT and closed (a connection that sent nothing
  is just closed, as uvicorn's keep-alive time-out closes an idle one);
* every answer it gives itself in the catalogue's envelope (`asgi.error_reply`).

The body's own deadline and the header count are checked in the ASGI layer (asgi.py), where a
request exists. What the server answers before any request line was read (a connection reset,
TLS garbage) is a closed connection, as with any server.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from kumitate import calllog
from kumitate.transports.asgi import error_reply


@dataclass(frozen=True, slots=True)
class EdgeLimits:
    max_header_bytes: int
    header_timeout_s: float


class EdgeProtocol(H11Protocol):
    """uvicorn's H11Protocol plus the limits above; uvicorn builds one per connection."""

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

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE and self._header_timer is None:
            self._arm_header_timer()  # the first byte of a request on a kept-alive connection
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._cancel_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """h11 could not parse the request: 431 when it was the header block's size, else 400."""
        self._cancel_header_timer()
        if len(self.conn.trailing_data[0]) > self.limits.max_header_bytes:
            code = "HEADERS_TOO_LARGE"
            message = f"the request line and headers are larger than {self.limits.max_header_bytes} bytes"
        else:
            code, message = "BAD_REQUEST", "malformed HTTP request (request line, headers or chunked body)"
        self._answer(code, message, "http_request_refused")

    def _arm_header_timer(self) -> None:
        self._header_timer = self.loop.call_later(self.limits.header_timeout_s, self._headers_timed_out)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if not self.conn.trailing_data[0]:  # nothing sent yet: closed as a keep-alive would be
            self.transport.close()
            return
        message = f"the request headers did not arrive within {self.limits.header_timeout_s:g} s"
        self._answer("REQUEST_TIMEOUT", message, "http_headers_timed_out")

    def _answer(self, code: str, message: str, event: str) -> None:
        """Write the envelope as a complete response and close: the request (if any) is not read on."""
        status, _, body = error_reply(code, message)
        calllog.log_event(event, code=code, status=status)
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            "content-type: application/json\r\n"
            f"content-length: {len(body)}\r\n"
            "connection: close\r\n\r\n"
        ).encode("ascii")
        self.transport.write(head + body)
        self.transport.close()


def protocol_for(limits: EdgeLimits) -> Any:
    """The `http=` value for uvicorn: a picklable factory (worker processes rebuild it)."""
    return functools.partial(EdgeProtocol, limits=limits)
