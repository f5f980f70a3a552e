"""The MCP `idempotency_key` argument is checked against the schema MCP advertises for it (found by the MCP fuzzer)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from kumitate.client import mcp_result_body
from kumitate.runtime import Runtime
from kumitate.transports.mcp import build_server
from tests.conftest import app_settings, seeded_copy

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def household(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> AsyncIterator[Client]:
    """household over MCP in memory, one runtime for the module (a malformed key runs nothing, so no test
    sees another's writes), on a copy of the seeded data."""
    runtime = Runtime(app_settings(seeded_copy(seeded_data_dir, tmp_path_factory.mktemp("idem-key") / "var")))
    try:
        async with Client(build_server(runtime, ["household"])) as client:
            yield client
    finally:
        runtime.close()


@pytest.mark.parametrize("key", [123, True, ["k"], {"k": 1}, "", "k" * 256])
async def test_a_malformed_key_is_bad_request_and_runs_nothing(household: Client, key: Any) -> None:
    result = await household.call_tool(
        "restore_duplicate", {"transaction_id": 1, "idempotency_key": key}, raise_on_error=False
    )
    assert result.is_error
    error = mcp_result_body(result)["error"]
    assert error["code"] == "BAD_REQUEST" and "idempotency_key" in error["message"]


async def test_a_well_formed_key_reaches_the_tool(household: Client) -> None:
    result = await household.call_tool(
        "restore_duplicate", {"transaction_id": 999999, "idempotency_key": "k-1"}, raise_on_error=False
    )
    assert mcp_result_body(result)["error"]["code"] != "BAD_REQUEST"  # the handler ran and answered
