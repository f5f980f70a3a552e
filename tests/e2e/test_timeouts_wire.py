"""Deadlines over real sockets: a write that runs past its deadline is REQUEST_TIMEOUT (408, retryable)
on HTTP and MCP, and nothing it did is saved.

The operator cap KUMITATE_MAX_TIMEOUT_MS shortens household's 120 s import deadline to 400 ms, and the
import is given over a second of work (more than three times the cap): a real worker thread that cannot be interrupted, which must
then refuse to commit.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from kumitate.client import mcp_result_body
from tests.conftest import REPO, serve_in_process, start_server, stop_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MONTH_ONLY_IN_EXTRA = {"year": 2015, "month": 6}
GENERATE_TEN_YEARS = ["--start", "2010-01", "--end", "2019-12", "--scale", "15"]  # ~95k rows, ~1.5 s to import
HOUSEHOLD_ONLY = {"KUMITATE_SERVICES": "household"}  # no other service's start-up (analytics' sample database)


def rows_of_2015(var: Path) -> int:
    """Waits for the timed-out worker: its write transaction holds SQLite's lock until it ends."""
    with closing(sqlite3.connect(var / "kumitate.sqlite3", timeout=60, isolation_level=None)) as con:
        con.execute("BEGIN IMMEDIATE")
        count = con.execute("SELECT count(*) FROM household_transactions WHERE date LIKE '2015-%'").fetchone()[0]
        con.execute("ROLLBACK")
    return int(count)


async def monthly_code(http: httpx.AsyncClient) -> str:
    response = await http.post("/v1/household/get_monthly_household", json=MONTH_ONLY_IN_EXTRA)
    return "OK" if response.status_code == 200 else response.json()["error"]["code"]


async def test_a_timed_out_import_answers_408_on_both_transports_and_saves_nothing(tmp_path: Path) -> None:
    extra = tmp_path / "exports"
    extra.mkdir()
    var = tmp_path / "var"
    capped = start_server(
        var, tmp_path / "capped.log", HOUSEHOLD_DATA_DIR=str(extra), KUMITATE_MAX_TIMEOUT_MS="400", **HOUSEHOLD_ONLY
    )
    try:
        subprocess.run(
            [sys.executable, str(REPO / "data/household/generate.py"), "--out", str(extra), *GENERATE_TEN_YEARS],
            check=True,
            capture_output=True,
        )
        async with httpx.AsyncClient(base_url=capped.url, timeout=30) as http:
            response = await http.post("/v1/household/import_household_data", json={})
        assert response.status_code == 408
        body = response.json()
        assert body["error"]["code"] == "REQUEST_TIMEOUT" and body["error"]["retryable"] is True
        assert "400 ms" in body["error"]["message"] and body["run_id"] == response.headers["X-Run-Id"]
        assert rows_of_2015(var) == 0

        async with Client(StreamableHttpTransport(f"{capped.url}/mcp")) as client:
            result = await client.call_tool("import_household_data", {}, raise_on_error=False)
        assert result.is_error
        assert mcp_result_body(result)["error"]["code"] == "REQUEST_TIMEOUT"
        assert mcp_result_body(result)["error"]["retryable"] is True
        assert rows_of_2015(var) == 0
        async with httpx.AsyncClient(base_url=capped.url, timeout=30) as http:
            assert await monthly_code(http) == "DATA_NOT_FOUND"
    finally:
        stop_server(capped)

    # control: the same files, imported without the cap (at start-up, by an app in process), do bring the month in
    async with serve_in_process(var, HOUSEHOLD_DATA_DIR=str(extra), **HOUSEHOLD_ONLY) as full:
        assert await monthly_code(full.http) == "OK"
        assert rows_of_2015(var) > 0
