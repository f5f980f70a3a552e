"""The ASGI vocabulary the edge and both transports share: the types, the keys a request's scope
carries from the edge to the routes, and the one JSON reply an ASGI layer sends itself.

The headers are read once per request, by the outermost layer (`correlation.Correlation`), into a dict
in `scope["state"]` under `HEADERS_KEY`; every layer and the lean paths read that dict, none parses the
header list again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]

IDS_KEY = "kumitate_ids"
"""The request's (run_id, trace_id), in scope["state"] (set by `correlation.Correlation`)."""
HEADERS_KEY = "kumitate_headers"
"""The request's headers as a dict of lower-cased names (the last of a repeated one), in scope["state"]."""
ARRIVED_KEY = "kumitate_arrived"
"""The loop's time when the request's headers were complete, in the scope (set by transports/protocol.py)."""


def ids_of(scope: Scope) -> tuple[str, str]:
    """The (run_id, trace_id) the outermost layer resolved for this request."""
    ids: tuple[str, str] = scope["state"][IDS_KEY]
    return ids


def headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers, read once by the outermost layer."""
    headers: dict[str, str] = scope["state"][HEADERS_KEY]
    return headers


async def respond(send: Send, status: int, headers: Mapping[str, str], body: bytes) -> None:
    """A whole JSON response: `headers` (lower-cased on the wire), its type and length, then `body`."""
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    raw += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
