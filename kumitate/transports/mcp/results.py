"""The pipeline's outcome on the MCP wire: a tool result, or a JSON-RPC error.

A success is `structuredContent` (the body itself, which the tool's `outputSchema` describes),
the same body as JSON text (or, where the spec names one in `mcp.text_content`, that property's string), and a content block per attachment (image, audio, embedded resource). A failure is `isError: true`
WITHOUT `structuredContent`: a strict client validates `structuredContent` against the tool's
`outputSchema`, which describes successes only (typescript-sdk #1943). The catalogue code stays
machine-readable twice: the text content is the JSON body HTTP sends
(`{"error": {"code", "message", "retryable", ...}, "run_id", "trace_id"}`) and
`_meta["io.kumitate/error"]` holds the `error` object. Both kinds carry
`_meta["kumitate"] = {"run_id", "trace_id", ...}`.

What is not a tool's answer (an unknown tool or resource, a failed resource read) is a JSON-RPC
error whose `data` is the catalogue body (plus `name` or `uri`), see `CatalogueError`.
"""

from __future__ import annotations

import msgspec
from fastmcp.tools import ToolResult
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, TextContent

from kumitate.pipeline import Outcome
from kumitate.transports.mcp.content import ContentBlock, content_block

ERROR_META = "io.kumitate/error"
"""The `_meta` key of an `isError` result that holds the catalogue's `error` object."""
IDS_META = "kumitate"
"""The `_meta` key holding run_id, trace_id (and warnings, replayed) of every tool result."""

_ENCODER = msgspec.json.Encoder()


def tool_result(outcome: Outcome, text_content: str | None = None) -> ToolResult:
    """The tool result of a finished call (see the module docstring for the shape); `text_content`
    names the property of a success whose value is the text content instead of the JSON (spec
    `mcp.text_content`)."""
    if outcome.ok and text_content is not None and isinstance(said := outcome.body.get(text_content), str):
        text = said
    else:
        text = _ENCODER.encode(outcome.body).decode("utf-8")
    content: list[ContentBlock] = [TextContent(type="text", text=text)]
    content += [block for a in outcome.attachments if (block := content_block(a)) is not None]
    ids: dict[str, object] = {"run_id": outcome.run_id, "trace_id": outcome.trace_id}
    if outcome.warnings:
        ids["warnings"] = list(outcome.warnings)
    if outcome.replayed:
        ids["replayed"] = True
    meta: dict[str, object] = {IDS_META: ids}
    if not outcome.ok:
        meta[ERROR_META] = outcome.body["error"]
        return ToolResult(content=content, is_error=True, meta=meta)
    return ToolResult(content=content, structured_content=outcome.body, meta=meta)


class CatalogueError(MCPError):
    """A request refused outside any tool result, as a JSON-RPC error: the catalogue's message,
    and as `data` the same body HTTP sends, plus what identifies the missing target (`uri` of a
    resource, `name` of a tool). A client error (4xx) is −32602 (invalid params), a server
    error −32603."""

    def __init__(self, outcome: Outcome, **target: str) -> None:
        code = INVALID_PARAMS if outcome.status < 500 else INTERNAL_ERROR
        super().__init__(code, str(outcome.body["error"]["message"]), data={**target, **outcome.body})
