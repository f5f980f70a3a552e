"""Host and Origin allow-lists: a web page the user visits cannot reach the local server.

DNS rebinding points a foreign name at 127.0.0.1, so the browser sends `Host: evil.example`;
a cross-site request keeps our Host but carries `Origin: https://evil.example`. Both are
refused before routing and before any body is read, on every route of both transports
(the MCP specification requires streamable-HTTP servers to validate `Origin`).

A Host header must be one `host[:port]` (no userinfo, path or second Host header) and an
Origin header must come once: the check and every URL built from the request (export links,
`resource_metadata`, the protected-resource document) read the same, validated value
(`request_host`, `base_url_of`). A Host is served when it is loopback, the address the connection actually arrived at
(an IP literal cannot be rebound), the public URL's host, or listed in
KUMITATE_ALLOWED_HOSTS. An Origin is accepted when absent (curl, SDKs and MCP clients send
none), same-origin with an accepted Host (the docs UI: same scheme, host and port), or listed in KUMITATE_ALLOWED_ORIGINS.
A browser write that is cross-site but carries no Origin is refused as well.

`Hosts` is the edge's layer that applies it (and refuses an HTTP/1.1 request without a Host).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kumitate.settings import Settings
from kumitate.transports.edge.asgi import ASGIApp, Receive, Scope, Send, headers_of
from kumitate.transports.edge.errors import EdgeErrors, refuse

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
ANY = "*"
_AUTHORITY = re.compile(
    r"(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9.])?)(?::(?P<port>[0-9]{1,5}))?"
)
"""RFC 9110 `Host = uri-host [ ":" port ]`, with a reg-name limited to what DNS names use."""


class BadHost(ValueError):
    """A Host header that is not one `host[:port]`; the message is safe to send back."""


def valid_authority(value: str) -> str | None:
    """`value` as `host[:port]` (lower case) if it is one, else None (userinfo, a path, a bad port)."""
    match = _AUTHORITY.fullmatch(value.strip())
    if match is None:
        return None
    host, port = match["host"].lower(), match["port"]
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return None
    if port is not None and int(port) > 65535:
        return None
    return host if port is None else f"{host}:{int(port)}"


def _values(scope: Mapping[str, Any], name: bytes) -> list[str]:
    return [v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == name]


def request_host(scope: Mapping[str, Any]) -> str | None:
    """The request's Host as `host[:port]`, None when it sent none; BadHost when it sent several
    or one that is not a host (`localhost:P@evil.example`). The one value both the Host check and
    URL building read, so they can never disagree."""
    values = _values(scope, b"host")
    if not values:
        return None
    if len(values) > 1:
        raise BadHost("the request has more than one Host header")
    authority = valid_authority(values[0])
    if authority is None:
        raise BadHost(f"Host {values[0][:100]!r} is not a valid host[:port]")
    return authority


def base_url_of(scope: Mapping[str, Any]) -> str | None:
    """`scheme://host[:port]` of an ASGI HTTP request, as the caller addressed it: its validated
    Host header (a proxy must pass it on), else the address the connection arrived at, and the
    scheme, which uvicorn takes from X-Forwarded-Proto when the proxy is trusted (FORWARDED_ALLOW_IPS)."""
    if scope.get("type") != "http":
        return None
    try:
        host = request_host(scope)
    except BadHost:  # refused by the outer layer before any URL is built; never echoed
        host = None
    if not host and scope.get("server"):
        server_host, server_port = scope["server"]
        host = f"{server_host}:{server_port}"
    return f"{scope.get('scheme', 'http')}://{host}" if host else None


def hostname(authority: str) -> str:
    """The host part of a `Host` header value: lower-case, without port, brackets or a final dot."""
    value = authority.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value[1:]
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def normalise_origin(origin: str) -> str | None:
    """`scheme://host[:port]` in lower case with the default port dropped, or None if not an origin."""
    try:
        parts = urlsplit(origin.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname or parts.path not in ("", "/"):
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    if port is not None and port != DEFAULT_PORTS.get(parts.scheme):
        host = f"{host}:{port}"
    return f"{parts.scheme}://{host}"


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """Which `Host` and `Origin` values this server answers; built once at start-up."""

    hosts: frozenset[str]
    """Host names (no port) served besides loopback and the connection's own address; `*` serves any."""
    origins: frozenset[str]
    """Normalised origins allowed to call from a browser besides same-origin pages; `*` allows any."""

    @classmethod
    def from_env(cls, env: Mapping[str, str], bound_host: str | None = None) -> OriginPolicy:
        """From a mapping of variables, read as the runtime's settings are."""
        return cls.from_settings(Settings.from_env(env), bound_host)

    @classmethod
    def from_settings(cls, settings: Settings, bound_host: str | None = None) -> OriginPolicy:
        """From KUMITATE_ALLOWED_HOSTS/ORIGINS and KUMITATE_PUBLIC_URL, plus the host the server binds
        (`bound_host`, the command line's, else HOST): a name served on purpose is never refused."""
        hosts = {hostname(h) if h != ANY else ANY for h in settings.allowed_hosts}
        hosts |= LOOPBACK_HOSTS
        bound = bound_host or settings.host
        if bound:
            hosts.add(hostname(bound))
        public_url = settings.public_url
        origins = set()
        for item in settings.allowed_origins:
            normal = ANY if item == ANY else normalise_origin(item)
            if normal:
                origins.add(normal)
        if public_url:
            public = urlsplit(public_url)
            if public.hostname:
                hosts.add(hostname(public.hostname))
            public_origin = normalise_origin(f"{public.scheme}://{public.netloc}")
            if public_origin:
                origins.add(public_origin)
        return cls(frozenset(hosts - {""}), frozenset(origins))

    @property
    def cors_origins(self) -> list[str]:
        """Origins configured by the operator: the only ones that get CORS headers."""
        return sorted(o for o in self.origins if o != ANY) if ANY not in self.origins else [ANY]

    def refusal(self, scope: Scope, headers: Mapping[str, str]) -> str | None:
        """Why this request must not be served, or None when it may be. `headers` are the request's
        (lower-case names); a Host or Origin sent twice in `scope` is refused, so either copy is it."""
        if len(_values(scope, b"host")) > 1 or len(_values(scope, b"origin")) > 1:
            return "a request may carry one Host and one Origin header, not several"
        host_header = headers.get("host")
        if host_header is not None:
            authority = valid_authority(host_header)
            if authority is None:
                return f"Host {host_header[:100]!r} is not a valid host[:port]"
            if not self._host_allowed(hostname(authority), scope):
                return f"Host {host_header[:100]!r} is not served here; list it in KUMITATE_ALLOWED_HOSTS to allow it"
            host_header = authority
        origin = headers.get("origin")
        if origin is None:
            cross_site = headers.get("sec-fetch-site") in ("cross-site", "same-site")
            if cross_site and scope.get("method", "GET").upper() not in SAFE_METHODS:
                return "a cross-site browser request may not write here"
            return None
        if self._origin_allowed(origin, host_header, str(scope.get("scheme") or "http")):
            return None
        return f"Origin {origin[:100]!r} may not call this server; list it in KUMITATE_ALLOWED_ORIGINS to allow it"

    def _host_allowed(self, host: str, scope: Scope) -> bool:
        if ANY in self.hosts or host in self.hosts:
            return True
        server = scope.get("server")
        return server is not None and host == str(server[0]).lower()

    def _origin_allowed(self, origin: str, host: str | None, scheme: str) -> bool:
        """Listed, or same-origin: the page's scheme, host and port are the request's own
        (`https://h:P` calling `http://h:P` is another origin)."""
        normal = normalise_origin(origin)
        if normal is None:  # "null" (sandboxed frames, file://) and anything malformed
            return False
        if ANY in self.origins or normal in self.origins:
            return True
        return host is not None and normal == normalise_origin(f"{scheme}://{host}")


class Hosts:
    """ASGI middleware: a request without a Host (HTTP/1.1), or with a Host or Origin `origins` refuses,
    is answered ORIGIN_NOT_ALLOWED (or BAD_REQUEST) before routing and before its body is read."""

    def __init__(self, app: ASGIApp, origins: OriginPolicy | None, errors: EdgeErrors) -> None:
        self.app = app
        self.origins = origins
        self.errors = errors

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """Refuse an HTTP/1.1 request without a Host header, and one whose Origin is not allowed; pass the
        rest on."""
        if scope["type"] != "lifespan":  # http and websocket (Correlation read their headers)
            headers = headers_of(scope)
            if "host" not in headers and scope.get("http_version") == "1.1":
                return refuse(scope, send, self.errors, "BAD_REQUEST", "an HTTP/1.1 request must carry a Host header")
            reason = self.origins.refusal(scope, headers) if self.origins is not None else None
            if reason is not None:
                return refuse(scope, send, self.errors, "ORIGIN_NOT_ALLOWED", reason)
        return self.app(scope, receive, send)
