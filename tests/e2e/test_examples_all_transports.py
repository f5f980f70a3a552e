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
from codegen.testing import http_caller
from kumitate.client import mcp_result_body
from kumitate.runtime import Runtime
from kumitate.transports.mcp import build_server
from tests.conftest import REPO, LiveServer, app_settings, seeded_copy, server_env

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
Run = tuple[list[str], dict[str, Any]]
"""(failures, body per example) of one transport's run of every example."""


async def _mcp_call(client: Client, tool: ToolSpec, arguments: Any) -> Result:
    result = await client.call_tool(tool.name, arguments, raise_on_error=False)
    return Result(ok=not result.is_error, body=mcp_result_body(result))


async def _run_mcp(client: Client, tree: SpecTree) -> Run:
    async with client:
        return await run_all(tree, lambda tool, args: _mcp_call(client, tool, args))


# One run per transport and module, as fixtures: each transport's test and the agreement test read
# the same run, whichever order they are run in.


@pytest.fixture(scope="module")
async def over_http(live_server: LiveServer, spec_tree: SpecTree) -> Run:
    async with httpx.AsyncClient(base_url=live_server.url, timeout=60) as http:
        return await run_all(spec_tree, http_caller(http))


@pytest.fixture(scope="module")
async def over_mcp_in_memory(
    tmp_path_factory: pytest.TempPathFactory, spec_tree: SpecTree, seeded_data_dir: Path
) -> Run:
    runtime = Runtime(app_settings(seeded_copy(seeded_data_dir, tmp_path_factory.mktemp("examples-memory") / "var")))
    try:
        return await _run_mcp(Client(build_server(runtime)), spec_tree)
    finally:
        runtime.close()


@pytest.fixture(scope="module")
async def over_mcp_streamable_http(live_server: LiveServer, spec_tree: SpecTree) -> Run:
    return await _run_mcp(Client(f"{live_server.url}/mcp"), spec_tree)


@pytest.fixture(scope="module")
async def over_mcp_stdio(tmp_path_factory: pytest.TempPathFactory, spec_tree: SpecTree, seeded_data_dir: Path) -> Run:
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "kumitate", "mcp", "--stdio"],
        cwd=str(REPO),
        env=server_env(seeded_copy(seeded_data_dir, tmp_path_factory.mktemp("examples-stdio") / "var")),
        keep_alive=False,
    )
    return await _run_mcp(Client(transport), spec_tree)


async def test_examples_over_http(over_http: Run) -> None:
    assert not over_http[0], "\n".join(over_http[0])


async def test_examples_over_mcp_in_memory(over_mcp_in_memory: Run) -> None:
    assert not over_mcp_in_memory[0], "\n".join(over_mcp_in_memory[0])


async def test_examples_over_mcp_streamable_http(over_mcp_streamable_http: Run) -> None:
    assert not over_mcp_streamable_http[0], "\n".join(over_mcp_streamable_http[0])


async def test_examples_over_mcp_stdio(over_mcp_stdio: Run) -> None:
    assert not over_mcp_stdio[0], "\n".join(over_mcp_stdio[0])


async def test_all_transports_agree(
    spec_tree: SpecTree, over_http: Run, over_mcp_in_memory: Run, over_mcp_streamable_http: Run, over_mcp_stdio: Run
) -> None:
    """Read-only tools give the same body on every transport (a writing tool may answer a rerun differently)."""
    read_only = {f"{t.service}.{t.name}" for t in spec_tree.all_tools() if t.annotations.read_only_hint}
    reference = {k: v for k, v in over_http[1].items() if k.split(":")[0] in read_only}
    assert reference
    runs = {"mcp-memory": over_mcp_in_memory, "mcp-http": over_mcp_streamable_http, "mcp-stdio": over_mcp_stdio}
    for name, (_, bodies) in runs.items():
        differing = [key for key in reference if _origin_free(bodies.get(key)) != _origin_free(reference[key])]
        assert not differing, f"{name} differs from http on {differing}"


def _origin_free(value: Any) -> Any:
    """A result URL starts with the address the caller used (docs/security.md: Public URLs), which differs by
    transport (a socket's port, stdio's configured address): compare what follows it."""
    if isinstance(value, dict):
        return {k: _origin_free(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_origin_free(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"^https?://[^/]+", "<origin>", value)
    return value
