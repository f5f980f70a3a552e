"""The outermost layer: the request's headers read once, its ids resolved, and the ids and duration on
every response.

It runs before everything else, so even a refusal, a routing 404/405 and every /mcp response carry
X-Run-Id, X-Trace-Id and X-Request-Duration-Ms (and `X-Run-Id-Replaced` when the client's run id was
not a valid one). The headers dict (lower-cased names, the last of a repeated one) and the ids go into
`scope["state"]` for every layer and route after it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable

from starlette.datastructures import MutableHeaders

from kumitate.observability import correlation
from kumitate.transports.edge.asgi import HEADERS_KEY, IDS_KEY, ASGIApp, Message, Receive, Scope, Send


class Correlation:
    """ASGI middleware: headers and ids into the scope's state; ids and duration onto the response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """Give an HTTP or websocket request its run and trace ids (from its headers, or new) and its
        decoded headers in the scope's state, and send the ids back on the answer."""
        kind = scope["type"]
        if kind != "http" and kind != "websocket":
            return self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        run_id, trace_id = correlation.from_headers(headers)
        state = scope.setdefault("state", {})
        state[IDS_KEY] = (run_id, trace_id)
        state[HEADERS_KEY] = headers
        if kind == "websocket":
            return self.app(scope, receive, send)
        replaced = correlation.run_id_replaced(headers)
        started = time.perf_counter()

        async def send_with_ids(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                out["X-Run-Id"] = run_id
                out["X-Trace-Id"] = trace_id
                if replaced:
                    out[correlation.RUN_ID_REPLACED_HEADER] = "invalid"
                out["X-Request-Duration-Ms"] = f"{(time.perf_counter() - started) * 1000:.2f}"
            await send(message)

        return self.app(scope, receive, send_with_ids)
