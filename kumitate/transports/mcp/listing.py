"""What an MCP client is shown by `tools/list`: the tools its token may call, or a search tool.

Every `tools/list` entry costs the client's model context (issue 29: 23 tools, ~31k tokens at
`/mcp`). Two things cut the bill:

* **Scoped listing**: a caller whose bearer token is in the token table (KUMITATE_TOKENS,
  KUMITATE_TOKENS_FILE) sees only the tools whose scopes the token holds (a `stays`-only token
  at `/mcp` sees `summarize_stays`, nothing else): its scopes are all it will ever have. Every
  other caller sees every tool as before: without a valid token its call answers 401 and the
  client learns to log in, where an empty list would teach it nothing; with a token from the
  identity provider (OAuth) a call beyond its scopes answers 403 `insufficient_scope`, from which
  the client can ask for more (MCP step-up authorization), so the tool must stay in sight; a
  local (stdio, in-memory) session holds every scope.
* **Search mode** (KUMITATE_MCP_TOOL_SEARCH=1, the endpoint serving every tool: `/mcp` and
  `kumitate mcp --stdio` without `--service`/`--toolset`): `tools/list` lists fastmcp's BM25
  `search_tools` and the `call_tool` proxy instead of the catalogue; a search answers the best
  matches with their name, description and input schema (not their output schema, which is
  what a call returns, not what choosing one needs). The catalogue it searches, and the tools
  the proxy may call, are the scoped listing above. Tools stay callable by name.

Both are fastmcp components (a middleware, a transform) added by `build_server`; the lean path
(mcp.lean) never answers `tools/list`, so what it shows is decided here only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.server.dependencies import fastmcp_request_ctx
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.transforms.search import BM25SearchTransform
from fastmcp.tools import Tool

from kumitate.policies.auth import ALL_SCOPES
from kumitate.runtime import Runtime

SEARCH_RESULTS = 5
"""Tools a search answers, best first."""
T = TypeVar("T")


def may_call(tool: object, scopes: frozenset[str]) -> bool:
    """Whether a token with `scopes` may call `tool` (a tool that is not a spec tool: yes)."""
    binding = getattr(tool, "binding", None)
    if binding is None or ALL_SCOPES in scopes:
        return True
    return set(binding.policy.required_scopes) <= scopes


def visible(tools: Iterable[T], scopes: frozenset[str] | None) -> list[T]:
    """The tools a caller is shown: all of them without a known token (`scopes` None)."""
    return list(tools) if scopes is None else [t for t in tools if may_call(t, scopes)]


class ScopedListing(Middleware):
    """`tools/list` (and the search mode's catalogue) filtered by the caller's token."""

    def __init__(self, runtime: Runtime) -> None:
        self.auth = runtime.policies.auth

    def _scopes(self) -> frozenset[str] | None:
        """The scopes of the HTTP caller's token from the token table; None for any other caller."""
        if not self.auth.entries:
            return None
        rc = fastmcp_request_ctx.get()
        token = self.auth.bearer_token(rc.request.headers.get("authorization")) if rc and rc.request else None
        principal = self.auth.lookup(token) if token is not None else None
        return principal.scopes if principal is not None else None

    async def on_list_tools(
        self, context: MiddlewareContext[mt.ListToolsRequest], call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]]
    ) -> Sequence[Tool]:
        """The tools the caller's scopes let it call, of those fastmcp lists."""
        return visible(await call_next(context), self._scopes())


def search_entry(tool: Tool) -> dict[str, object]:
    """A search hit: enough to choose the tool and call it."""
    entry = tool.to_mcp_tool().model_dump(mode="json", by_alias=True, exclude_none=True)
    return {k: entry[k] for k in ("name", "title", "description", "inputSchema") if k in entry}


def search_transform() -> BM25SearchTransform:
    """fastmcp's BM25 search over the tools, its hits trimmed to what a client needs to call one."""
    return BM25SearchTransform(
        max_results=SEARCH_RESULTS, search_result_serializer=lambda tools: [search_entry(t) for t in tools]
    )


def shape(server: FastMCP, runtime: Runtime, *, every_tool: bool) -> None:
    """Add the scoped listing to `server`, and the search mode when it serves every tool and the setting asks."""
    server.add_middleware(ScopedListing(runtime))
    if every_tool and runtime.settings.mcp_tool_search:
        server.add_transform(search_transform())


def search_listing() -> list[dict[str, object]]:
    """The `tools/list` entries of the search mode, whatever the catalogue (for the reference docs)."""
    import asyncio

    server = FastMCP("search")
    server.add_transform(search_transform())
    tools = asyncio.run(server.list_tools())
    return [t.to_mcp_tool().model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
