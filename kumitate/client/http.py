"""The HTTP backends: a typed client's calls on the /v1 routes, over httpx (sync and async)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import httpx

from kumitate import formbody
from kumitate.bindings import fill_path
from kumitate.client.replies import no_answer, was_sent
from kumitate.client.wire import IDEMPOTENCY_HEADER, Call, Reply, bearer
from kumitate.httpshape import HttpShape
from kumitate.outbound.retry import retry_after_s

__all__ = ["AsyncHttpBackend", "HttpBackend", "shaped_body", "shaped_request"]


def shaped_request(
    shape: HttpShape,
    path: str,
    arguments: object,
    method: str = "POST",
    content_types: Sequence[str] = (formbody.JSON,),
    deep_objects: Collection[str] = (),
) -> tuple[str, dict[str, Any]]:
    """A tool's flat input as httpx's path and keywords, where its REST shape (kumitate.httpshape) puts
    each property: the example runners and the typed clients send what the route reads, as JSON, or as
    the form a form-only tool takes (its `deep_objects` in deepObject style). Arguments that are no object
    (a test's bad input) go as the body, as they came."""
    if not isinstance(arguments, Mapping):
        return path, {"json": arguments}
    request = shape.request(path, arguments, method) if not shape.plain else None
    body = arguments if request is None else request.body
    kwargs: dict[str, Any] = {} if request is None else {"params": request.query, "headers": request.headers}
    if request is None or request.has_body:
        form = formbody.form_media(content_types)
        if form is None:
            kwargs["json"] = body
        else:
            kwargs["content"], media = formbody.encode(body, form, deep_objects)
            kwargs["headers"] = {**kwargs.get("headers", {}), "Content-Type": media}
    return path if request is None else request.path, kwargs


def shaped_body(shape: HttpShape, response: httpx.Response, output_schema: Mapping[str, Any] | None = None) -> object:
    """A success's flat output read back from its REST shape (the body, headers, or nothing), each header
    read as its property's type where the tool's `output_schema` is given (HttpShape.result); an error's
    body (the catalogue's envelope) as it came."""
    decoded = response.json() if response.content else None
    if response.status_code >= 300 or shape.plain:
        return decoded
    return shape.result(decoded, response.headers, output_schema)


def _http_request(call: Call) -> tuple[str, str, dict[str, Any]]:
    headers = {}
    if call.run_id:
        headers["X-Run-Id"] = call.run_id
    if call.idempotency_key:
        headers[IDEMPOTENCY_HEADER] = call.idempotency_key
    if not call.op.http_shape.plain and call.arguments is not None:
        path, shaped = shaped_request(call.op.http_shape, call.op.http_path, call.arguments, call.op.http_method)
        shaped["headers"] = {**shaped["headers"], **headers}
        return call.op.http_method, path, shaped
    kwargs: dict[str, Any] = {"headers": headers}
    if call.arguments is not None:
        kwargs["json"] = call.arguments
    return call.op.http_method, fill_path(call.op.http_path, call.params), kwargs


def _http_reply(call: Call, response: httpx.Response) -> Reply:
    ok = response.status_code < 400
    if not call.op.http_shape.plain and ok:
        return Reply(ok=True, body=shaped_body(call.op.http_shape, response), status=response.status_code)
    if ok and not response.headers.get("content-type", "").startswith("application/json"):
        return Reply(ok=True, body=response.content, status=response.status_code)
    try:
        body = response.json()
    except ValueError:
        body = None
    return Reply(ok=ok, body=body, status=response.status_code, retry_after_s=retry_after_s(response.headers))


class HttpBackend:
    """The /v1 routes over a sync httpx.Client (pass your own `client` for hooks, proxies, TLS)."""

    def __init__(
        self, base_url: str, *, token: str | None = None, timeout_s: float = 30.0, client: httpx.Client | None = None
    ) -> None:
        self._http = client or httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s)
        self._http.headers.update(bearer(token))

    def send(self, call: Call) -> Reply:
        """Send the call to its /v1 route; a transport failure becomes a Reply that says whether it was sent."""
        method, path, kwargs = _http_request(call)
        try:
            return _http_reply(call, self._http.request(method, path, **kwargs))
        except httpx.TransportError as exc:
            return no_answer(exc, call, sent=was_sent(exc))

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()


class AsyncHttpBackend:
    """The /v1 routes over an httpx.AsyncClient."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout_s: float = 30.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._http = client or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout_s)
        self._http.headers.update(bearer(token))

    async def send(self, call: Call) -> Reply:
        """Send the call to its /v1 route; a transport failure becomes a Reply that says whether it was sent."""
        method, path, kwargs = _http_request(call)
        try:
            return _http_reply(call, await self._http.request(method, path, **kwargs))
        except httpx.TransportError as exc:
            return no_answer(exc, call, sent=was_sent(exc))

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._http.aclose()
