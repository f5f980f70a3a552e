"""The MCP surface as clients receive it: `tools/list` bytes and estimated tokens per endpoint.

python -m bench.mcp_surface [--json]

Lists the tools of every service endpoint (/mcp/<service>), every named toolset (/mcp/<toolset>) and
the combined /mcp through a real fastmcp client against in-process servers, and measures the compact
JSON of the `tools` array (the same estimate as the reference docs: codegen.docs.estimate_tokens).
Then what the smaller bills of issue 29 item 7 leave of /mcp (kumitate/transports/mcp/listing.py):
its search mode (KUMITATE_MCP_TOOL_SEARCH=1), and the listing a token holding one service's scopes
gets there (the same filter, applied to the in-memory listing).
Not part of `make bench` (it times nothing): it is the figure issues 22 and 29 track.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from fastmcp import Client

from codegen.docs import estimate_tokens
from kumitate.runtime import Runtime
from kumitate.settings import Settings
from kumitate.transports.mcp import build_server
from kumitate.transports.mcp.listing import visible


async def _list(server: Any, scopes: frozenset[str] | None = None) -> str:
    async with Client(server) as client:
        tools = await client.list_tools()
    if scopes is not None:
        allowed = {t.name for t in visible(await server.list_tools(), scopes)}
        tools = [t for t in tools if t.name in allowed]
    entries = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    return json.dumps(entries, ensure_ascii=False, separators=(",", ":"))


def _row(path: str, text: str) -> tuple[str, int, int, int]:
    return (path, len(json.loads(text)), len(text.encode()), estimate_tokens(text))


async def measure() -> list[tuple[str, int, int, int]]:
    """(endpoint, tools, bytes, tokens) per endpoint."""
    with tempfile.TemporaryDirectory() as tmp:
        runtime = Runtime(Settings.from_env(data_dir=Path(tmp) / "var"))
        try:
            rows = []
            endpoints: list[tuple[str, dict[str, Any]]] = [(f"/mcp/{s}", {"services": [s]}) for s in runtime.services]
            endpoints += [(f"/mcp/{t}", {"toolset": t}) for t in runtime.toolsets]
            endpoints.append(("/mcp", {}))
            for path, kwargs in endpoints:
                rows.append(_row(path, await _list(build_server(runtime, **kwargs))))
            for service in runtime.services:
                tools = runtime.services[service].tools
                scopes = frozenset().union(*(t.policy.required_scopes for t in tools))
                scoped = await _list(build_server(runtime), scopes)
                rows.append(_row(f"/mcp, {service} scope only", scoped))
            runtime.settings = runtime.settings.model_copy(update={"mcp_tool_search": True})
            rows.append(_row("/mcp, search mode", await _list(build_server(runtime))))
            return rows
        finally:
            runtime.close()


def main() -> None:
    rows = asyncio.run(measure())
    if "--json" in sys.argv:
        print(json.dumps([dict(zip(("endpoint", "tools", "bytes", "tokens"), r, strict=True)) for r in rows]))
        return
    print(f"{'endpoint':32} {'tools':>5} {'bytes':>8} {'tokens':>7}")
    for path, n, size, tokens in rows:
        print(f"{path:32} {n:5} {size:8} {tokens:7}")


if __name__ == "__main__":
    main()
