"""HTTP adapter (Litestar): wire format <-> pipeline, nothing else. One module per job:

- `wire`: a request as the pipeline's `CallRequest` and arguments, an `Outcome` as a response, every
  error (Litestar's own too: 404, 405, 413) as the catalogue's envelope through `error_response`;
- `routes`: `tool_route` and `resource_route`, the spec's tools and resources as Litestar routes;
- `forms`: a form body's fields mapped onto a tool's input schema (`http.form_flatten`);
- `lean`: the lean path, `POST /v1/<service>/<tool>` answered in front of Litestar, byte for byte as it would.

The task operations (kumitate.tasks.http) build on `wire` and are started from `routes`. The names below
are what generated routes, the app and the lean paths import.
"""

from kumitate.transports.http.routes import resource_route, tool_route
from kumitate.transports.http.wire import (
    CLIENT_CLOSED_REQUEST,
    call_request,
    encoded,
    error_response,
    http_error,
    json_arguments,
    request_ids,
    to_response,
)

__all__ = [
    "CLIENT_CLOSED_REQUEST",
    "call_request",
    "encoded",
    "error_response",
    "http_error",
    "json_arguments",
    "request_ids",
    "resource_route",
    "to_response",
    "tool_route",
]
