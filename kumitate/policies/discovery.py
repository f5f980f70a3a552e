"""How a client finds out how to log in: RFC 9728 Protected Resource Metadata and RFC 6750 challenges.

The MCP authorization specification has a client that is refused with 401 read
`resource_metadata` from the `WWW-Authenticate` header, fetch that document, and log in at
one of its `authorization_servers`. Two resources are described: the HTTP API (the server's
base URL, metadata at `/.well-known/oauth-protected-resource`) and MCP (`<base>/mcp`, metadata
at the per-path `/.well-known/oauth-protected-resource/mcp`, which also covers `/mcp/<service>`).
Both exist only while OAuth is configured; a static token table has nothing to discover.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MCP_PATH = "/mcp"
REALM = "kumitate"


def resource_path(transport: str) -> str:
    """The path of the protected resource a call went to ('' for the HTTP API)."""
    return MCP_PATH if transport == "mcp" else ""


def metadata_url(base_url: str, transport: str) -> str:
    """The OAuth protected-resource metadata URL (RFC 9728) of the endpoint serving `transport`."""
    return f"{base_url.rstrip('/')}{WELL_KNOWN}{resource_path(transport)}"


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def www_authenticate(challenge: Mapping[str, str], metadata: str | None) -> str:
    """`Bearer realm="kumitate", error="...", ..., resource_metadata="..."` (RFC 6750 section 3, RFC 9728 section 5.1)."""
    params = {"realm": REALM, **challenge}
    if metadata:
        params["resource_metadata"] = metadata
    return "Bearer " + ", ".join(f"{k}={_quoted(v)}" for k, v in params.items())


def document(base_url: str, path: str, issuer: str, scopes: Iterable[str]) -> dict[str, Any]:
    """The RFC 9728 metadata of the resource at `base_url + path`."""
    return {
        "resource": f"{base_url.rstrip('/')}{path}",
        "authorization_servers": [issuer],
        "scopes_supported": sorted(set(scopes)),
        "bearer_methods_supported": ["header"],
        "resource_name": "kumitate" + (" MCP" if path else " HTTP API"),
    }
