"""The MCP request being served, as the pipeline's `CallRequest`, and its progress channel.

Everything here reads fastmcp's public per-request context (`fastmcp_request_ctx`): the raw
`_meta` block, the HTTP request of a streamable-HTTP call, the session and the request id.
"""

from __future__ import annotations

from fastmcp.server.dependencies import fastmcp_request_ctx

from kumitate.observability import correlation
from kumitate.pipeline import CallRequest
from kumitate.transports.edge.hosts import base_url_of
from kumitate.transports.edge.routing import SERVED_OVER_NETWORK
from kumitate.transports.progress import Send


def current_request(idempotency_key: str | None = None) -> CallRequest:
    """Correlation from `_meta`, falling back to the streamable-HTTP request's headers.

    Over streamable HTTP the connection's bearer token is the caller's; stdio and
    in-memory sessions have no network peer and run as the local principal. The local
    principal holds every scope, so it is granted only to a call that did not come
    through the network ASGI layer: a network call without an HTTP request attached
    fails closed (no token) instead of running as local.
    """
    rc = fastmcp_request_ctx.get()
    meta = dict(rc.meta or {}) if rc is not None else {}
    headers: dict[str, str] = {}
    fallback = None
    base_url = None
    client = None
    if rc is not None and rc.request is not None:
        base_url = base_url_of(rc.request.scope)
        headers = {k.lower(): v for k, v in rc.request.headers.items()}
        state = rc.request.scope.get("state") or {}
        fallback = state.get("kumitate_ids") or correlation.from_headers(headers)
        client = rc.request.client.host if rc.request.client else None
    return CallRequest(
        transport="mcp",
        headers=headers,
        meta=meta,
        ids=correlation.from_meta(meta, fallback),
        client=client,
        authorization=headers.get("authorization"),
        local=(rc is None or rc.request is None) and not SERVED_OVER_NETWORK.get(),
        idempotency_key=idempotency_key,
        base_url=base_url,
    )


def progress_sender() -> Send | None:
    """Sends `notifications/progress` for this request, if the client gave a `progressToken`
    in the request's `_meta` (read from the raw block fastmcp lifts for every request)."""
    rc = fastmcp_request_ctx.get()
    token = (rc.meta or {}).get("progressToken") if rc is not None else None
    if rc is None or token is None:
        return None
    session, request_id = rc.session, rc.request_id

    async def send(done: float, total: float | None, message: str | None) -> None:
        await session.send_progress_notification(
            progress_token=token, progress=done, total=total, message=message, related_request_id=request_id
        )

    return send
