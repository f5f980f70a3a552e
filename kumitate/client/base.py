"""The client bases the generated typed clients extend: `SyncClient` and `AsyncClient`.

A generated method names its `Op` and models and calls `_call`; the base makes the `Call` (with an
idempotency key, made once per call and sent with every attempt of it, so a retry replays the first
result instead of running the tool twice), sends it through its backend, and retries a retryable error
as its `RetryPolicy` says (the server's Retry-After, else the backoff) or raises the error's class.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Self, TypeVar, Unpack

from pydantic import BaseModel

from kumitate.client.http import AsyncHttpBackend, HttpBackend
from kumitate.client.mcp import BlockingBackend, McpBackend
from kumitate.client.replies import error_from
from kumitate.client.wire import Arguments, AsyncBackend, Backend, Call, CallOptions, Op, Reply
from kumitate.errors import ToolError
from kumitate.outbound.retry import CLIENT_RETRY, RetryPolicy

__all__ = ["AsyncClient", "SyncClient"]

M = TypeVar("M", bound=BaseModel)


def _arguments(value: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dict(value)


def _result(reply: Reply, model: type[M] | None) -> M | object:
    if model is None or not isinstance(reply.body, dict | list):
        return reply.body
    return model.model_validate(reply.body)


class _Base:
    SERVICE: ClassVar[str] = ""
    ERRORS: ClassVar[Mapping[str, type[ToolError]]] = {}
    retry: RetryPolicy

    @classmethod
    def mcp(
        cls, base_url: str, *, token: str | None = None, timeout_s: float = 30.0, retry: RetryPolicy = CLIENT_RETRY
    ) -> Self:
        """The service's own MCP endpoint, `<base_url>/mcp/<service>`, over streamable HTTP."""
        url = f"{base_url.rstrip('/')}/mcp/{cls.SERVICE}"
        return cls._over_mcp(McpBackend(url, token=token, timeout_s=timeout_s), retry=retry)

    @classmethod
    def stdio(
        cls,
        command: Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy = CLIENT_RETRY,
    ) -> Self:
        """A `kumitate mcp --stdio --service <service>` child process (or your own command)."""
        import sys

        command = command or [sys.executable, "-m", "kumitate", "mcp", "--stdio", "--service", cls.SERVICE]
        return cls._over_mcp(McpBackend(command, env=env, cwd=cwd, timeout_s=timeout_s), retry=retry)

    @classmethod
    def _over_mcp(cls, backend: McpBackend, *, retry: RetryPolicy) -> Self:
        raise NotImplementedError

    def _prepare(self, op: Op, arguments: Arguments, options: CallOptions) -> Call:
        key = options.get("idempotency_key") or (uuid.uuid4().hex if op.idempotent else None)
        args = None if arguments is None else _arguments(arguments)
        return Call(op, args, dict(options.get("params") or {}), options.get("run_id"), key)

    def _wait_or_raise(self, reply: Reply, attempt: int) -> float:
        """How long to wait before the next attempt of a failed call, or its error when none is left:
        only a retryable error is retried, and the server's Retry-After is honoured when longer than
        the backoff."""
        error = error_from(reply, self.ERRORS)
        wait = self.retry.wait(attempt, asked_s=error.retry_after_s) if error.retryable else None
        if wait is None:
            raise error
        return wait


class SyncClient(_Base):
    """Blocking calls over a `Backend`: `.http(url)`, `.mcp(url)` or `.stdio(command)`."""

    def __init__(self, backend: Backend, *, retry: RetryPolicy = CLIENT_RETRY) -> None:
        self.backend = backend
        self.retry = retry
        self.sleep: Callable[[float], None] = time.sleep

    @classmethod
    def http(
        cls, base_url: str, *, token: str | None = None, timeout_s: float = 30.0, retry: RetryPolicy = CLIENT_RETRY
    ) -> Self:
        """A client of the /v1 routes at `base_url` (bearer `token` if given)."""
        return cls(HttpBackend(base_url, token=token, timeout_s=timeout_s), retry=retry)

    @classmethod
    def _over_mcp(cls, backend: McpBackend, *, retry: RetryPolicy) -> Self:
        return cls(BlockingBackend(backend), retry=retry)

    def _call(self, op: Op, arguments: Arguments, model: type[M] | None, **options: Unpack[CallOptions]) -> Any:  # noqa: ANN401  (the generated method declares its op's type)
        """The op's result: its model, or a resource's bytes or JSON (the generated method that calls this
        declares which, so the result is not narrowed here)."""
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

    def __init__(self, backend: AsyncBackend, *, retry: RetryPolicy = CLIENT_RETRY) -> None:
        self.backend = backend
        self.retry = retry
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    @classmethod
    def http(
        cls, base_url: str, *, token: str | None = None, timeout_s: float = 30.0, retry: RetryPolicy = CLIENT_RETRY
    ) -> Self:
        """A client of the /v1 routes at `base_url` (bearer `token` if given)."""
        return cls(AsyncHttpBackend(base_url, token=token, timeout_s=timeout_s), retry=retry)

    @classmethod
    def _over_mcp(cls, backend: McpBackend, *, retry: RetryPolicy) -> Self:
        return cls(backend, retry=retry)

    async def _call(self, op: Op, arguments: Arguments, model: type[M] | None, **options: Unpack[CallOptions]) -> Any:  # noqa: ANN401  (as SyncClient._call)
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
