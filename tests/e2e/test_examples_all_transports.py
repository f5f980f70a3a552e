"""Every spec example, on HTTP, MCP in memory, MCP over streamable HTTP and MCP over stdio.

Each transport must give the declared result, and all four the same structured body.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from codegen.examples import Result, run_all
from codegen.specs import SpecTree, ToolSpec
from kumitate.runtime import Runtime
from kumitate.settings import Settings
from kumitate.transports.mcp import build_server
from tests.conftest import REPO, LiveServer, server_env

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
BODIES: dict[str, dict[str, Any]] = {}


async def _mcp_call(client: Client, tool: ToolSpec, arguments: Any) -> Result:
    result = await client.call_tool(tool.name, arguments, raise_on_error=False)
    return Result(ok=not result.is_error, body=result.structured_content)


async def _run_mcp(client: Client, tree: SpecTree) -> tuple[list[str], dict[str, Any]]:
    async with client:
        return await run_all(tree, lambda tool, args: _mcp_call(client, tool, args))


async def test_examples_over_http(live_server: LiveServer, spec_tree: SpecTree) -> None:
    async with httpx.AsyncClient(base_url=live_server.url, timeout=60) as http:

        async def call(tool: ToolSpec, arguments: Any) -> Result:
            response = await http.request(tool.http_method, tool.http_path, json=arguments)
            return Result(ok=response.status_code == 200, body=response.json())

        failures, BODIES["http"] = await run_all(spec_tree, call)
    assert not failures, "\n".join(failures)


async def test_examples_over_mcp_in_memory(tmp_path: Path, spec_tree: SpecTree) -> None:
    runtime = Runtime(Settings(data_dir=tmp_path, sample_dir=REPO / "data", public_base_url="http://127.0.0.1:8000"))
    try:
        failures, BODIES["mcp-memory"] = await _run_mcp(Client(build_server(runtime)), spec_tree)
    finally:
        runtime.close()
    assert not failures, "\n".join(failures)


async def test_examples_over_mcp_streamable_http(live_server: LiveServer, spec_tree: SpecTree) -> None:
    failures, BODIES["mcp-http"] = await _run_mcp(Client(f"{live_server.url}/mcp"), spec_tree)
    assert not failures, "\n".join(failures)


async def test_examples_over_mcp_stdio(tmp_path: Path, spec_tree: SpecTree) -> None:
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "kumitate", "mcp", "--stdio"],
        cwd=str(REPO),
        env=server_env(tmp_path),
        keep_alive=False,
    )
    failures, BODIES["mcp-stdio"] = await _run_mcp(Client(transport), spec_tree)
    assert not failures, "\n".join(failures)


def test_all_transports_agree(spec_tree: SpecTree) -> None:
    """Read-only tools give the same body on every transport (a writing tool may answer a rerun differently)."""
    if len(BODIES) < 4:
        pytest.skip(f"needs the four transport runs in this session (have {sorted(BODIES)})")
    read_only = {f"{t.service}.{t.name}" for t in spec_tree.all_tools() if t.annotations.get("readOnlyHint")}
    reference = {k: v for k, v in BODIES["http"].items() if k.split(":")[0] in read_only}
    assert reference
    for name, bodies in BODIES.items():
        differing = [key for key in reference if _origin_free(bodies.get(key)) != _origin_free(reference[key])]
        assert not differing, f"{name} differs from http on {differing}"


def _origin_free(value: Any) -> Any:
    """A result URL starts with the address the caller used (README: Public URLs), which differs by
    transport (a socket's port, stdio's configured address): compare what follows it."""
    if isinstance(value, dict):
        return {k: _origin_free(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_origin_free(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"^https?://[^/]+", "<origin>", value)
    return value
