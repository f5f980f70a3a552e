"""CORS headers, sent only to the origins the operator configured (KUMITATE_CORS_ORIGINS): Starlette's
CORSMiddleware, exposing the headers a browser client needs to read."""

from __future__ import annotations

from starlette.middleware.cors import CORSMiddleware

from kumitate.transports.edge.asgi import ASGIApp

EXPOSED_HEADERS = (
    "X-Run-Id",
    "X-Trace-Id",
    "X-Request-Duration-Ms",
    "Retry-After",
    "Idempotent-Replayed",
    "Deprecation",
    "Sunset",
    "Mcp-Session-Id",
    "WWW-Authenticate",
)


def cors(app: ASGIApp, origins: tuple[str, ...] | list[str]) -> ASGIApp:
    """`app` behind CORS for `origins` (their preflights answered, their responses' headers exposed)."""
    return CORSMiddleware(
        app,
        allow_origins=origins,
        allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        allow_headers=["*"],
        expose_headers=list(EXPOSED_HEADERS),
    )
