"""The runtime under the generated typed clients (generated/<service>/client.py).

A generated client holds one method per tool and resource and nothing else: it names the
operation (an `Op`), the input and output models, and calls `_call` / `_read` here. This
module owns everything about the wire: the backends (HTTP over httpx, sync and async; MCP
over fastmcp's Client, streamable HTTP or stdio), turning a catalogue error body into the
generated exception class of its code, retrying retryable errors after the server's
Retry-After (bounded), and the idempotency key, made once per call and sent with every
attempt of it, so a retry replays the first result instead of running the tool twice.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Self, TypedDict, TypeVar, Unpack

import httpx
from pydantic import BaseModel

from kumitate.bindings import fill_path
from kumitate.errors import STATUS_CODES, ErrorCode, ToolError
from kumitate.outbound import retry_after_s
from kumitate.policies.idempotency import KEY_ARGUMENT as IDEMPOTENCY_ARGUMENT

__all__ = [
    "IDEMPOTENCY_ARGUMENT",
    "IDEMPOTENCY_HEADER",
    "NO_RETRY",
    "AsyncBackend",
    "AsyncClient",
    "AsyncHttpBackend",
    "Backend",
    "BlockingBackend",
    "Call",
    "HttpBackend",
    "McpBackend",
    "Op",
    "Reply",
    "RetryPolicy",
    "SyncClient",
    "error_from",
    "mcp_result_body",
]

M = TypeVar("M", bound=BaseModel)

IDEMPOTENCY_HEADER = "Idempotency-Key"


Arguments = BaseModel | Mapping[str, Any] | None
"""A call's arguments: the generated input model, or its fields as a mapping (None: no arguments)."""


class CallOptions(TypedDict, total=False):
    """What a generated client method passes beside its arguments: the route's parameters, the run id to
    send, and an Idempotency-Key (one is made for an idempotent operation that names none)."""

    params: Mapping[str, str] | None
    run_id: str | None
    idempotency_key: str | None


@dataclass(frozen=True, slots=True)
class Op:
    """One tool or resource as the wire sees it (from the spec, via the generated client)."""

    service: str
    name: str
    http_method: str
    http_path: str
    idempotent: bool = False
    uri: str = ""
    """Set for a resource: its MCP URI template; `http_path` is then its GET route."""


@dataclass(frozen=True, slots=True)
class Reply:
    """What a backend got back: a success body, or a failure with whatever the server said."""

    ok: bool
    body: Any
    status: int | None = None
    retry_after_s: float | None = None


@dataclass(frozen=True, slots=True)
class Call:
    """One request a client sends: the operation, its arguments or path parameters, and the ids it carries."""

    op: Op
    arguments: dict[str, Any] | None
    params: dict[str, str]
    run_id: str | None
    idempotency_key: str | None


class Backend(Protocol):
    """How a blocking client reaches the server (HTTP, or MCP through a portal)."""

    def send(self, call: Call) -> Reply:
        """Send one call and return the server's answer, or a Reply saying it never arrived."""

    def close(self) -> None:
        """Release the connection(s); the backend is not used afterwards."""


class AsyncBackend(Protocol):
    """How an async client reaches the server (HTTP, MCP, or a runtime in the same process)."""

    async def send(self, call: Call) -> Reply:
        """Send one call and return the server's answer, or a Reply saying it never arrived."""

    async def aclose(self) -> None:
        """Release the connection(s) or session; the backend is not used afterwards."""


# -- errors -------------------------------------------------------------------------------


