"""The canary of fastmcp's internals (kumitate/compat/fastmcp.py): what it relies on holds on the
installed fastmcp and mcp releases (issue 31, item 1).

When a fastmcp or mcp release moves the session manager or its body-limit middleware, the first
test fails here (and the app refuses to start) instead of MCP silently keeping the SDK's 4 MiB cap.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, FastMCP
from mcp.server.transport_security import RequestBodyLimitMiddleware

from kumitate.compat import InternalsChanged
from kumitate.compat.fastmcp import configure_sessions, serve_request, session_managers


@pytest.mark.anyio
async def test_the_session_caps_reach_the_sdk() -> None:
    app = FastMCP("t").http_app(path="/", transport="http")
    async with app.router.lifespan_context(app):
        configure_sessions(app, body_cap=64 << 20, max_sessions=7)
        [manager] = session_managers(app)
        assert isinstance(manager.asgi_app, RequestBodyLimitMiddleware)
        assert manager.asgi_app.max_body_size == manager.max_request_body_size == 64 << 20
        assert manager.max_sessions == 7


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_a_request_handler_reaches_the_sdk_server() -> None:
    seen: list[str] = []

    async def subscribe(ctx: Any, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
        seen.append(str(params.uri))
        return mt.EmptyResult()

    server = FastMCP("t")
    serve_request(server, "resources/subscribe", mt.SubscribeRequestParams, subscribe)
    async with Client(server, mode="legacy") as client:
        await client.session.subscribe_resource("test://x")
    assert seen == ["test://x"]


def test_a_change_is_one_line_naming_the_releases() -> None:
    """What a start-up says when fastmcp moved its SDK server: the releases installed and the module to fix."""

    class Moved(FastMCP):
        def __init__(self) -> None:
            super().__init__("t")
            self._mcp_server = None  # type: ignore[assignment]

    with pytest.raises(InternalsChanged) as err:
        serve_request(Moved(), "resources/subscribe", mt.SubscribeRequestParams, lambda ctx, params: None)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"fastmcp {version('fastmcp')} with mcp {version('mcp')}: ")
    assert "kumitate/compat/fastmcp.py" in message
