"""MCP adapter (fastmcp): wire format <-> pipeline, nothing else. One module per job:

- `server`: `build_server`, one FastMCP server per endpoint (all services, one, or a toolset);
- `tools`, `resources`, `prompts`: the spec's tools, resources and prompts as fastmcp components;
- `request`: the MCP request as the pipeline's `CallRequest`, and its progress channel;
- `results`: the wire shape of a result or an error (successes in `structuredContent`, errors
  outside it, so a strict client's `outputSchema` check passes);
- `catalogue`: unknown tools and resources as JSON-RPC −32602 with the catalogue's body;
- `capabilities`: `initialize` and `server/discover` declare what is served, nothing more;
- `edge`: the HTTP edge before the SDK (routing headers trimmed);
- `scopes`: which scopes a request over HTTP needs, read before the SDK (and the body replayed);
- `versions`: the protocol versions a request may name, checked before the SDK;
- `content`, `elicit`, `logging`, `completions`: content blocks, questions asked of the client
  (elicitation, sampling, roots), log notifications and argument completion;
- `listing`: what `tools/list` shows (per token's scopes, or search mode);
- `lean`: the lean path, a `tools/call` answered without the SDK, byte for byte as it would.

fastmcp's internals are held in `kumitate.compat.fastmcp`. The names below are what generated bindings
and the app import.
"""

from kumitate.compat.fastmcp import configure_sessions
from kumitate.transports.mcp.completions import complete_params
from kumitate.transports.mcp.edge import HTTP_MIDDLEWARE
from kumitate.transports.mcp.request import current_request
from kumitate.transports.mcp.resources import resource_component, resource_template_component
from kumitate.transports.mcp.results import ERROR_META, CatalogueError, tool_result
from kumitate.transports.mcp.server import build_server
from kumitate.transports.mcp.tools import IDEMPOTENCY_ARGUMENT, SpecTool, mcp_input_schema, tool_component

__all__ = [
    "ERROR_META",
    "HTTP_MIDDLEWARE",
    "IDEMPOTENCY_ARGUMENT",
    "CatalogueError",
    "SpecTool",
    "build_server",
    "complete_params",
    "configure_sessions",
    "current_request",
    "mcp_input_schema",
    "resource_component",
    "resource_template_component",
    "tool_component",
    "tool_result",
]
