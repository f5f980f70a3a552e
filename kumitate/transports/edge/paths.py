"""A path's encoded `/` kept inside its segment: `/files/borders%2Feurope.geojson` is two segments, not three.

An OpenAPI path parameter is one segment, percent-encoded, so a value with a `/` in it arrives as `%2F`
(kumitate's own clients and the facade send it so: kumitate.httpshape). The ASGI server hands over
`scope["path"]` already decoded, where that `%2F` is a `/` like any other, and Litestar, which routes on
it, finds no route (`/files/{path}` is one segment) or the wrong one. This layer re-decodes the path from
`raw_path` leaving `%2F` and `%25` encoded, so the router sees the segments the caller sent; a path
variable's text then holds exactly those two escapes, and `segment_text` decodes it (the HTTP transport's
path parameters do, kumitate.transports.http.rest and routes). A path without a `%` is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from urllib.parse import unquote, unquote_to_bytes

from kumitate.transports.edge.asgi import ASGIApp, Receive, Scope, Send

_KEPT = re.compile(rb"%2[Ff5]")
"""The escapes left encoded in the routed path: `/` (a segment's own) and `%` itself (so that the text
`%2F`, sent as `%252F`, is not read as an encoded `/`)."""
_BARE_PERCENT = re.compile(rb"%(?![0-9A-Fa-f]{2})")


def routed_path(raw_path: bytes) -> str:
    """The path to route on: `raw_path` (no query) decoded but for `%2F` and `%25` (a bare `%`, invalid
    in a URL, becomes `%25`: it is the text `%`)."""
    raw = _BARE_PERCENT.sub(b"%25", raw_path.partition(b"?")[0])
    pieces = _KEPT.split(raw)
    kept = [match.upper() for match in _KEPT.findall(raw)]
    out = bytearray(unquote_to_bytes(pieces[0]))
    for escape, piece in zip(kept, pieces[1:], strict=True):
        out += escape + unquote_to_bytes(piece)
    return out.decode("utf-8", errors="replace")


def segment_text(routed: str) -> str:
    """A path variable's text as sent, from its segment of the routed path (its `%2F` and `%25` decoded)."""
    return unquote(routed) if "%" in routed else routed


class EncodedSlashes:
    """ASGI middleware: route on the segments the caller sent (`%2F` stays inside its segment)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """Pass the request on, its `path` re-decoded from `raw_path` when that has a `%` in it."""
        raw = scope.get("raw_path")
        if scope["type"] == "http" and isinstance(raw, bytes) and b"%" in raw:
            scope["path"] = routed_path(raw)
        return self.app(scope, receive, send)
