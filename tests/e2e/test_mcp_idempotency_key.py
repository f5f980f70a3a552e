"""The MCP `idempotency_key` argument is checked against the schema MCP advertises for it (found by the MCP fuzzer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from kumitate.client import mcp_result_body
from kumitate.runtime import Runtime
from kumitate.settings import Settings
from kumitate.transports.mcp import build_server
from tests.conftest import REPO

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("key", [123, True, ["k"], {"k": 1}, "", "k" * 256])
async def test_a_malformed_key_is_bad_request_and_runs_nothing(tmp_path: Path, key: Any) -> None:
    runtime = Runtime(Settings(data_dir=tmp_path, sample_dir=REPO / "data", public_base_url="http://127.0.0.1:8000"))
    try:
        async with Client(build_server(runtime, ["household"])) as client:
            result = await client.call_tool(
                "restore_duplicate", {"transaction_id": 1, "idempotency_key": key}, raise_on_error=False
            )
    finally:
        runtime.close()
    assert result.is_error
    error = mcp_result_body(result)["error"]
    assert error["code"] == "BAD_REQUEST" and "idempotency_key" in error["message"]


async def test_a_well_formed_key_reaches_the_tool(tmp_path: Path) -> None:
    runtime = Runtime(Settings(data_dir=tmp_path, sample_dir=REPO / "data", public_base_url="http://127.0.0.1:8000"))
    try:
        async with Client(build_server(runtime, ["household"])) as client:
            result = await client.call_tool(
                "restore_duplicate", {"transaction_id": 999999, "idempotency_key": "k-1"}, raise_on_error=False
            )
    finally:
        runtime.close()
    assert mcp_result_body(result)["error"]["code"] != "BAD_REQUEST"  # the handler ran and answered
