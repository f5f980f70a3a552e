"""`Connection: close` on every response while the server drains (kumitate.serving.drain): a balancer stops
reusing the connection before the port closes."""

from __future__ import annotations

import threading
from collections.abc import Awaitable

from starlette.datastructures import MutableHeaders

from kumitate.transports.edge.asgi import ASGIApp, Message, Receive, Scope, Send


class DrainHeader:
    """ASGI middleware: `Connection: close` on a response that starts once `draining` is set."""

    def __init__(self, app: ASGIApp, draining: threading.Event) -> None:
        self.app = app
        self.draining = draining

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """Pass the request on; while the server drains, its answer asks the client to close the connection."""
        if scope["type"] != "http":
            return self.app(scope, receive, send)
        draining = self.draining

        async def closing(message: Message) -> None:
            if message["type"] == "http.response.start" and draining.is_set():
                MutableHeaders(scope=message)["Connection"] = "close"
            await send(message)

        return self.app(scope, receive, closing)
