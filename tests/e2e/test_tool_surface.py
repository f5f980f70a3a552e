"""tools/list shows exactly the spec: input and output schemas, annotations, description; one service per /mcp/<service>."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from codegen.docs import mcp_description
from codegen.specs import SpecTree
from kumitate.runtime import Runtime
from kumitate.settings import Settings
from kumitate.transports.mcp import build_server, mcp_input_schema
from tests.conftest import REPO, LiveServer, seeded_copy, server_env

pytestmark = pytest.mark.anyio

ANNOTATIONS = {
    "readOnlyHint": "read_only_hint",
    "destructiveHint": "destructive_hint",
    "idempotentHint": "idempotent_hint",
    "openWorldHint": "open_world_hint",
}


async def test_tools_list_is_the_spec(tmp_path: Path, spec_tree: SpecTree, seeded_data_dir: Path) -> None:
    data_dir = seeded_copy(seeded_data_dir, tmp_path / "var")
    runtime = Runtime(Settings(data_dir=data_dir, sample_dir=REPO / "data", public_base_url="http://127.0.0.1:8000"))
    try:
        async with Client(build_server(runtime)) as client:
            listed = {tool.name: tool for tool in await client.list_tools()}
        bindings = {t.name: t for svc in runtime.services.values() for t in svc.tools}
    finally:
        runtime.close()
    assert set(listed) == {t.name for t in spec_tree.default_tools()}
    for spec in spec_tree.default_tools():
        tool = listed[spec.name]
        assert tool.input_schema == mcp_input_schema(bindings[spec.name])
        assert {k: v for k, v in tool.input_schema.items() if k != "properties"} == {
            k: v for k, v in spec.wire_input.items() if k != "properties"
        }
        assert tool.output_schema == spec.wire_output
        assert spec.description.strip() in tool.description and tool.description == mcp_description(spec)
        for key, attr in ANNOTATIONS.items():
            assert getattr(tool.annotations, attr) == spec.annotations.as_spec()[key], (spec.name, key)
        if spec.policy.get("idempotency"):
            assert "idempotency_key" in tool.input_schema["properties"]


@pytest.mark.slow
async def test_per_service_endpoints_and_stdio_filter(
    live_server: LiveServer, tmp_path: Path, spec_tree: SpecTree, seeded_data_dir: Path
) -> None:
    for svc in (s for s in spec_tree.services if not s.opt_in):  # the live server serves the default ones
        async with Client(f"{live_server.url}/mcp/{svc.name}") as client:
            assert {t.name for t in await client.list_tools()} == {t.name for t in svc.tools}
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "kumitate", "mcp", "--stdio", "--service", "stays"],
        cwd=str(REPO),
        env=server_env(seeded_copy(seeded_data_dir, tmp_path / "var")),
        keep_alive=False,
    )
    async with Client(transport) as client:
        assert [t.name for t in await client.list_tools()] == ["summarize_stays"]
