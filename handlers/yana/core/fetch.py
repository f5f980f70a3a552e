"""Fetching a label image from an external http(s) URI, as the seed allows, within limits.

Only hosts an operator listed in YANA_INGEST_URL_ALLOW are fetched (comma-separated host or
host:port entries, `*.example.com` for subdomains; empty = no external fetch at all, the
default). The fetch goes through kumitate.outbound: one deadline (YANA_INGEST_FETCH_TIMEOUT_MS,
default 5000, never past the call's own), at most MAX_BYTES read (a larger body is abandoned
as soon as it is), one retry on retryable failures, no redirects (a redirect could lead off the
allow-list). URLs with user info are refused. Failures become catalogued errors:

  not allowed → URI_NOT_ALLOWED · 404/410 → NOT_FOUND · too large → PAYLOAD_TOO_LARGE ·
  no answer in time → UPSTREAM_TIMEOUT · anything else (5xx, 3xx, refused connection) → UPSTREAM_ERROR
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

from generated.yana.errors import (
    NotFoundError,
    PayloadTooLargeError,
    UpstreamError,
    UpstreamTimeoutError,
    UriNotAllowedError,
)
from handlers.yana.settings import YanaSettings
from kumitate.outbound import CircuitBreaker, OutboundClient, OutboundError, RetryPolicy


class ImageFetcher:
    def __init__(self, allow: list[str], *, timeout_s: float, max_bytes: int) -> None:
        self.allow = [a.strip().lower() for a in allow if a.strip()]
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self._clients: dict[str, OutboundClient] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: YanaSettings, max_bytes: int) -> ImageFetcher:
        return cls(
            list(settings.ingest_url_allow), timeout_s=settings.ingest_fetch_timeout_ms / 1000, max_bytes=max_bytes
        )

    def allowed(self, netloc: str, host: str) -> bool:
        for entry in self.allow:
            if entry.startswith("*."):
                if host.endswith(entry[1:]):
                    return True
            elif entry in (netloc, host):
                return True
        return False

    def _client(self, origin: str) -> OutboundClient:
        with self._lock:
            if origin not in self._clients:
                self._clients[origin] = OutboundClient(
                    origin,
                    retry=RetryPolicy(attempts=2, base_delay_s=0.2, max_delay_s=1.0),
                    breaker=CircuitBreaker(5, 30.0),
                    default_deadline_s=self.timeout_s,
                )
            return self._clients[origin]

    def fetch(self, uri: str) -> bytes:
        parts = urlsplit(uri)
        host = (parts.hostname or "").lower()
        netloc = f"{host}:{parts.port}" if parts.port else host
        if parts.username or parts.password or not host:
            raise UriNotAllowedError("the image URL must name a host and no user info")
        if not self.allowed(netloc, host):
            raise UriNotAllowedError(
                "this host is not on the image allow-list (YANA_INGEST_URL_ALLOW); send the image as base64"
            )
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        try:
            response = self._client(f"{parts.scheme}://{parts.netloc}").request(
                "GET", path, headers={"Accept": "image/*"}, max_bytes=self.max_bytes
            )
        except OutboundError as exc:
            if exc.kind == "too_large":
                raise PayloadTooLargeError(f"the image is larger than {self.max_bytes} bytes") from None
            if exc.status in (404, 410):
                raise NotFoundError("no image at this URL (HTTP 404)") from None
            if exc.kind == "timeout":
                raise UpstreamTimeoutError("the image URL did not answer in time") from None
            raise UpstreamError(f"the image could not be fetched ({exc.kind})") from None
        if response.status_code != 200:
            raise UpstreamError(f"the image URL answered HTTP {response.status_code} (redirects are not followed)")
        return response.content
