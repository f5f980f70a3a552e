"""`Connection: close` on every response while the server drains (kumitate.drain): a balancer stops
reusing the connection before the port closes."""

from __future__ import annotations

import threading

from starlette.datastructures import MutableHeaders

from kumitate.transports.edge.asgi import ASGIApp, Message, Receive, Scope, Send


class DrainHeader:
    """ASGI middleware: `Connection: close` on a response that starts once `draining` is set."""

    def __init__(self, app: ASGIApp, draining: threading.Event) -> None:
        self.app = app
        self.draining = draining

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        draining = self.draining

        async def closing(message: Message) -> None:
            if message["type"] == "http.response.start" and draining.is_set():
                MutableHeaders(scope=message)["Connection"] = "close"
            await send(message)

        await self.app(scope, receive, closing)
