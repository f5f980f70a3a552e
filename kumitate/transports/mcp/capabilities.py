"""Capabilities that are true, the same in both eras of the protocol.

fastmcp derives them from the handlers it registers, which says more or less than kumitate serves:
`logging` is declared (any handler may call `ctx.log`, which sends `notifications/message`: at the
level `logging/setLevel` or the request's `_meta` asks for), `prompts` only when the server has a
prompt (the conformance service adds some), no MCP Apps UI extension (no `ui://` resource is served),
and `listChanged` false in both eras (a server's lists are fixed once it is built; fastmcp says true in
the handshake). `server/discover` lists every protocol version that works, the handshake ones included.
Both answers pass through fastmcp's public middleware hooks (`on_initialize`, `on_discover`).

Methods follow what is declared: `prompts/list` and `prompts/get` on a server without prompts are
JSON-RPC -32601 (method not found), as for any capability a server does not declare.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.prompts import Prompt, PromptResult
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

UI_EXTENSION = "io.modelcontextprotocol/ui"


class TrueCapabilities(Middleware):
    """Rewrites the capabilities of `initialize` and `server/discover` (module docstring)."""

    def __init__(self, server: FastMCP) -> None:
        self.server = server
        self._has_prompts: bool | None = None

    async def has_prompts(self) -> bool:
        """Whether the server has a prompt (its lists are fixed once it serves: asked once)."""
        if self._has_prompts is None:
            self._has_prompts = bool(await self.server.list_prompts(run_middleware=False))
        return self._has_prompts

    async def on_list_prompts(
        self,
        context: MiddlewareContext[mt.ListPromptsRequest],
        call_next: CallNext[mt.ListPromptsRequest, Sequence[Prompt]],
    ) -> Sequence[Prompt]:
        """List the prompts, or -32601 on a server that has none (the capability is not declared)."""
        if not await self.has_prompts():
            raise _undeclared("prompts/list")
        return await call_next(context)

    async def on_get_prompt(
        self,
        context: MiddlewareContext[mt.GetPromptRequestParams],
        call_next: CallNext[mt.GetPromptRequestParams, PromptResult],
    ) -> PromptResult:
        """Get a prompt, or -32601 on a server that has none (the capability is not declared)."""
        if not await self.has_prompts():
            raise _undeclared("prompts/get")
        return await call_next(context)

    async def on_initialize(
        self,
        context: MiddlewareContext[mt.InitializeRequest],
        call_next: CallNext[mt.InitializeRequest, mt.InitializeResult | None],
    ) -> mt.InitializeResult | None:
        """The handshake's answer, with the capabilities this server has."""
        result = await call_next(context)
        if result is None:
            return None
        return result.model_copy(update={"capabilities": await self.capabilities(result.capabilities)})

    async def on_discover(
        self,
        context: MiddlewareContext[mt.DiscoverRequest],
        call_next: CallNext[mt.DiscoverRequest, mt.DiscoverResult | dict[str, Any]],
    ) -> mt.DiscoverResult | dict[str, Any]:
        """The `server/discover` answer, with the capabilities this server has and every protocol version
        that works."""
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
        """`declared` (fastmcp's) made true to this server (module docstring)."""
        has_prompts = await self.has_prompts()
        extensions = {k: v for k, v in (declared.extensions or {}).items() if k != UI_EXTENSION}
        return declared.model_copy(
            update={
                "logging": mt.LoggingCapability(),
                "prompts": mt.PromptsCapability(list_changed=False) if has_prompts else None,
                "tools": _unchanging(declared.tools),
                "resources": _unchanging(declared.resources),
                "extensions": extensions or None,
            }
        )


def _undeclared(method: str) -> MCPError:
    return MCPError(mt.METHOD_NOT_FOUND, f"{method}: this server declares no prompts capability (it serves no prompt)")


Capability = TypeVar("Capability", mt.ToolsCapability, mt.ResourcesCapability)


def _unchanging(capability: Capability | None) -> Capability | None:
    return capability.model_copy(update={"list_changed": False}) if capability is not None else None
