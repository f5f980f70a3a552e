"""OAuth on the wire: the RFC 9728 metadata routes and the token check in front of MCP.

Both exist only while KUMITATE_OAUTH_ISSUER is set. With OAuth on, every MCP request over HTTP
needs a valid token before the MCP app sees it: an MCP client learns that it must log in, and
where, only from an HTTP 401 with a `WWW-Authenticate` challenge (the MCP authorization
specification); a tool result with isError comes too late, after the session was opened.
Without OAuth, MCP keeps refusing per call, as before.
"""

from __future__ import annotations

import msgspec
from litestar import Response, get
from litestar.handlers import HTTPRouteHandler

from kumitate.errors import ToolError
from kumitate.observability import correlation
from kumitate.pipeline import CallRequest
from kumitate.policies import discovery
from kumitate.policies.auth import ALL_SCOPES
from kumitate.runtime import Runtime
from kumitate.transports.edge.asgi import IDS_KEY, Receive, Scope
from kumitate.transports.edge.hosts import base_url_of
from kumitate.transports.edge.routing import Gate, Refusal
from kumitate.transports.http.wire import HttpRequest
from kumitate.transports.mcp.scopes import ScopeMap, read_body


def _scopes(runtime: Runtime) -> set[str]:
    rules = [b.policy for svc in runtime.services.values() for b in svc.tools]
    rules += [b.policy for svc in runtime.services.values() for b in svc.resources]
    return {scope for policy in rules for scope in policy.scopes}


def discovery_routes(runtime: Runtime) -> list[HTTPRouteHandler]:
    """`/.well-known/oauth-protected-resource` (the HTTP API) and its per-path variants for MCP."""
    oauth = runtime.policies.auth.oauth
    if oauth is None:
        return []
    scopes = _scopes(runtime)
    issuer = oauth.settings.issuer

    def metadata(request: HttpRequest, path: str) -> Response[dict[str, object]]:
        base = runtime.policies.public_url or base_url_of(request.scope) or ""
        return Response(
            discovery.document(base, path, issuer, scopes),
            headers={"Cache-Control": "public, max-age=3600"},
        )

    @get(discovery.WELL_KNOWN, include_in_schema=False, sync_to_thread=False)
    def http_api(request: HttpRequest) -> Response[dict[str, object]]:
        return metadata(request, "")

    @get(f"{discovery.WELL_KNOWN}{discovery.MCP_PATH}", include_in_schema=False, sync_to_thread=False)
    def mcp_all(request: HttpRequest) -> Response[dict[str, object]]:
        return metadata(request, discovery.MCP_PATH)

    @get(f"{discovery.WELL_KNOWN}{discovery.MCP_PATH}/{{service:str}}", include_in_schema=False, sync_to_thread=False)
    def mcp_service(request: HttpRequest, service: str) -> Response[dict[str, object]]:
        if service not in runtime.services:
            raise ToolError(f"no MCP endpoint {discovery.MCP_PATH}/{service} on this server", code="NOT_FOUND")
        return metadata(request, f"{discovery.MCP_PATH}/{service}")

    return [http_api, mcp_all, mcp_service]


def mcp_gate(runtime: Runtime, body_cap: int) -> Gate | None:
    """The token check in front of the MCP apps (None while OAuth is off): 401 without a valid
    token; 403 `insufficient_scope` when the request calls a tool (or reads a resource) whose
    scope the token lacks, as the MCP authorization specification asks (mcp.scopes)."""
    if runtime.policies.auth.oauth is None:
        return None
    auth = runtime.policies.auth
    scopes = ScopeMap.of(runtime)
    every = scopes.every

    async def gate(scope: Scope, receive: Receive) -> tuple[Refusal | None, Receive]:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        client = scope.get("client")
        request = CallRequest(
            transport="mcp",
            headers=headers,
            ids=(scope.get("state") or {}).get(IDS_KEY) or correlation.from_headers(headers),
            client=client[0] if client else None,
            authorization=headers.get("authorization"),
            base_url=base_url_of(scope),
        )
        outcome = await runtime.pipeline.admit_connection(request)
        if outcome is None and scope["method"] == "POST":
            principal = auth.lookup_bearer(request.authorization)
            held = principal.scopes if principal is not None else frozenset()
            if ALL_SCOPES not in held and not every <= held:
                body, receive = await read_body(receive, body_cap)
                required = scopes.required(body) if body is not None else frozenset()
                if not required <= held:
                    outcome = await runtime.pipeline.admit_connection(request, sorted(required))
        if outcome is None:
            return None, receive
        return (outcome.status, outcome.headers, msgspec.json.encode(outcome.body)), receive

    return gate
