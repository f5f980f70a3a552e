"""The MCP backend: a typed client's calls as MCP tool calls and resource reads, over fastmcp's Client
(streamable HTTP or stdio), and `BlockingBackend`, which puts it behind the blocking interface."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kumitate.client.replies import no_answer
from kumitate.client.wire import IDEMPOTENCY_ARGUMENT, AsyncBackend, Call, Reply, bearer

if TYPE_CHECKING:
    from fastmcp import Client
    from fastmcp.client.client import CallToolResult
    from fastmcp.client.transports import ClientTransport
    from mcp.types import CallToolResult as SdkCallToolResult

__all__ = ["BlockingBackend", "McpBackend", "mcp_result_body"]


def mcp_result_body(result: CallToolResult | SdkCallToolResult) -> Any:  # noqa: ANN401  (JSON its callers read as they find it)
    """The body of an MCP tool result (a fastmcp or MCP SDK `CallToolResult`): a success's
    `structuredContent`; for an `isError` result, which carries none so that strict clients
    accept it (kumitate/transports/mcp/results.py), the catalogue body its text content holds
    (`{"error": {"code", ...}, "run_id", "trace_id"}`, as HTTP sends it). None without either."""
    if result.structured_content is not None:
        return result.structured_content
    texts = (getattr(block, "text", None) for block in result.content or ())
    text = next((t for t in texts if t is not None), None)
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

        transport: ClientTransport
        if isinstance(target, str):
            transport = StreamableHttpTransport(target, headers=bearer(token))
        else:
            command = list(target)
            transport = StdioTransport(
                command=command[0], args=command[1:], env=dict(env if env is not None else os.environ), cwd=cwd
            )
        self._client: Client[ClientTransport] = Client(transport, timeout=timeout_s)
        self._open = False
        self._lock = asyncio.Lock()

    async def _session(self) -> Client[ClientTransport]:
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
            return no_answer(exc, call, sent=False)
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
            return no_answer(exc, call, sent=True)
        return Reply(ok=not result.is_error, body=mcp_result_body(result))

    async def _read(self, client: Client[ClientTransport], call: Call) -> Reply:
        from mcp.shared.exceptions import MCPError
        from mcp.types import BlobResourceContents

        uri = call.op.uri
        for name, value in call.params.items():
            uri = uri.replace(f"{{{name}}}", value)
        try:
            contents = await client.read_resource(uri)
        except MCPError as exc:  # a catalogue error travels as JSON-RPC error data (transports/mcp/results.py)
            return Reply(ok=False, body=exc.data)
        first = contents[0]
        if isinstance(first, BlobResourceContents):
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
