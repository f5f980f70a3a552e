"""Completions (issue 15 item 5): `completion/complete` for resource-template parameters whose
values come from data, declared in the spec (`completions:` of a resource) and served as the caller.

chart://{chart_id} offers the caller's live charts, export://{handle} the caller's live exports;
another principal's are never offered, a prefix narrows the list, and anything that cannot start
an id gets nothing. Over streamable HTTP (two principals) and stdio.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import mcp_types as mt
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from tests.conftest import REPO, LiveServer, seeded_copy, server_env, start_server, stop_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOKENS = {
    "tok-alice": {"principal": "alice", "scopes": ["household", "analytics", "yana"]},
    "tok-bob": {"principal": "bob", "scopes": ["household", "analytics"]},
}
CHART = mt.ResourceTemplateReference(uri="chart://{chart_id}")
EXPORT = mt.ResourceTemplateReference(uri="export://{handle}")
TABLE = mt.ResourceTemplateReference(uri="analytics://tables/{table}")
COLUMN = mt.ResourceTemplateReference(uri="analytics://tables/{table}/columns/{column}")
CATEGORY = mt.ResourceTemplateReference(uri="data://categories/{category}")
MONTH = mt.ResourceTemplateReference(uri="data://months/{month}")
BRAND = mt.ResourceTemplateReference(uri="yana://brands/{brand}")
BREWERY = mt.ResourceTemplateReference(uri="yana://breweries/{brewery}")
JUNE_CHART = {"year": 2025, "month": 6, "output_format": "image", "graph_type": "pie"}
EXPORT_QUERY = {"query": "SELECT activity_id FROM activities LIMIT 3", "format": "csv"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("complete")
    live = start_server(root / "var", root / "server.log", seeded=seeded_data_dir, KUMITATE_TOKENS=json.dumps(TOKENS))
    yield live
    stop_server(live)


def client(server: LiveServer, token: str) -> Client:
    return Client(StreamableHttpTransport(f"{server.url}/mcp", auth=token))


async def values(client: Client, ref: mt.ResourceTemplateReference, name: str, prefix: str) -> list[str]:
    return list((await client.complete(ref, {"name": name, "value": prefix})).values)


async def test_chart_ids_and_export_handles_complete_for_their_owner_only(server: LiveServer) -> None:
    async with client(server, "tok-alice") as alice:
        chart = (await alice.call_tool("get_monthly_household", JUNE_CHART)).structured_content["chart"]["chart_id"]
        handle = (await alice.call_tool("export", EXPORT_QUERY)).structured_content["handle"]
        assert chart in await values(alice, CHART, "chart_id", "")
        assert await values(alice, CHART, "chart_id", chart[:4]) == [chart]
        assert await values(alice, CHART, "chart_id", "../") == []
        assert handle in await values(alice, EXPORT, "handle", "")
        assert await values(alice, EXPORT, "handle", handle[:6]) == [handle]
        assert await values(alice, EXPORT, "handle", "*") == []
        assert await values(alice, CHART, "not_a_parameter", "") == []
        read = await alice.read_resource(f"chart://{chart}")  # what is offered can be read
        assert read
    async with client(server, "tok-bob") as bob:
        assert chart not in await values(bob, CHART, "chart_id", "")
        assert handle not in await values(bob, EXPORT, "handle", "")


async def test_table_and_column_names_complete_from_the_database(server: LiveServer) -> None:
    async with client(server, "tok-bob") as bob:
        tables = await values(bob, TABLE, "table", "")
        assert "activities" in tables and "time_series_metrics" in tables
        assert await values(bob, TABLE, "table", "time_") == ["time_series_metrics"]
        assert await values(bob, COLUMN, "table", "act") == ["activities"]
        assert await values(bob, COLUMN, "column", "") == []  # no table chosen yet
        done = await bob.complete(COLUMN, {"name": "column", "value": "heart"}, {"table": "time_series_metrics"})
        assert done.values == ["heart_rate"]
        read = await bob.read_resource("analytics://tables/time_series_metrics/columns/heart_rate")
        assert json.loads(read[0].text)["name"] == "heart_rate"  # type: ignore[union-attr]
    async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": "Bearer tok-bob"}) as http:
        table = await http.get("/v1/analytics/tables/activities")
        missing = await http.get("/v1/analytics/tables/nope/columns/x")
    assert table.status_code == 200 and table.json()["name"] == "activities" and table.json()["columns"]
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"


async def test_household_category_names_complete_from_the_stored_data(server: LiveServer) -> None:
    async with client(server, "tok-alice") as alice:
        await alice.call_tool("get_monthly_household", {"year": 2025, "month": 6})  # the samples are imported
        names = await values(alice, CATEGORY, "category", "")
        assert "食費" in names and "収入" in names and len(names) == len(set(names))
        assert set(await values(alice, CATEGORY, "category", "食")) >= {"食費", "食料品"}
        food = json.loads((await alice.read_resource("data://categories/食費"))[0].text)  # type: ignore[union-attr]
        income = json.loads((await alice.read_resource("data://categories/収入"))[0].text)  # type: ignore[union-attr]
        recent = await values(alice, MONTH, "month", "")
        assert "2025-06" in recent and recent == sorted(recent, reverse=True)
        assert set(await values(alice, MONTH, "month", "2025-0")) >= {"2025-06"}
        june = json.loads((await alice.read_resource("data://months/2025-06"))[0].text)  # type: ignore[union-attr]
    assert june["month"] == "2025-06" and june["total_expense"] == 295266 and june["transaction_count"] > 0
    assert food["levels"] == ["major"] and food["kind"] == "spending" and food["trend_accepted"] and food["minors"]
    assert income["kind"] == "income" and not income["trend_accepted"]
    async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": "Bearer tok-alice"}) as http:
        minor = await http.get("/v1/household/categories/食料品")
        missing = await http.get("/v1/household/categories/存在しない")
        no_month = await http.get("/v1/household/months/2030-01")
        not_a_month = await http.get("/v1/household/months/June")
    assert no_month.status_code == not_a_month.status_code == 404
    assert not_a_month.json()["error"]["code"] == "DATA_NOT_FOUND"
    assert minor.status_code == 200 and minor.json()["majors"] == ["食費"] and minor.json()["levels"] == ["minor"]
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"


async def test_yana_brands_and_breweries_complete_from_the_knowledge_base(server: LiveServer) -> None:
    async with client(server, "tok-alice") as alice:
        every = await alice.complete(BRAND, {"name": "brand", "value": ""})
        assert len(every.values) == 100 and every.has_more and (every.total or 0) > 100  # the MCP cap, counted
        assert every.values == sorted(set(every.values))
        assert "獺祭" in await values(alice, BRAND, "brand", "獺")
        assert await values(alice, BRAND, "brand", "%") == []  # a LIKE wildcard is a plain character here
        assert "旭酒造" in await values(alice, BREWERY, "brewery", "旭")
        group = json.loads((await alice.read_resource("yana://brands/獺祭"))[0].text)  # type: ignore[union-attr]
    assert group["field"] == "brand_name" and {label["brand_name"] for label in group["labels"]} == {"獺祭"}
    async with client(server, "tok-bob") as bob:  # no yana scope: nothing offered
        assert await values(bob, BRAND, "brand", "") == []
    async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": "Bearer tok-alice"}) as http:
        brewery = await http.get("/v1/breweries/旭酒造")
        missing = await http.get("/v1/brands/存在しない銘柄")
    assert brewery.status_code == 200 and all(x["brewery"] == "旭酒造" for x in brewery.json()["labels"])
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"


async def test_completion_over_stdio(tmp_path: Path, seeded_data_dir: Path) -> None:
    env = server_env(seeded_copy(seeded_data_dir, tmp_path / "var"))
    stdio = StdioTransport(sys.executable, ["-m", "kumitate", "mcp", "--stdio"], cwd=str(REPO), env=env)
    async with Client(stdio) as local:
        chart = (await local.call_tool("get_monthly_household", JUNE_CHART)).structured_content["chart"]["chart_id"]
        assert await values(local, CHART, "chart_id", chart[:5]) == [chart]
