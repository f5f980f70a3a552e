"""MCP caching hints (2026-07-28, SEP-2549) from the spec: `cache: {ttl_ms, scope}` on a resource
(its reads) and `mcp.cache` on a tool (its listing). Without one: `ttlMs: 0`, `private`.

A resource's hint goes on each `resources/read` result it answers (`HintedResourceResult`, through
fastmcp's public `ResourceResult.to_mcp_result`). The lists and `server/discover` of an endpoint
share one hint (fastmcp's server-wide `cache_ttl`/`cache_scope`, whole seconds): the smallest ttl
of everything the endpoint serves, public only when all of it is, since one list holds them all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import mcp_types as mt
from fastmcp.resources import ResourceContent, ResourceResult
from pydantic import AnyUrl, Field

from kumitate.bindings import ResourceBinding, ToolBinding


class HintedResourceResult(ResourceResult):
    """A resource read whose result carries the resource's `ttlMs` and `cacheScope`."""

    ttl_ms: int = Field(default=0, exclude=True)
    scope: Literal["public", "private"] = Field(default="private", exclude=True)

    def __init__(self, contents: list[ResourceContent], ttl_ms: int, scope: Literal["public", "private"]) -> None:
        super().__init__(contents)
        self.ttl_ms, self.scope = ttl_ms, scope

    def to_mcp_result(self, uri: AnyUrl | str) -> mt.ReadResourceResult:
        """fastmcp's result, with the resource's cache hint (`ttlMs`, `cacheScope`) added."""
        return super().to_mcp_result(uri).model_copy(update={"ttl_ms": self.ttl_ms, "cache_scope": self.scope})


def hinted(value: str | bytes, binding: ResourceBinding) -> str | bytes | ResourceResult:
    """What a resource reader returns: the value, with the resource's hint when the spec declares one."""
    if binding.cache is None:
        return value
    contents = [ResourceContent(value, mime_type=binding.mime_type)]
    return HintedResourceResult(contents, binding.cache.ttl_ms, binding.cache.scope)


def list_hint(
    bindings: Iterable[ToolBinding | ResourceBinding],
) -> tuple[int | None, Literal["public", "private"] | None]:
    """`(cache_ttl seconds, cache_scope)` for FastMCP's lists of an endpoint serving `bindings`;
    `(None, None)` (no hint: 0, private) unless every one of them declares at least a second."""
    hints = [b.cache for b in bindings]
    if not hints or any(h is None for h in hints):
        return None, None
    seconds = min(h.ttl_ms for h in hints if h is not None) // 1000
    if seconds <= 0:
        return None, None
    public = all(h.scope == "public" for h in hints if h is not None)
    return seconds, "public" if public else "private"
