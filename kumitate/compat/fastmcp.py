"""The one place kumitate relies on fastmcp internals (and those of the MCP SDK it serves through),
because no public hook exists yet.

Upstream need (fastmcp): FastMCP serves no `resources/subscribe` and offers no public way to add a
request handler to its SDK server (`FastMCP._mcp_server`), though the SDK server has a public
`add_request_handler`. `serve_request` reaches the SDK server that way, checked here and by
tests/compat/test_fastmcp.py.

Upstream need (fastmcp): `FastMCP.http_app()` builds the SDK's `StreamableHTTPSessionManager` in
its lifespan and passes neither `max_request_body_size` nor `max_sessions`, both of which the
SDK's constructor takes. Until it does, `configure_sessions` finds the manager the lifespan
built (the route endpoint's `session_manager`) and sets both, rebuilding the SDK's
`RequestBodyLimitMiddleware` the manager serves through (`manager.asgi_app`). Each structural
assumption is checked here and by tests/compat/test_fastmcp.py, which fails loudly when a
fastmcp or mcp release changes it; the check at start-up raises instead of running with the
SDK's 4 MiB cap. Each failure is one line naming the installed fastmcp and mcp releases.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import TypeVar

from fastmcp import FastMCP
from mcp.server.lowlevel.server import RequestHandler
from mcp.server.lowlevel.server import Server as SdkServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import RequestBodyLimitMiddleware
from pydantic import BaseModel
from starlette.applications import Starlette

from kumitate.compat import InternalsChanged

L = TypeVar("L")
P = TypeVar("P", bound=BaseModel)


def session_managers(app: Starlette) -> list[StreamableHTTPSessionManager]:
    """The session managers of a started `FastMCP.http_app()` (one per MCP route)."""
    found = []
    for route in getattr(app, "routes", []):
        manager = getattr(getattr(route, "endpoint", None), "session_manager", None)
        if isinstance(manager, StreamableHTTPSessionManager):
            found.append(manager)
    return found


def configure_sessions(app: Starlette, body_cap: int, max_sessions: int) -> None:
    """Give MCP over streamable HTTP the HTTP routes' request cap, and the session cap.

    The SDK's session manager refuses bodies over 4 MiB (a 100k-record summarize_stays call is
    ~13 MB) and admits 10,000 sessions (~40 KB each, per endpoint). Call it once the app's
    lifespan has started. The SDK enforces the body cap as the body streams in, and answers a
    new session past `max_sessions` with 503 (asgi.catalogue_errors puts it in the catalogue's
    envelope). Idle sessions are closed by the SDK after the `session_idle_timeout` given to
    `http_app`."""
    managers = session_managers(app)
    if not managers:
        raise _changed("fastmcp's http_app no longer exposes its session manager on the route's endpoint")
    for manager in managers:
        limiter = manager.asgi_app
        if not isinstance(limiter, RequestBodyLimitMiddleware):
            raise _changed("the MCP session manager no longer serves through RequestBodyLimitMiddleware")
        manager.max_sessions = max_sessions
        manager.max_request_body_size = body_cap
        limiter.max_body_size = body_cap


def serve_request(server: FastMCP, method: str, params_type: type[P], handler: RequestHandler[L, P]) -> None:
    """Have `server` answer the request `method` (params validated as `params_type`) with `handler`
    (`(ServerRequestContext, params) -> result`), through its SDK server's `add_request_handler`."""
    sdk = getattr(server, "_mcp_server", None)
    if not isinstance(sdk, SdkServer):
        raise _changed("FastMCP no longer keeps its SDK server in _mcp_server")
    sdk.add_request_handler(method, params_type, handler)


def _changed(what: str) -> InternalsChanged:
    return InternalsChanged(
        f"fastmcp {version('fastmcp')} with mcp {version('mcp')}: {what} (kumitate/compat/fastmcp.py needs updating)"
    )
