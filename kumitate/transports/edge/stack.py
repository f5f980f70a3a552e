"""The edge, assembled: each concern one ASGI middleware with its own config, listed once, in the order
a request meets them (`KumitateASGI.layers`).

1. `Correlation`: the headers read once, the ids resolved; ids and duration on every response below;
2. `HeaderLimits`: too many or too large headers, 431;
3. `Hosts`: no Host, or a Host or Origin not served here (DNS rebinding, cross-site writes), refused;
4. `DrainHeader`: `Connection: close` while the server drains;
5. `CrashFallback`: an escaped exception or no answer at all, a 500 envelope;
6. `BodyDeadline`: the body whole within its time, else 408;
7. CORS for the configured origins;
8. `McpRouting`: /mcp and /mcp/<name> to the MCP apps (their plain-text errors in the envelope);
9. `EncodedSlashes`: the path routed on as the caller's segments (a `%2F` stays inside its segment);
10. `LeanPaths`: the lean HTTP path; what it does not take goes on to Litestar.

Refusals (2, 3) come before any body is read; everything after 1 carries the ids. A layer whose
concern is off (no drain event, no CORS origins, no MCP, no lean path) is left out, not run idle.

The edge is on every request's path (the wrk benchmark measures it): a layer that only passes the
request on, or wraps `send` or `receive`, returns the inner app's awaitable instead of awaiting it
(a plain `__call__`: what is awaited is the same), so the layers cost no coroutine of their own; only
`KumitateASGI` itself (uvicorn reads an app whose `__call__` is not a coroutine function as ASGI 2),
`CrashFallback` (which must catch) and `LeanPaths` (which must see the answer) await.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping

from kumitate.steps.errors import ErrorMap
from kumitate.transports.edge.asgi import ASGIApp, Receive, Scope, Send
from kumitate.transports.edge.body_deadline import BodyDeadline
from kumitate.transports.edge.correlation import Correlation
from kumitate.transports.edge.cors import cors
from kumitate.transports.edge.drain import DrainHeader
from kumitate.transports.edge.errors import CrashFallback, EdgeErrors
from kumitate.transports.edge.hosts import Hosts, OriginPolicy
from kumitate.transports.edge.limits import HeaderLimits, RequestLimits
from kumitate.transports.edge.paths import EncodedSlashes
from kumitate.transports.edge.routing import Gate, Lean, LeanPaths, McpRouting

Layer = Callable[[ASGIApp], ASGIApp]
"""One middleware with its config bound: given the app inside it, the app with the concern around it."""


class KumitateASGI:
    """The application uvicorn serves: `app` (Litestar) and the MCP endpoints behind the edge layers."""

    def __init__(
        self,
        app: ASGIApp,
        mcp_all: ASGIApp | None,
        mcp_services: Mapping[str, ASGIApp],
        origins: OriginPolicy | None = None,
        gate: Gate | None = None,
        limits: RequestLimits | None = None,
        lean: Lean | None = None,
        draining: threading.Event | None = None,
        errors: ErrorMap | None = None,
    ) -> None:
        """`errors` is the pipeline's catalogue map (the project's, read now when not given)."""
        self.mcp_all = mcp_all
        self.mcp_services = mcp_services
        self.origins = origins
        self.gate = gate
        self.limits = limits or RequestLimits()
        self.lean = lean
        self.draining = draining
        self.errors = EdgeErrors(errors) if errors is not None else EdgeErrors.of_project()
        self._app = app
        self._stack = self._build()

    def layers(self) -> list[Layer]:
        """The edge, outermost first: the one place its order is written."""
        errors, origins, mcp_all = self.errors, self.origins, self.mcp_all
        wanted: list[Layer | None] = [
            Correlation,
            functools.partial(HeaderLimits, limits=self.limits, errors=errors),
            functools.partial(Hosts, origins=origins, errors=errors),
            functools.partial(DrainHeader, draining=self.draining) if self.draining is not None else None,
            functools.partial(CrashFallback, errors=errors),
            functools.partial(BodyDeadline, timeout_s=self.limits.body_timeout_s, errors=errors),
            functools.partial(cors, origins=origins.cors_origins) if origins and origins.cors_origins else None,
            functools.partial(
                McpRouting, mcp_all=mcp_all, mcp_services=self.mcp_services, gate=self.gate, errors=errors
            )
            if mcp_all is not None
            else None,
            EncodedSlashes,
            functools.partial(LeanPaths, lean=self.lean) if self.lean is not None else None,
        ]
        return [layer for layer in wanted if layer is not None]

    def _build(self) -> ASGIApp:
        inner = self._app
        for layer in reversed(self.layers()):
            inner = layer(inner)
        return inner

    @property
    def app(self) -> ASGIApp:
        """The application behind the edge (Litestar)."""
        return self._app

    @app.setter
    def app(self, app: ASGIApp) -> None:
        self._app = app
        self._stack = self._build()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # a coroutine function: uvicorn takes an app whose __call__ is not one for ASGI 2
        """Run the request through the middleware stack built once at construction."""
        await self._stack(scope, receive, send)
