"""Host and Origin allow-lists: a web page the user visits cannot reach the local server.

DNS rebinding points a foreign name at 127.0.0.1, so the browser sends `Host: evil.example`;
a cross-site request keeps our Host but carries `Origin: https://evil.example`. Both are
refused before routing and before any body is read, on every route of both transports
(the MCP specification requires streamable-HTTP servers to validate `Origin`).

A Host is served when it is loopback, the address the connection actually arrived at
(an IP literal cannot be rebound), the public URL's host, or listed in
KUMITATE_ALLOWED_HOSTS. An Origin is accepted when absent (curl, SDKs and MCP clients send
none), same-origin with an accepted Host (the docs UI), or listed in KUMITATE_ALLOWED_ORIGINS.
A browser write that is cross-site but carries no Origin is refused as well.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kumitate.settings import Settings

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
ANY = "*"


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

    def refusal(self, scope: MutableMapping[str, Any], headers: Mapping[str, str]) -> str | None:
        """Why this request must not be served, or None when it may be."""
        host_header = headers.get("host")
        if host_header is not None and not self._host_allowed(hostname(host_header), scope):
            return f"Host {host_header[:100]!r} is not served here; list it in KUMITATE_ALLOWED_HOSTS to allow it"
        origin = headers.get("origin")
        if origin is None:
            cross_site = headers.get("sec-fetch-site") in ("cross-site", "same-site")
            if cross_site and scope.get("method", "GET").upper() not in SAFE_METHODS:
                return "a cross-site browser request may not write here"
            return None
        if self._origin_allowed(origin, host_header):
            return None
        return f"Origin {origin[:100]!r} may not call this server; list it in KUMITATE_ALLOWED_ORIGINS to allow it"

    def _host_allowed(self, host: str, scope: MutableMapping[str, Any]) -> bool:
        if ANY in self.hosts or host in self.hosts:
            return True
        server = scope.get("server")
        return server is not None and host == str(server[0]).lower()

    def _origin_allowed(self, origin: str, host_header: str | None) -> bool:
        normal = normalise_origin(origin)
        if normal is None:  # "null" (sandboxed frames, file://) and anything malformed
            return False
        if ANY in self.origins or normal in self.origins:
            return True
        if host_header is None:
            return False
        netloc = normal.split("://", 1)[1]
        scheme = normal.split("://", 1)[0]
        request_origin = normalise_origin(f"{scheme}://{host_header.strip()}")
        return request_origin is not None and request_origin.split("://", 1)[1] == netloc
