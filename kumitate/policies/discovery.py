"""How a client finds out how to log in: RFC 9728 Protected Resource Metadata and RFC 6750 challenges.

The MCP authorization specification has a client that is refused with 401 read
`resource_metadata` from the `WWW-Authenticate` header, fetch that document, and log in at
one of its `authorization_servers`. Two resources are described: the HTTP API (the server's
base URL, metadata at `/.well-known/oauth-protected-resource`) and MCP (`<base>/mcp`, metadata
at the per-path `/.well-known/oauth-protected-resource/mcp`, which also covers `/mcp/<service>`).
Both exist only while OAuth is configured; a static token table has nothing to discover.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MCP_PATH = "/mcp"
REALM = "kumitate"
OPENAPI_SCOPES = "x-kumitate-scopes"
"""An operation's scopes in the OpenAPI document (codegen/openapi.py): its bearer scheme is `http`, which
carries no scopes in OpenAPI, so they are said beside it; served with an issuer, they become the scopes of
an openIdConnect requirement (served_openapi)."""
OPENAPI_OIDC = "openIdConnect"
"""The security scheme the served OpenAPI document adds when an identity provider is configured."""
OIDC_DISCOVERY = ".well-known/openid-configuration"


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


def document(base_url: str, path: str, issuer: str, scopes: Iterable[str]) -> dict[str, object]:
    """The RFC 9728 metadata of the resource at `base_url + path`."""
    return {
        "resource": f"{base_url.rstrip('/')}{path}",
        "authorization_servers": [issuer],
        "scopes_supported": sorted(set(scopes)),
        "bearer_methods_supported": ["header"],
        "resource_name": "kumitate" + (" MCP" if path else " HTTP API"),
    }


def served_openapi(document: dict[str, object], issuer: str | None, public_url: str | None) -> dict[str, object]:
    """The OpenAPI document as this server serves it: the generated one, plus what only the configuration
    knows. With an identity provider (KUMITATE_OAUTH_ISSUER), an `openIdConnect` scheme at the issuer's
    discovery document, and every operation that needs a token accepts either a static bearer token or
    the provider's, with its scopes (which OpenAPI lets only OAuth2/OIDC schemes carry). With
    KUMITATE_PUBLIC_URL, that URL as the server (else the generated relative `/`)."""
    if not (issuer or "").strip() and not public_url:
        return document
    out = json.loads(json.dumps(document))  # a deep copy: the generated document stays as read
    if public_url:
        out["servers"] = [{"url": public_url.rstrip("/"), "description": "KUMITATE_PUBLIC_URL"}]
    if not (issuer or "").strip():
        return out
    issuer = (issuer or "").strip().rstrip("/")
    out["components"]["securitySchemes"][OPENAPI_OIDC] = {
        "type": "openIdConnect",
        "openIdConnectUrl": f"{issuer}/{OIDC_DISCOVERY}",
        "description": f"An access token (JWT) of {issuer}, sent as `Authorization: Bearer <token>`; its"
        " audience must be one KUMITATE_OAUTH_AUDIENCE names, and it must carry the operation's scopes.",
    }
    for item in out["paths"].values():
        for op in item.values():
            if isinstance(op, dict) and op.get("security"):
                op["security"] = [*op["security"], {OPENAPI_OIDC: list(op.get(OPENAPI_SCOPES, []))}]
    return out