def error_from(reply: Reply, classes: Mapping[str, type[ToolError]]) -> ToolError:
    """The generated class of the body's code, carrying the server's message, details and ids.
    A body that is not the catalogue's envelope (a proxy's 502 page) gets a code from the status."""
    body = reply.body if isinstance(reply.body, dict) else {}
    err = body.get("error") if isinstance(body.get("error"), dict) else None
    if err is not None and isinstance(err.get("code"), str):
        code, message = err["code"], str(err.get("message", ""))
        details = {k: v for k, v in err.items() if k not in ("code", "message", "retryable")}
        retryable = bool(err.get("retryable"))
    else:
        status = reply.status or 0
        code = STATUS_CODES.get(status) or ("SERVICE_UNAVAILABLE" if status >= 500 else "BAD_REQUEST")
        message, details = f"HTTP {status} without a catalogue error body", {}
        retryable = code in ("SERVICE_UNAVAILABLE", "RATE_LIMITED", "REQUEST_TIMEOUT")
    cls = classes.get(code)
    exc = cls(message, details=details) if cls is not None else ToolError(message, code=code, details=details)
    exc.retryable, exc.status = retryable, reply.status
    exc.run_id, exc.trace_id = body.get("run_id"), body.get("trace_id")
    exc.retry_after_s = reply.retry_after_s
    if exc.retry_after_s is None and isinstance(details.get("retry_after_ms"), int | float):
        exc.retry_after_s = details["retry_after_ms"] / 1000
    return exc


def _no_answer(exc: Exception, call: Call, *, sent: bool) -> Reply:
    """No answer from the server. A request that was never sent (no connection) ran nothing, so it
    is retryable; a lost answer (read time-out, reset) may have run the tool, so it is retried
    only where the idempotency key makes a repeat safe."""
    code: ErrorCode = "REQUEST_TIMEOUT" if sent else "SERVICE_UNAVAILABLE"
    message = f"no answer from the server: {type(exc).__name__}: {exc}"
    retryable = not sent or call.op.idempotent
    return Reply(ok=False, body={"error": {"code": code, "message": message, "retryable": retryable}})


