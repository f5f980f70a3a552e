"""Routes for operators, off the public API: health (/healthz, /readyz) and Prometheus metrics.

`/metrics` is served only when configured: KUMITATE_METRICS_TOKEN (the scraper sends it as a
bearer token) or KUMITATE_METRICS=open (no token: a private scrape network). Otherwise the path
does not exist, so a public deployment exposes nothing by default.
"""

from __future__ import annotations

import hmac

from litestar import Response, get
from litestar.handlers import HTTPRouteHandler

from kumitate import faults
from kumitate.errors import ToolError
from kumitate.observability.metrics import CONTENT_TYPE, Metrics
from kumitate.runtime import Runtime
from kumitate.settings import Settings
from kumitate.transports.http.wire import HttpRequest


def health_routes(runtime: Runtime) -> list[HTTPRouteHandler]:
    """Liveness and readiness (kumitate.serving.health): async, so no thread pool a stuck call holds can delay them."""
    retry_after = {"Retry-After": str(faults.STORAGE_RETRY_AFTER_MS // 1000)}

    @get("/healthz", include_in_schema=False)
    async def healthz() -> Response[dict[str, object]]:
        """Liveness: 503 when the process cannot serve (event loop blocked, a service's threads all stuck)."""
        live, body = await runtime.health.live()
        return Response(body, status_code=200 if live else 503)

    @get("/readyz", include_in_schema=False)
    async def readyz(service: str | None = None) -> Response[dict[str, object]]:
        """Readiness: 503 (Retry-After) while draining, not live, the data directory or database fails, or a
        service's database is damaged; `?service=<name>`: that service's readiness alone."""
        ready, body = await runtime.health.ready(service)
        return Response(body) if ready else Response(body, status_code=503, headers=retry_after)

    return [healthz, readyz]


def metrics_routes(metrics: Metrics, settings: Settings) -> list[HTTPRouteHandler]:
    """The `/metrics` route: behind the bearer token of KUMITATE_METRICS_TOKEN when one is set, open
    when KUMITATE_METRICS=open, and not served without either."""
    token = settings.metrics_token.get_secret_value() if settings.metrics_token else ""
    if not token and settings.metrics != "open":
        return []
    expected = f"Bearer {token}".encode()

    @get("/metrics", include_in_schema=False, sync_to_thread=False)
    def scrape(request: HttpRequest) -> Response[bytes]:
        if token and not hmac.compare_digest(request.headers.get("authorization", "").encode(), expected):
            raise ToolError("/metrics needs the bearer token of KUMITATE_METRICS_TOKEN", code="UNAUTHORIZED")
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    return [scrape]
