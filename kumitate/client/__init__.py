"""The runtime under the generated typed clients (generated/<service>/client.py).

A generated client holds one method per tool and resource and nothing else: it names the
operation (an `Op`), the input and output models, and calls `_call` / `_read` here. This
package owns everything about the wire: the backends (HTTP over httpx, sync and async; MCP
over fastmcp's Client, streamable HTTP or stdio), turning a catalogue error body into the
generated exception class of its code, retrying retryable errors after the server's
Retry-After (bounded), and the idempotency key, made once per call and sent with every
attempt of it, so a retry replays the first result instead of running the tool twice.

One module per job: `wire` (the `Op`, `Call` and `Reply` a client and its backends exchange), `replies`
(a failed reply as its generated exception class), `http` and `mcp` (the backends), `base` (the
`SyncClient` and `AsyncClient` the generated code extends). The `RetryPolicy` is the one of
`kumitate.outbound.retry`, shared with `OutboundClient`. Import from `kumitate.client`.
"""

from __future__ import annotations

from kumitate.client.base import AsyncClient, SyncClient
from kumitate.client.http import AsyncHttpBackend, HttpBackend
from kumitate.client.mcp import BlockingBackend, McpBackend, mcp_result_body
from kumitate.client.replies import error_from
from kumitate.client.wire import (
    IDEMPOTENCY_ARGUMENT,
    IDEMPOTENCY_HEADER,
    AsyncBackend,
    Backend,
    Call,
    Op,
    Reply,
)
from kumitate.outbound.retry import CLIENT_RETRY, NO_RETRY, RetryPolicy

__all__ = [
    "CLIENT_RETRY",
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