def _sent(exc: httpx.TransportError) -> bool:
    return not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retry a retryable error up to `attempts` calls in all, waiting what the server asked
    (Retry-After) or else an exponential backoff; a wait over `max_wait_s` is not waited out."""

    attempts: int = 3
    backoff_s: float = 0.5
    max_wait_s: float = 30.0

    def wait(self, error: ToolError, attempt: int) -> float | None:
        """Seconds to wait before attempt `attempt + 1` after `error`, or None to give up: only a
        retryable error is retried, the server's Retry-After wins over the backoff, and a wait past
        `max_wait_s` is not taken."""
        if not error.retryable or attempt >= self.attempts:
            return None
        asked = error.retry_after_s
        wait = float(asked) if asked is not None else self.backoff_s * 2 ** (attempt - 1)
        return wait if wait <= self.max_wait_s else None


NO_RETRY = RetryPolicy(attempts=1)


# -- HTTP backends ----------------------------------------------------------------------------


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


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
        self._http.headers.update(_headers(token))

    def send(self, call: Call) -> Reply:
        """Send the call to its /v1 route; a transport failure becomes a Reply that says whether it was sent."""
        method, path, kwargs = _http_request(call)
        try:
            return _http_reply(self._http.request(method, path, **kwargs))
        except httpx.TransportError as exc:
            return _no_answer(exc, call, sent=_sent(exc))

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
        self._http.headers.update(_headers(token))

    async def send(self, call: Call) -> Reply:
        """Send the call to its /v1 route; a transport failure becomes a Reply that says whether it was sent."""
        method, path, kwargs = _http_request(call)
        try:
            return _http_reply(await self._http.request(method, path, **kwargs))
        except httpx.TransportError as exc:
            return _no_answer(exc, call, sent=_sent(exc))

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._http.aclose()


# -- MCP backend ------------------------------------------------------------------------------


def mcp_result_body(result: Any) -> Any:
    """The body of an MCP tool result (a fastmcp or MCP SDK `CallToolResult`): a success's
    `structuredContent`; for an `isError` result, which carries none so that strict clients
    accept it (kumitate/transports/mcp/results.py), the catalogue body its text content holds
    (`{"error": {"code", ...}, "run_id", "trace_id"}`, as HTTP sends it). None without either."""
    if result.structured_content is not None:
        return result.structured_content
    text = next((c.text for c in result.content or () if getattr(c, "text", None) is not None), None)
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


class McpBackend:
    """MCP over fastmcp's Client: a streamable-HTTP URL (`…/mcp` or `…/mcp/<service>`) or a stdio
    command (`["kumitate", "mcp", "--stdio"]`). The session opens on first use and stays open
    until `aclose` (the client is reentrant, so calls may overlap)."""

    def __init__(
        self,
        target: str | Sequence[str],
        *,
        token: str | None = None,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        from fastmcp import Client
        from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

        transport: Any
        if isinstance(target, str):
            transport = StreamableHttpTransport(target, headers=_headers(token))
        else:
            command = list(target)
            transport = StdioTransport(
                command=command[0], args=command[1:], env=dict(env if env is not None else os.environ), cwd=cwd
            )
        self._client = Client(transport, timeout=timeout_s)
        self._open = False
        self._lock = asyncio.Lock()

    async def _session(self) -> Any:
        async with self._lock:  # concurrent first calls open one session, not one each
            if not self._open:
                await self._client.__aenter__()
                self._open = True
        return self._client

    async def send(self, call: Call) -> Reply:
        """Call the tool (or read the resource) over the MCP session, opening it on first use."""
        try:
            client = await self._session()
        except (OSError, RuntimeError, TimeoutError) as exc:
            return _no_answer(exc, call, sent=False)
        from mcp.shared.exceptions import MCPError

        try:
            meta = {"run_id": call.run_id} if call.run_id else None
            if call.op.uri:
                return await self._read(client, call)
            arguments = dict(call.arguments or {})
            if call.idempotency_key:
                arguments[IDEMPOTENCY_ARGUMENT] = call.idempotency_key
            result = await client.call_tool(call.op.name, arguments, raise_on_error=False, meta=meta)
        except MCPError as exc:  # an unknown tool: JSON-RPC -32602 with the catalogue body as data
            return Reply(ok=False, body=exc.data)
        except (OSError, RuntimeError, TimeoutError) as exc:
            return _no_answer(exc, call, sent=True)
        return Reply(ok=not result.is_error, body=mcp_result_body(result))

    async def _read(self, client: Any, call: Call) -> Reply:
        from mcp.shared.exceptions import MCPError

        uri = call.op.uri
        for name, value in call.params.items():
            uri = uri.replace(f"{{{name}}}", value)
        try:
            contents = await client.read_resource(uri)
        except MCPError as exc:  # a catalogue error travels as JSON-RPC error data (transports/mcp/results.py)
            return Reply(ok=False, body=exc.data)
        first = contents[0]
        if getattr(first, "blob", None) is not None:
            return Reply(ok=True, body=base64.b64decode(first.blob))
        if first.mime_type and "json" in first.mime_type:
            return Reply(ok=True, body=json.loads(first.text))
        return Reply(ok=True, body=first.text.encode())

    async def aclose(self) -> None:
        """End the MCP session if one was opened."""
        async with self._lock:
            if self._open:
                self._open = False
                await self._client.__aexit__(None, None, None)


class BlockingBackend:
    """An async backend (MCP) behind the blocking interface: it runs on an event loop of its own,
    on a thread, so a blocking client can call over MCP from code that has no loop."""

    def __init__(self, backend: AsyncBackend) -> None:
        from anyio.from_thread import start_blocking_portal

        self._backend = backend
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()

    def send(self, call: Call) -> Reply:
        """Run the async backend's `send` on the portal's event loop and wait for it."""
        return self._portal.call(self._backend.send, call)

    def close(self) -> None:
        """Close the async backend, then stop the portal's event loop thread."""
        try:
            self._portal.call(self._backend.aclose)
        finally:
            self._portal_cm.__exit__(None, None, None)


# -- the client bases the generated code extends --------------------------------------------


