"""An `MCP-Protocol-Version` header this server does not speak: 400, in words that name it.

The SDK reads a header it does not know as the 2026-07-28 per-request envelope's and, when the request
has no `_meta` envelope (a 2025-11-25 client's), answers that the envelope is missing: a true statement
about a protocol the client never asked for. Here such a request gets the answer the protocol gives an
unsupported version (HTTP 400, JSON-RPC `UNSUPPORTED_PROTOCOL_VERSION` with the SDK's own `data`:
the version requested and those supported), with a message that names both.
"""

from __future__ import annotations

import json

import msgspec
from mcp.shared.inbound import unsupported_protocol_version_rejection
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from kumitate.transports.edge.asgi import ASGIApp, Receive, Scope, Send
from kumitate.transports.mcp.scopes import read_body

__all__ = ["KnownVersions"]

HEADER = b"mcp-protocol-version"
ID_READ_CAP = 1 << 20
"""The request's id is quoted back when its body is at most this large (else `null`, as JSON-RPC allows)."""


class KnownVersions:
    """ASGI: in front of an MCP endpoint, refuses a request whose protocol-version header is unknown."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a POST whose MCP-Protocol-Version this server does not speak with the SDK's JSON-RPC
        error, its message naming the versions this server speaks; pass the rest on."""
        requested = _header(scope) if scope["type"] == "http" and scope["method"] == "POST" else None
        if requested is None or requested in KNOWN_PROTOCOL_VERSIONS:
            await self.app(scope, receive, send)
            return
        body, _ = await read_body(receive, ID_READ_CAP)
        rejection = unsupported_protocol_version_rejection(requested, KNOWN_PROTOCOL_VERSIONS)
        assert rejection is not None
        message = (
            f"unsupported MCP-Protocol-Version {requested!r}: this server speaks {', '.join(KNOWN_PROTOCOL_VERSIONS)}"
        )
        error = {"code": rejection.code, "message": message, "data": rejection.data}
        reply = json.dumps({"jsonrpc": "2.0", "id": _request_id(body), "error": error}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(reply)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": reply})


def _header(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name.lower() == HEADER:
            return str(value.decode("latin-1"))
    return None


def _request_id(body: bytes | None) -> str | int | None:
    try:
        found = msgspec.json.decode(body or b"", type=dict[str, msgspec.Raw]).get("id")
        value = msgspec.json.decode(found) if found is not None else None
    except msgspec.DecodeError:
        return None
    return value if type(value) in (str, int) else None
