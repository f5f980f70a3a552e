"""The HTTP backends: a typed client's calls on the /v1 routes, over httpx (sync and async)."""

from __future__ import annotations

from typing import Any

import httpx

from kumitate.bindings import fill_path
from kumitate.client.replies import no_answer, was_sent
from kumitate.client.wire import IDEMPOTENCY_HEADER, Call, Reply, bearer
from kumitate.outbound.retry import retry_after_s

__all__ = ["AsyncHttpBackend", "HttpBackend"]


def _http_request(call: Call) -> tuple[str, str, dict[str, Any]]:
    path = fill_path(call.op.http_path, call.params)
    headers = {}
    if call.run_id:
        headers["X-Run-Id"] = call.run_id
    if call.idempotency_key:
        headers[IDEMPOTENCY_HEADER] = call.idempotency_key
    kwargs: dict[str, Any] = {"headers": headers}
    if call.arguments is not None:
        kwargs["json"] = call.arguments
    return call.op.http_method, path, kwargs


def _http_reply(response: httpx.Response) -> Reply:
    ok = response.status_code < 400
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
            return _http_reply(self._http.request(method, path, **kwargs))
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
            return _http_reply(await self._http.request(method, path, **kwargs))
        except httpx.TransportError as exc:
            return no_answer(exc, call, sent=was_sent(exc))

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._http.aclose()
