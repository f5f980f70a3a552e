"""Named toolsets (specs/toolsets.yaml): served at /mcp/<toolset> over streamable HTTP, behind the
same Host/Origin check as every MCP path, and over stdio with `kumitate mcp --stdio --toolset`."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.shared.exceptions import MCPError

from codegen.specs import SpecTree
from tests.conftest import REPO, LiveServer, seeded_copy, server_env

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _names(tree: SpecTree, toolset: str) -> set[str]:
    return {t.name for t in tree.toolset_tools(next(ts for ts in tree.toolsets if ts.name == toolset))}


async def test_each_toolset_serves_exactly_its_tools(live_server: LiveServer, spec_tree: SpecTree) -> None:
    assert spec_tree.toolsets
    for ts in spec_tree.toolsets:
        async with Client(f"{live_server.url}/mcp/{ts.name}") as client:
            assert {t.name for t in await client.list_tools()} == _names(spec_tree, ts.name)
    async with Client(f"{live_server.url}/mcp/diary") as client:  # spans two services
        with pytest.raises(MCPError) as raised:
            await client.call_tool("get_duplicate_stats", {}, raise_on_error=False)
        assert raised.value.data["error"]["code"] == "NOT_FOUND"


def test_a_toolset_path_is_behind_the_origin_check(live_server: LiveServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = httpx.post(f"{live_server.url}/mcp/diary", json=body, headers={"Origin": "https://evil.example"})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED"


async def test_stdio_serves_a_toolset(tmp_path: Path, spec_tree: SpecTree, seeded_data_dir: Path) -> None:
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "kumitate", "mcp", "--stdio", "--toolset", "household-reports"],
        cwd=str(REPO),
        env=server_env(seeded_copy(seeded_data_dir, tmp_path / "var")),
        keep_alive=False,
    )
    async with Client(transport) as client:
        assert {t.name for t in await client.list_tools()} == _names(spec_tree, "household-reports")
