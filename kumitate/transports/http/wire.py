"""The HTTP exchange as the pipeline sees it: a Litestar request as a `CallRequest` and its arguments
(JSON, or form fields mapped onto the input schema), an `Outcome` as a response, and every error,
Litestar's own too (404, 405, 413), as the catalogue's envelope through `error_response`.

The routes (kumitate.transports.http.routes) and the task operations (kumitate.tasks.http) build on it.
"""

import base64
from collections.abc import Mapping
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.datastructures import State, UploadFile
from litestar.exceptions import HTTPException

from kumitate import faults, textvalues
from kumitate.bindings import ToolBinding
from kumitate.errors import ToolError
from kumitate.intake import JsonBody
from kumitate.observability import calllog, correlation
from kumitate.pipeline import CallRequest, Outcome
from kumitate.runtime import Runtime
from kumitate.transports.edge.asgi import IDS_KEY
from kumitate.transports.edge.errors import code_for_status
from kumitate.transports.edge.hosts import base_url_of
from kumitate.transports.http import forms

CLIENT_CLOSED_REQUEST = 499
"""The status logged for a call whose client disconnected (nginx's convention); never sent."""
_ENCODER = msgspec.json.Encoder()
MULTIPART_PART_LIMIT = 1000
"""Litestar's `multipart_form_part_limit` (the app keeps the default)."""
MULTIPART_LIMIT_DETAIL = "Request Entity Too Large"
"""What Litestar 2 says, as a 400, when a form passes the multipart parser's limits (its 3.0 makes it 413)."""
HttpRequest = Request[object, object, State]
"""A Litestar request as kumitate's routes get it: no user or auth of Litestar's (the pipeline authenticates,
no Litestar auth middleware sets them), the app's State."""


def request_ids(request: HttpRequest) -> tuple[str, str]:
    """The ids the outer ASGI layer resolved for this request (or fresh ones)."""
    state = request.scope.get("state") or {}
    ids = state.get(IDS_KEY)
    if ids is None:
        ids = correlation.from_headers({k.lower(): v for k, v in request.headers.items()})
        state[IDS_KEY] = ids
    return ids


def call_request(request: HttpRequest) -> CallRequest:
    """The pipeline's view of an HTTP request: its ids, client, credentials, idempotency key and the
    address the caller reached (for URLs in results); the body is read later, once the caller is admitted."""
    client = request.client.host if request.client else None
    return CallRequest(
        transport="http",
        headers=request.headers,
        ids=request_ids(request),
        client=client,
        authorization=request.headers.get("authorization"),
        idempotency_key=request.headers.get("idempotency-key"),
        base_url=base_url_of(request.scope),
    )


def encoded(outcome: Outcome) -> tuple[bytes, str]:
    """The response body of `outcome` and its media type."""
    if outcome.ok and isinstance(outcome.body, bytes):
        return outcome.body, outcome.media_type
    return _ENCODER.encode(outcome.body), "application/json"


def to_response(outcome: Outcome) -> Response[bytes]:
    """`outcome` as Litestar's response: its status, headers and body, encoded once (`encoded`)."""
    body, media_type = encoded(outcome)
    return Response(body, status_code=outcome.status, media_type=media_type, headers=dict(outcome.headers))


def route_template(request: HttpRequest) -> str:
    """The route's path template (`/v1/analytics/exports/{handle:str}`), never the path itself:
    a path may carry an export handle or a chart id, which are capabilities, not log data."""
    handler = request.scope.get("route_handler")
    paths = getattr(handler, "paths", None)
    return sorted(paths)[0] if paths else "<unrouted>"


def http_error(runtime: Runtime, exc: HTTPException) -> ToolError:
    """Litestar's own HTTP errors (413 body too large, 405, a malformed form) as catalogued ToolErrors."""
    if exc.status_code == 400 and exc.detail == MULTIPART_LIMIT_DETAIL:
        return ToolError(
            f"the form has more than {MULTIPART_PART_LIMIT} parts, or a part the parser will not hold; send fewer fields",
            code="PAYLOAD_TOO_LARGE",
        )
    code = code_for_status(exc.status_code)
    detail = exc.detail if isinstance(exc.detail, str) and exc.detail else runtime.pipeline.catalogue[code].title
    return ToolError(detail, code=code)


