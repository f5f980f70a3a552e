"""MCP content from the handler contract's typed values, and the client capabilities a tool requires
(`mcp.requires_client`).

A handler never builds MCP content: it returns an `Attachment` (beside a tool's structured result,
or in a prompt `Message`) and this module decides the content kind from it: an embedded resource
when it names a URI, else image or audio content by its media type. Tool results
(`transports.mcp.results`) and prompts (`transports.mcp.prompts`) both build on it.
"""

from __future__ import annotations

import base64

import mcp_types as mt
from fastmcp.server.dependencies import fastmcp_request_ctx
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY

from kumitate.context import Attachment

ContentBlock = mt.TextContent | mt.ImageContent | mt.AudioContent | mt.EmbeddedResource


def _is_text(mime_type: str) -> bool:
    return mime_type.startswith("text/") or mime_type == "application/json" or mime_type.endswith("+json")


def content_block(attachment: Attachment) -> ContentBlock | None:
    """The MCP content for one attachment; None for a media type MCP has no content kind for."""
    if attachment.uri is not None:
        resource: mt.TextResourceContents | mt.BlobResourceContents
        if _is_text(attachment.mime_type):
            text = attachment.data.decode("utf-8")
            resource = mt.TextResourceContents(uri=attachment.uri, mime_type=attachment.mime_type, text=text)
        else:
            blob = base64.b64encode(attachment.data).decode("ascii")
            resource = mt.BlobResourceContents(uri=attachment.uri, mime_type=attachment.mime_type, blob=blob)
        return mt.EmbeddedResource(type="resource", resource=resource)
    data = base64.b64encode(attachment.data).decode("ascii")
    if attachment.mime_type.startswith("image/"):
        return mt.ImageContent(type="image", data=data, mime_type=attachment.mime_type)
    if attachment.mime_type.startswith("audio/"):
        return mt.AudioContent(type="audio", data=data, mime_type=attachment.mime_type)
    return None


def require_client(capabilities: tuple[str, ...]) -> None:
    """JSON-RPC -32021 (HTTP 400) naming the capabilities of `capabilities` (spec `mcp.requires_client`)
    the calling client did not declare; nothing outside an MCP request."""
    rc = fastmcp_request_ctx.get()
    if rc is None:
        return
    wanted = mt.ClientCapabilities.model_validate
    missing: dict[str, dict[str, object]] = {
        c: {} for c in capabilities if not rc.session.check_client_capability(wanted({c: {}}))
    }
    if missing:
        data = mt.MissingRequiredClientCapabilityErrorData(required_capabilities=wanted(missing))
        raise MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"this tool needs a client that declares {', '.join(sorted(missing))}",
            data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
        )
