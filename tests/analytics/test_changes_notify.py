"""Subscribers of analytics://schema hear when a tool call changes its live views (issue 29), over a
real MCP session: materialize and a drop that dropped something; a failed materialize, a drop of a
view that was not there and a replayed materialize say nothing (updates arrive in order: see
tests/subscribed.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kumitate.runtime import Runtime
from tests.conftest import app_settings
from tests.subscribed import subscribed

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")]

SCHEMA = "analytics://schema"


async def test_materialize_and_drop_tell_the_schema_subscribers(small_db_template: Path, tmp_path: Path) -> None:
    (tmp_path / "var" / "analytics").mkdir(parents=True)
    shutil.copy(small_db_template, tmp_path / "var" / "analytics" / "activities.duckdb")
    runtime = Runtime(app_settings(tmp_path / "var"), services=["analytics"])
    try:
        async with subscribed(runtime, [SCHEMA, "analytics://tables/activities"]) as (client, heard):
            bad = await client.call_tool_mcp("materialize", {"name": "broken", "query": "SELECT * FROM nowhere"})
            assert bad.isError
            gone = await client.call_tool("drop_materialized", {"view": "never_made"})
            assert gone.structured_content["dropped"] is False
            one = {"name": "one", "query": "SELECT 1 AS one", "idempotency_key": "k-1"}
            made = await client.call_tool("materialize", one)
            assert await heard.until(SCHEMA) == [SCHEMA]
            assert "mat_one" in (await client.read_resource(SCHEMA))[0].text
            replay = await client.call_tool("materialize", one)  # the stored answer: not run, nothing said
            assert replay.structured_content == made.structured_content
            await client.call_tool("drop_materialized", {"view": "one"})
            assert await heard.until(SCHEMA) == [SCHEMA]
            assert heard.uris == []
    finally:
        runtime.close()
