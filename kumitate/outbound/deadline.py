"""The total deadline of an outbound fetch: every socket operation ends by it.

httpx's time-outs bound each read on its own, so an upstream that sends one byte just before each
read time-out could hold a call for ever. `total_deadline` sets the end of the whole fetch (never past
the tool call's own deadline: `CallContext.deadline`); a `deadline_client` gives connect, TLS and every
read and write only the time left of it, through the public API of httpx and httpcore.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

import httpcore
import httpx

from kumitate.context import current_call

if TYPE_CHECKING:
    import ssl

__all__ = ["deadline_client", "total_deadline"]

_DEADLINE: ContextVar[float | None] = ContextVar("kumitate_outbound_deadline", default=None)


@contextlib.contextmanager
def total_deadline(seconds: float) -> Iterator[float]:
    """Every fetch through a `deadline_client` inside this block ends by `seconds` from now (or by
    the tool call's own deadline, or an enclosing block's, whichever comes first): its monotonic value."""
    deadline = time.monotonic() + seconds
    for other in (_DEADLINE.get(), _call_deadline()):
        if other is not None:
            deadline = min(deadline, other)
    token = _DEADLINE.set(deadline)
    try:
        yield deadline
    finally:
        _DEADLINE.reset(token)


def _call_deadline() -> float | None:
    call = current_call()
    return call.deadline if call is not None else None


def _left(timeout: float | None, exc: type[Exception]) -> float | None:
    """The socket time-out for one operation: httpx's, cut to what is left of the deadline."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise exc("the deadline of the whole request has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write ends by the current fetch's deadline. Pooled
    connections outlive a fetch: the deadline is read per operation, so it is always the
    fetch that uses the connection now."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _DeadlineStream(
            self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout))
        )

    def get_extra_info(self, info: str) -> object:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        timeout = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


HTTPCORE_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)
"""httpcore's errors as the httpx ones callers catch, the most specific first (httpx's own transport
maps them the same way)."""


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        mapped = next((to for source, to in HTTPCORE_ERRORS if isinstance(exc, source)), None)
        if mapped is None:
            raise
        raise mapped(str(exc)) from exc


class _ResponseBody(httpx.SyncByteStream):
    """httpcore's response body, its errors raised as httpx's."""

    def __init__(self, inner: Iterable[bytes]) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._inner

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


class _DeadlineTransport(httpx.BaseTransport):
    """An httpx transport over an httpcore connection pool built on `_DeadlineBackend`, through the
    public API of both: httpx's `HTTPTransport` takes no network backend (it would have to be
    swapped into its private `_pool`), so this is the transport httpx documents for custom needs,
    sending each request through httpcore as `HTTPTransport.handle_request` does."""

    def __init__(self) -> None:
        self.pool = httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(), network_backend=_DeadlineBackend())

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        sent = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            answer = self.pool.handle_request(sent)
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_ResponseBody(cast(Iterable[bytes], answer.stream)),  # a sync pool's body is sync
            extensions=answer.extensions,
        )

    def close(self) -> None:
        with _httpx_errors():
            self.pool.close()


def deadline_client(**options: Any) -> httpx.Client:  # noqa: ANN401  (httpx.Client's keywords, as they are)
    """An httpx.Client whose fetches end by the `total_deadline` they run in (headers and body
    included), besides httpx's own per-operation `timeout`. Proxies from the environment are not
    used (a proxy's connections would not carry the deadline)."""
    return httpx.Client(transport=_DeadlineTransport(), trust_env=False, **options)
