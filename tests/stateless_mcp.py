"""Raw 2026-07-28 (stateless) MCP JSON-RPC to an app's /mcp in process, for the tasks tests: what a
client of that revision sends (`Mcp-Method`/`Mcp-Name` headers, `_meta` with the client's identity and
capabilities) without a client library that speaks the tasks extension."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import InProcessApp

TASKS = "io.modelcontextprotocol/tasks"


def meta(client: str, **capabilities: Any) -> dict[str, Any]:
    """A request's `_meta`: protocol version, client info, and the client's capabilities."""
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }


async def rpc(
    app: InProcessApp, method: str, params: dict[str, Any], meta: dict[str, Any], name: str | None = None
) -> dict[str, Any]:
    """One request; the JSON-RPC reply (a result or an error), from a JSON or an SSE answer.
    `name` overrides the `Mcp-Name` header, which is otherwise the tool's name or the task's id."""
    name = name if name is not None else params.get("name") or params.get("taskId") or ""
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
        **({"Mcp-Name": name} if name else {}),
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params | {"_meta": meta}}
    answer = await app.http.post("/mcp", json=body, headers=headers)
    assert answer.status_code in (200, 400), answer.text  # a JSON-RPC error is 400
    text = answer.text
    reply: dict[str, Any] = json.loads(text.split("data: ", 1)[1] if text.startswith("event") else text)
    return reply
