"""A facade's handlers: each tool of an imported API (`kumitate import openapi --forward URL`) sent on to
the API it fronts, so a team has MCP tools over its API at once and moves logic into handlers one tool at
a time.

A tool's spec was imported from the API's own operation, so its REST shape (kumitate.httpshape) is the
API's: the flat input becomes the very request the API expects (path, query, headers, body), and the
answer is read back into the flat output the same way. Every call goes through the runtime's outbound
client (kumitate.outbound): the call's own deadline, retries of what may be retried, and a circuit
breaker per upstream. The caller's `Authorization` is passed on (the API judges it, as it did before the
facade). A property the document marks `writeOnly` is left out of an answer that echoes it
(kumitate.writeonly). An answer that breaks the tool's output schema (the API's document) is the API's
fault: UPSTREAM_ERROR (502), not the INTERNAL of a handler's invalid result. An answer the API refuses becomes the tool's catalogued code for that status (404 NOT_FOUND), an
input it refuses without one (400, 422) BAD_REQUEST; a failure of the API itself UPSTREAM_ERROR, and a
spent deadline UPSTREAM_TIMEOUT, both retryable.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from urllib.parse import urlencode

import httpx
import jsonschema_rs

from kumitate import formbody
from kumitate.bindings import ServiceBinding, ToolBinding
from kumitate.catalogue import CatalogueEntry
from kumitate.context import CallContext
from kumitate.errors import ErrorCode, ToolError
from kumitate.observability import calllog
from kumitate.outbound import OutboundClient
from kumitate.outbound.outcome import OutboundError
from kumitate.steps.result import OutputCheck
from kumitate.writeonly import object_without_write_only

__all__ = ["Upstream"]

MARGIN_S = 0.25
"""Time kept back from the call's deadline to answer with UPSTREAM_TIMEOUT before the pipeline's own
REQUEST_TIMEOUT (the caller learns which side was slow)."""
INPUT_REFUSED = frozenset({400, 422})
"""Statuses by which an API says the input was wrong: BAD_REQUEST where the tool declares no code of its own."""
QUERY_SAFE = ":@/[]"
"""Left as they are in a query string (RFC 3986 allows them there): APIs match `subscriber:identifier` or
`page[size]` as written, and not every one decodes `%3A` in a key before it does."""
MAX_ANSWER_BYTES = 32 << 20
"""The largest answer read from the upstream; a larger one is UPSTREAM_ERROR, never buffered whole."""


class Upstream:
    """The API a service fronts: one outbound client (its pool, retries and breaker) shared by every call."""

    def __init__(
        self,
        base_url: str,
        service: ServiceBinding,
        catalogue: Mapping[str, CatalogueEntry],
        *,
        prefix: str = "",
        client: OutboundClient | None = None,
    ) -> None:
        """`prefix`: the start of every tool's route that the upstream's paths do not have (a service
        imported with `--base-path` is served under it; the API answers at its own paths)."""
        self.prefix = prefix.rstrip("/")
        self.tools = {tool.name: tool for tool in service.tools}
        self.checks = {t.name: OutputCheck(jsonschema_rs.Draft202012Validator(t.output_schema)) for t in service.tools}
        self.catalogue = catalogue
        self.client = client or OutboundClient(base_url)

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()

    def call(self, ctx: CallContext, tool: str, data: Mapping[str, object]) -> dict[str, object]:
        """Send `tool`'s call with input `data` to the upstream; its answer as the tool's output."""
        binding = self.tools[tool]
        route = binding.http_path
        if self.prefix and route.startswith(self.prefix + "/"):
            route = route.removeprefix(self.prefix)
        request = binding.http_shape.request(route, data, binding.http_method, styled=True)
        path = request.path + (f"?{urlencode(request.query, safe=QUERY_SAFE)}" if request.query else "")
        headers = dict(request.headers)
        if ctx.credentials:
            headers["Authorization"] = ctx.credentials
        content = None
        media = formbody.form_media(binding.content_types)
        if request.has_body and media is not None:
            content, headers["Content-Type"] = formbody.encode(form_of(request.body), media, binding.form_deep_objects)
        try:
            response = self.client.request(
                binding.http_method,
                path,
                json=request.body if request.has_body and content is None else None,
                content=content,
                headers=headers,
                deadline_s=self._time_left(ctx),
                max_bytes=MAX_ANSWER_BYTES,
            )
        except OutboundError as exc:
            raise self._error(binding, exc) from None
        answer = binding.http_shape.result(_decoded(response), response.headers, binding.output_schema)
        output = object_without_write_only(answer, binding.output_schema, binding.output_schema)
        broken = self.checks[tool].violation(output)
        if broken is not None:  # the API's fault, not the tool's: a bad gateway, not an internal error
            calllog.log_event(
                "upstream_answer_invalid", service=ctx.service, tool=tool, run_id=ctx.run_id, paths=[broken]
            )
            raise ToolError(
                f"the upstream API answered what its document does not allow (at {broken})", code="UPSTREAM_ERROR"
            )
        return output

    def _time_left(self, ctx: CallContext) -> float | None:
        if ctx.deadline is None:
            return None
        left = ctx.deadline - time.monotonic() - MARGIN_S
        if left <= 0:
            raise ToolError("no time was left to ask the upstream API", code="UPSTREAM_TIMEOUT")
        return left

    def _error(self, binding: ToolBinding, exc: OutboundError) -> ToolError:
        """The catalogued error of a failed upstream call: the tool's own code for a status the API's
        document declared, else UPSTREAM_ERROR (or UPSTREAM_TIMEOUT)."""
        if exc.kind == "client_error" and exc.status is not None:
            code = self._code_for(binding, exc.status)
            if code is not None:
                return ToolError(f"the upstream API answered {exc.status}", code=code)
            if exc.status in INPUT_REFUSED:  # the caller's input, judged by the API: not a failure to retry
                return ToolError(f"the upstream API refused the input ({exc.status})", code="BAD_REQUEST")
            return ToolError(f"the upstream API refused the call with {exc.status}", code="UPSTREAM_ERROR")
        if exc.kind in ("timeout", "deadline"):
            return ToolError(f"the upstream API did not answer in time ({exc})", code="UPSTREAM_TIMEOUT")
        return ToolError(f"the upstream API failed: {exc}", code="UPSTREAM_ERROR")

    def _code_for(self, binding: ToolBinding, status: int) -> ErrorCode | None:
        for code in binding.errors:
            entry = self.catalogue.get(code)
            if entry is not None and entry.status == status:
                return entry.code
        return None


def form_of(body: object) -> object:
    """A body sent on to the API as a form, its null fields left out: a form has no null (kumitate's own
    form would spell it `null`, which the API reads as that text: Lob's nullable `lob_campaign_id`, whose
    pattern the text breaks), and a field it does not send is a form's way of giving no value."""
    if not isinstance(body, dict):
        return body
    return {name: value for name, value in body.items() if value is not None}


def _decoded(response: httpx.Response) -> object:
    """The answer's body as data: JSON decoded, text as text, nothing as None."""
    if not response.content:
        return None
    media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        try:
            return response.json()
        except ValueError:
            raise ToolError("the upstream API answered invalid JSON", code="UPSTREAM_ERROR") from None
    return response.text
