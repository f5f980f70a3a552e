"""The size of a request's head: at most KUMITATE_HTTP_MAX_HEADERS header fields and
KUMITATE_HTTP_MAX_HEADER_BYTES of request line and headers, else 431 HEADERS_TOO_LARGE and the
connection closed.

protocol.py refuses a header block that is still incomplete past that size; this layer one that
arrived whole in a single read.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass

from kumitate.transports.edge.asgi import ASGIApp, Receive, Scope, Send
from kumitate.transports.edge.errors import EdgeErrors, refuse


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """What one request may take: header fields, bytes of head, seconds for its body (`body_deadline`)."""

    max_headers: int = 100
    max_header_bytes: int = 32768
    body_timeout_s: float = 60.0


class HeaderLimits:
    """ASGI middleware: a request over the header count or size is refused before routing."""

    def __init__(self, app: ASGIApp, limits: RequestLimits, errors: EdgeErrors) -> None:
        self.app = app
        self.max_headers = limits.max_headers
        self.max_header_bytes = limits.max_header_bytes
        self.errors = errors

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """Refuse a request whose header fields are too many or too large (431); pass the rest on."""
        if scope["type"] != "lifespan":  # http and websocket (Correlation gave both their ids)
            fields = scope.get("headers", [])
            if len(fields) > self.max_headers:
                message = f"the request has more than {self.max_headers} header fields"
                return refuse(scope, send, self.errors, "HEADERS_TOO_LARGE", message)
            size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
            if size + sum(len(k) + len(v) + 4 for k, v in fields) > self.max_header_bytes:
                message = f"the request line and headers are larger than {self.max_header_bytes} bytes"
                return refuse(scope, send, self.errors, "HEADERS_TOO_LARGE", message)
        return self.app(scope, receive, send)
