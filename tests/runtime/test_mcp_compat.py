"""The one reliance on fastmcp/mcp internals (kumitate/transports/mcp/compat.py) holds on the
installed releases, and kumitate reaches into no other private attribute (issue 31, item 1).

When a fastmcp or mcp release moves the session manager or its body-limit middleware, the first
test fails here (and the app refuses to start) instead of MCP silently keeping the SDK's 4 MiB cap.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, FastMCP
from mcp.server.transport_security import RequestBodyLimitMiddleware

from kumitate.transports.mcp.compat import configure_sessions, serve_request, session_managers

KUMITATE = Path(__file__).resolve().parents[2] / "kumitate"
COMPAT = KUMITATE / "transports" / "mcp" / "compat.py"
PRIVATE = re.compile(r"\b(?!self\b|cls\b)([A-Za-z_][\w]*)\.(_[a-z]\w*)\b")
"""`obj._name` where obj is not self/cls (dunder names do not match: `_[a-z]`)."""
ALLOWED = {
    "_current_frames": "sys._current_frames, documented in the standard library (heartbeat.py)",
    "_collector_to_names": "prometheus_client's registry, not fastmcp/mcp/litestar (metrics.py; left to its owner)",
}
PRIVATE_BY_NAME = re.compile(r"""(?:get|set|has|del)attr\([^,]+,\s*["'](_[a-z]\w*)["']""")
PRIVATE_IMPORT = re.compile(r"^\s*(?:from|import)\s+(?:fastmcp|mcp|mcp_types|litestar|starlette)\S*\._", re.M)


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


def own_private_names(text: str) -> set[str]:
    """Private names a module declares itself (a class attribute, a `self._x`, a def)."""
    declared = re.findall(r"^\s+(_[a-z]\w*)\s*[:=]", text, re.M)
    declared += re.findall(r"\bself\.(_[a-z]\w*)", text)
    declared += re.findall(r"\bdef (_[a-z]\w*)", text)
    return set(declared)


def test_no_private_reach_ins_outside_the_compat_module() -> None:
    found = []
    for path in sorted(KUMITATE.rglob("*.py")):
        if path == COMPAT:
            continue
        text = path.read_text(encoding="utf-8")
        own = own_private_names(text)
        for number, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            names = [m.group(2) for m in PRIVATE.finditer(re.sub(r"(['\"]).*?\1", "''", code))]
            names += PRIVATE_BY_NAME.findall(code)
            found += [
                f"{path.relative_to(KUMITATE.parent)}:{number}: {line.strip()}"
                for n in names
                if n not in own and n not in ALLOWED
            ]
        found += [f"{path.relative_to(KUMITATE.parent)}: {m.group(0).strip()}" for m in PRIVATE_IMPORT.finditer(text)]
    assert found == [], "private attributes of other libraries' objects (move them to mcp/compat.py):\n" + "\n".join(
        found
    )


def test_the_check_finds_a_reach_in() -> None:
    sample = "meta = rc._srctx.meta\nmanager.asgi_app = X(manager._handle_request)\nsetattr(server, '_table', t)\n"
    hits = [m.group(2) for m in PRIVATE.finditer(sample)] + PRIVATE_BY_NAME.findall(sample)
    assert hits == ["_srctx", "_handle_request", "_table"]