def _arguments(value: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dict(value)


def _result(reply: Reply, model: type[M] | None) -> Any:
    if model is None or not isinstance(reply.body, dict | list):
        return reply.body
    return model.model_validate(reply.body)


class _Base:
    SERVICE: ClassVar[str] = ""
    ERRORS: ClassVar[Mapping[str, type[ToolError]]] = {}
    retry: RetryPolicy

    @classmethod
    def mcp(cls, base_url: str, *, token: str | None = None, timeout_s: float = 30.0, **kw: Any) -> Self:
        """The service's own MCP endpoint, `<base_url>/mcp/<service>`, over streamable HTTP."""
        url = f"{base_url.rstrip('/')}/mcp/{cls.SERVICE}"
        return cls._over_mcp(McpBackend(url, token=token, timeout_s=timeout_s), **kw)

    @classmethod
    def stdio(
        cls,
        command: Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout_s: float = 60.0,
        **kw: Any,
    ) -> Self:
        """A `kumitate mcp --stdio --service <service>` child process (or your own command)."""
        import sys

        command = command or [sys.executable, "-m", "kumitate", "mcp", "--stdio", "--service", cls.SERVICE]
        return cls._over_mcp(McpBackend(command, env=env, cwd=cwd, timeout_s=timeout_s), **kw)

    @classmethod
    def _over_mcp(cls, backend: McpBackend, **kw: Any) -> Self:
        raise NotImplementedError

    def _prepare(self, op: Op, arguments: Arguments, options: CallOptions) -> Call:
        key = options.get("idempotency_key") or (uuid.uuid4().hex if op.idempotent else None)
        args = None if arguments is None else _arguments(arguments)
        return Call(op, args, dict(options.get("params") or {}), options.get("run_id"), key)

    def _wait_or_raise(self, reply: Reply, attempt: int) -> float:
        """How long to wait before the next attempt of a failed call, or its error when none is left."""
        error = error_from(reply, self.ERRORS)
        wait = self.retry.wait(error, attempt)
        if wait is None:
            raise error
        return wait


class SyncClient(_Base):
    """Blocking calls over a `Backend`: `.http(url)`, `.mcp(url)` or `.stdio(command)`."""

    def __init__(self, backend: Backend, *, retry: RetryPolicy = RetryPolicy()) -> None:
        self.backend = backend
        self.retry = retry
        self.sleep: Callable[[float], None] = time.sleep

    @classmethod
    def http(cls, base_url: str, *, token: str | None = None, timeout_s: float = 30.0, **kw: Any) -> Self:
        """A client of the /v1 routes at `base_url` (bearer `token` if given)."""
        return cls(HttpBackend(base_url, token=token, timeout_s=timeout_s), **kw)

    @classmethod
    def _over_mcp(cls, backend: McpBackend, **kw: Any) -> Self:
        return cls(BlockingBackend(backend), **kw)

    def _call(self, op: Op, arguments: Arguments, model: type[M] | None, **options: Unpack[CallOptions]) -> Any:
        call = self._prepare(op, arguments, options)
        for attempt in itertools.count(1):
            reply = self.backend.send(call)
            if reply.ok:
                return _result(reply, model)
            self.sleep(self._wait_or_raise(reply, attempt))

    def close(self) -> None:
        """Close the backend's connections."""
        self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Base):
    """Awaitable calls over an `AsyncBackend`: `.http(url)`, `.mcp(url)` or `.stdio(command)`."""

    def __init__(self, backend: AsyncBackend, *, retry: RetryPolicy = RetryPolicy()) -> None:
        self.backend = backend
        self.retry = retry
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    @classmethod
    def http(cls, base_url: str, *, token: str | None = None, timeout_s: float = 30.0, **kw: Any) -> Self:
        """A client of the /v1 routes at `base_url` (bearer `token` if given)."""
        return cls(AsyncHttpBackend(base_url, token=token, timeout_s=timeout_s), **kw)

    @classmethod
    def _over_mcp(cls, backend: McpBackend, **kw: Any) -> Self:
        return cls(backend, **kw)

    async def _call(self, op: Op, arguments: Arguments, model: type[M] | None, **options: Unpack[CallOptions]) -> Any:
        call = self._prepare(op, arguments, options)
        for attempt in itertools.count(1):
            reply = await self.backend.send(call)
            if reply.ok:
                return _result(reply, model)
            await self.sleep(self._wait_or_raise(reply, attempt))

    async def aclose(self) -> None:
        """Close the backend's connections or session."""
        await self.backend.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
