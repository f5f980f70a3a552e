"""Routes for operators, off the public API: Prometheus metrics.

`/metrics` is served only when configured: KUMITATE_METRICS_TOKEN (the scraper sends it as a
bearer token) or KUMITATE_METRICS=open (no token: a private scrape network). Otherwise the path
does not exist, so a public deployment exposes nothing by default.
"""

from __future__ import annotations

import hmac
from typing import Any

from litestar import Request, Response, get

from kumitate.errors import ToolError
from kumitate.metrics import CONTENT_TYPE, Metrics
from kumitate.settings import Settings


def metrics_routes(metrics: Metrics, settings: Settings) -> list[Any]:
    token = settings.metrics_token.get_secret_value() if settings.metrics_token else ""
    if not token and settings.metrics != "open":
        return []
    expected = f"Bearer {token}".encode()

    @get("/metrics", include_in_schema=False, sync_to_thread=False)
    def scrape(request: Request[Any, Any, Any]) -> Response[bytes]:
        if token and not hmac.compare_digest(request.headers.get("authorization", "").encode(), expected):
            raise ToolError("/metrics needs the bearer token of KUMITATE_METRICS_TOKEN", code="UNAUTHORIZED")
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    return [scrape]