def error_response(runtime: Runtime, request: HttpRequest, exc: Exception) -> Response[bytes]:
    """The single place an exception becomes an HTTP error body."""
    run_id, trace_id = request_ids(request)
    headers: dict[str, str] = {}
    if isinstance(exc, ToolError):
        err = exc
    elif isinstance(exc, HTTPException):
        err = http_error(runtime, exc)
        headers.update({k: v for k, v in (exc.headers or {}).items() if k.lower() == "allow"})
    else:
        known = faults.classify(exc)
        if known is None:
            calllog.log_crash(
                "request_crashed", exc, run_id=run_id, method=request.method, route=route_template(request)
            )
        err = known or ToolError(f"internal error; quote run_id {run_id}", code="INTERNAL")
    outcome = runtime.pipeline.error_outcome(err, run_id, trace_id)
    outcome.headers.update(headers)
    return to_response(outcome)


async def read_body(request: HttpRequest) -> bytearray:
    """The body, read chunk by chunk under the route's size limit (Litestar's `stream` checks
    Content-Length before reading and counts the bytes as they arrive): an oversized body is
    refused with 413 as soon as it is known to be too large, never buffered whole. One
    growing buffer, not a list of chunks joined at the end (half the peak memory)."""
    buffer = bytearray()
    async for chunk in request.stream():
        buffer += chunk
    return buffer


def _media_type(request: HttpRequest) -> str:
    return (
        request.headers.get("content-type", "application/json").split(";", 1)[0].strip().lower() or "application/json"
    )


def json_arguments(raw: bytearray) -> JsonBody:
    """A JSON request body as the pipeline's arguments (parsed and checked by kumitate.intake)."""
    if not raw or raw.isspace():
        raise ToolError("the request body is empty; send a JSON object", code="BAD_REQUEST")
    return JsonBody(raw)


async def read_arguments(
    request: HttpRequest, binding: ToolBinding, fields: Mapping[str, Mapping[str, Any]] | None = None
) -> JsonBody | dict[str, object]:
    """The tool's arguments from the body, in a media type the spec accepts (else UNSUPPORTED_MEDIA_TYPE):
    JSON as is (parsed by the pipeline), a form's fields mapped onto the input schema (kumitate.transports.http.forms),
    or onto `fields` (a body that is one property's value: `forms.value_fields`)."""
    media = _media_type(request)
    if media not in binding.content_types:
        raise ToolError(
            f"content type {media!r} is not accepted here; use {', '.join(binding.content_types)}",
            code="UNSUPPORTED_MEDIA_TYPE",
        )
    if media == "application/json":
        return json_arguments(await read_body(request))
    form = await request.form()
    root = binding.input_schema
    flattened = forms.Flattened.of(root, binding.form_flatten if fields is None else ())
    deep = forms.DeepObjects(frozenset(binding.form_deep_objects))
    arguments: dict[str, object] = {}
    for key in form:
        # repeated fields (`label_features=a&label_features=b`) or one plain value: a list where the schema says
        texts = [await _form_text(value) for value in form.getall(key)]
        inside = deep.path(key)
        if inside is not None:
            name, keys = inside
            schema = forms.member_schema(_field_schema(name, root, flattened, fields), keys, root)
            deep.put(name, keys, textvalues.from_text(texts, schema, root))
        else:
            schema = _field_schema(key, root, flattened, fields)
            arguments[key] = textvalues.from_text(texts, schema, root)
    return flattened.nest(deep.nest(arguments))


def _field_schema(
    key: str, root: Mapping[str, Any], flattened: forms.Flattened, fields: Mapping[str, Mapping[str, Any]] | None
) -> Mapping[str, Any]:
    """The schema a form field is read by: the input's property (or the one a flat field stands for), or
    the body value's field (`fields`)."""
    return flattened.schema(key, root) if fields is None else fields.get(key, {})


async def _form_text(value: str | UploadFile) -> str:
    """A form field's text; an uploaded file's content as base64 (a JSON string)."""
    if isinstance(value, UploadFile):
        return base64.b64encode(await value.read()).decode("ascii")
    return str(value)
