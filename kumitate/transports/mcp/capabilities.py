"""Capabilities that are true, the same in both eras of the protocol.

fastmcp derives them from the handlers it registers, which says more than kumitate serves:
`logging` (no `notifications/message` is ever sent, so it is not declared), `prompts` with no
prompt (declared exactly when the server has one; the conformance service adds some), the MCP
Apps UI extension (no `ui://` resource is served), and `listChanged: true` in the handshake but
false in `server/discover` (a server's lists are fixed once it is built: false in both).
`server/discover` lists every protocol version that works, the handshake ones included.
Both answers pass through fastmcp's public middleware hooks (`on_initialize`, `on_discover`).
"""

from __future__ import annotations

from typing import Any

import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

UI_EXTENSION = "io.modelcontextprotocol/ui"


class TrueCapabilities(Middleware):
    """Rewrites the capabilities of `initialize` and `server/discover` (module docstring)."""

    def __init__(self, server: FastMCP) -> None:
        self.server = server

    async def on_initialize(
        self,
        context: MiddlewareContext[mt.InitializeRequest],
        call_next: CallNext[mt.InitializeRequest, mt.InitializeResult | None],
    ) -> mt.InitializeResult | None:
        result = await call_next(context)
        if result is None:
            return None
        return result.model_copy(update={"capabilities": await self.capabilities(result.capabilities)})

    async def on_discover(
        self,
        context: MiddlewareContext[mt.DiscoverRequest],
        call_next: CallNext[mt.DiscoverRequest, mt.DiscoverResult | dict[str, Any]],
    ) -> mt.DiscoverResult | dict[str, Any]:
        result = await call_next(context)
        if not isinstance(result, mt.DiscoverResult):
            return result
        return result.model_copy(
            update={
                "capabilities": await self.capabilities(result.capabilities),
                "supported_versions": list(KNOWN_PROTOCOL_VERSIONS),
            }
        )

    async def capabilities(self, declared: mt.ServerCapabilities) -> mt.ServerCapabilities:
        has_prompts = bool(await self.server.list_prompts(run_middleware=False))
        extensions = {k: v for k, v in (declared.extensions or {}).items() if k != UI_EXTENSION}
        return declared.model_copy(
            update={
                "logging": None,
                "prompts": mt.PromptsCapability(list_changed=False) if has_prompts else None,
                "tools": _unchanging(declared.tools),
                "resources": _unchanging(declared.resources),
                "extensions": extensions or None,
            }
        )


def _unchanging(capability: Any) -> Any:
    return capability.model_copy(update={"list_changed": False}) if capability is not None else None
