"""The HTTP edge: which Host and Origin are served, and the limits on a request before any tool sees it."""

from __future__ import annotations

from kumitate.settings.base import CommaList, EnvSettings, var

__all__ = ["MAX_BODY_BYTES", "HttpEdgeSettings"]

MAX_BODY_BYTES = 16 * 1024 * 1024
"""Default request-body cap; a tool's `max_request_bytes` policy sets its own (stays and
evaluate_attendance take 32 MiB for their 100k/200k-item inputs)."""


class HttpEdgeSettings(EnvSettings):
    """The HTTP edge (kumitate/transports): Host/Origin, the request-body cap, header limits and time-outs, the
    lean path."""

    allowed_hosts: CommaList = var(
        "KUMITATE_ALLOWED_HOSTS", (), "extra `Host` names served, comma-separated; `*` for any", "loopback only"
    )
    allowed_origins: CommaList = var(
        "KUMITATE_ALLOWED_ORIGINS", (), "browser origins served (CORS), comma-separated; `*` for any", "same origin"
    )
    max_request_bytes: int = var(
        "KUMITATE_MAX_REQUEST_BYTES",
        MAX_BODY_BYTES,
        "request-body cap, enforced while the body streams in (a tool's `max_request_bytes` sets its own)",
        "16 MiB",
        ge=1,
    )
    http_max_header_bytes: int = var(
        "KUMITATE_HTTP_MAX_HEADER_BYTES",
        32768,
        "request line plus headers, in bytes; more is refused 431 before it is buffered",
        "32 KiB",
        ge=1024,
    )
    http_max_headers: int = var("KUMITATE_HTTP_MAX_HEADERS", 100, "header fields per request; more is 431", ge=8)
    http_header_timeout_s: float = var(
        "KUMITATE_HTTP_HEADER_TIMEOUT_S",
        10.0,
        "seconds a connection may take to send a request's headers (slowloris); then 408 and closed",
        gt=0,
    )
    http_body_timeout_s: float = var(
        "KUMITATE_HTTP_BODY_TIMEOUT_S",
        60.0,
        "seconds a request body may take to arrive once the server reads it; then 408 and closed",
        gt=0,
    )
    http_lean: bool = var(
        "KUMITATE_HTTP_LEAN",
        True,
        "answer plain JSON `POST /v1/<service>/<tool>` calls on the lean path in front of Litestar (same pipeline and answers; "
        "sheds at the admission bound before reading the body)",
        "on",
    )
