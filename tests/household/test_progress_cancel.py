"""Progress and cancellation over real transports (issue 15 item 3).

A client that sends a progressToken gets increasing `notifications/progress` for the household
import and duplicate search; a client that cancels mid-import (MCP notifications/cancelled, a
closed MCP request, or an HTTP /v1 client that disconnects) saves nothing.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from kumitate.runtime import Runtime
from kumitate.settings import Settings
from kumitate.transports.mcp import build_server
from tests.conftest import REPO, LiveServer, server_env, start_server, stop_server
from tests.household.conftest import row, service_env, write_export

pytestmark = pytest.mark.anyio

FILES = 6
BIG_FILES = 40
ROWS_PER_BIG_FILE = 1500


def _exports(directory: Path, files: int, rows: int, first: int = 0) -> None:
    """`files` monthly exports (months `first`, `first + 1`, ... from 2000-01) of `rows` rows each."""
    directory.mkdir(parents=True, exist_ok=True)
    for f in range(first, first + files):
        year, month = 2000 + f // 12, f % 12 + 1
        body = [row(f"{year}/{month:02d}/{r % 28 + 1:02d}", -(r + 1), "食費", "食料品") for r in range(rows)]
        write_export(directory, f"{year}-{month:02d}-01_{year}-{month:02d}-28", body)


def _count(db: Path) -> int:
    """Rows stored, once no write transaction is open (a cancelled import's thread has rolled back)."""
    con = sqlite3.connect(db, timeout=60)
    try:
        con.execute("BEGIN IMMEDIATE")  # waits for the importer's transaction to end
        count = int(con.execute("SELECT COUNT(*) FROM household_transactions").fetchone()[0])
        con.execute("ROLLBACK")
        return count
    finally:
        con.close()


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    env = service_env(tmp_path / "var", tmp_path / "samples", HOUSEHOLD_DATA_DIR=str(tmp_path / "exports"))
    rt = Runtime(Settings.from_env({**env, "KUMITATE_PUBLIC_URL": "http://x"}), services=["household"])
    yield rt
    rt.close()


class Progress:
    """A client progress handler that records what it was sent."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))


def _assert_increasing(seen: list[tuple[float, float | None, str | None]], total: float) -> None:
    values = [p for p, _, _ in seen]
    assert values, "no progress notification arrived"
    assert values == sorted(set(values)), values  # strictly increasing
    assert all(t == total for _, t, _ in seen)
    assert values[-1] <= total


async def test_import_and_duplicate_search_report_progress_in_memory(runtime: Runtime, tmp_path: Path) -> None:
    _exports(tmp_path / "exports", FILES, 20)
    async with Client(build_server(runtime, ["household"])) as client:
        imported = Progress()
        result = await client.call_tool("import_household_data", {}, progress_handler=imported)
        assert result.structured_content["total_imported"] == FILES * 20
        _assert_increasing(imported.seen, FILES + 1)
        assert [p for p, _, _ in imported.seen][-1] == FILES  # the aggregates step, reported before the answer
        searched = Progress()
        await client.call_tool("detect_duplicates", {"date_tolerance_days": 3}, progress_handler=searched)
        _assert_increasing(searched.seen, 3)


async def test_a_call_without_progress_token_gets_no_notifications(runtime: Runtime, tmp_path: Path) -> None:
    _exports(tmp_path / "exports", 2, 5)
    async with Client(build_server(runtime, ["household"])) as client:
        mcp = await client.call_tool_mcp("import_household_data", {})
        assert not mcp.is_error  # nothing to assert on the wire but that the call works without a token


async def _cancel_on_first_progress(client: Client) -> Progress:
    """Start an import, cancel it (notifications/cancelled) as soon as its first progress arrives."""
    progress = Progress()
    async with anyio.create_task_group() as tg:

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            await progress(done, total, message)
            tg.cancel_scope.cancel()

        async def call() -> None:
            await client.call_tool("import_household_data", {}, progress_handler=on_progress)
            pytest.fail("the import finished: it was not cancelled")

        tg.start_soon(call)
    return progress


async def test_a_cancelled_import_saves_nothing_in_memory(runtime: Runtime, tmp_path: Path) -> None:
    db = tmp_path / "var" / "kumitate.sqlite3"
    before = _count(db)
    _exports(tmp_path / "exports", BIG_FILES, ROWS_PER_BIG_FILE)
    async with Client(build_server(runtime, ["household"])) as client:
        progress = await _cancel_on_first_progress(client)
    assert progress.seen and progress.seen[0][0] < BIG_FILES
    assert _count(db) == before == 0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Path]]:
    root = tmp_path_factory.mktemp("progress")
    (root / "exports").mkdir()
    live = start_server(
        root / "var", root / "server.log", HOUSEHOLD_DATA_DIR=str(root / "exports"), KUMITATE_SERVICES="household"
    )
    yield live, root
    stop_server(live)


@pytest.mark.slow
async def test_progress_and_cancellation_over_streamable_http(server: tuple[LiveServer, Path]) -> None:
    live, root = server
    db = root / "var" / "kumitate.sqlite3"
    _exports(root / "exports", FILES, 20)
    files = len(list((root / "exports").glob("*.csv")))  # the module's other test may have added its own
    url = f"{live.url}/mcp"
    async with Client(StreamableHttpTransport(url)) as client:
        seen = Progress()
        result = await client.call_tool("import_household_data", {}, progress_handler=seen)
        _assert_increasing(seen.seen, files + 1)
    before = _count(db)
    assert before == result.structured_content["total_transactions"]

    _exports(root / "exports", BIG_FILES, ROWS_PER_BIG_FILE, first=FILES)  # new months on top
    async with Client(StreamableHttpTransport(url)) as client:
        progress = await _cancel_on_first_progress(client)
    assert progress.seen and progress.seen[0][0] < FILES + BIG_FILES
    assert _count(db) == before


@pytest.mark.slow
async def test_an_http_client_that_disconnects_mid_import_saves_nothing(server: tuple[LiveServer, Path]) -> None:
    live, root = server
    db = root / "var" / "kumitate.sqlite3"
    before = _count(db)
    _exports(root / "exports", BIG_FILES, ROWS_PER_BIG_FILE, first=FILES + BIG_FILES)  # more new months
    async with httpx.AsyncClient(base_url=live.url) as http:
        with pytest.raises(httpx.TimeoutException):  # the client gives up and closes the connection
            await http.post("/v1/household/import_household_data", json={}, timeout=0.05)
    assert _count(db) == before
    async with httpx.AsyncClient(base_url=live.url, timeout=120) as http:  # the next call imports everything
        done = await http.post("/v1/household/import_household_data", json={})
    assert done.status_code == 200, done.text
    assert _count(db) > before


@pytest.mark.slow
async def test_progress_and_cancellation_over_stdio(tmp_path: Path) -> None:
    exports, var = tmp_path / "exports", tmp_path / "var"
    exports.mkdir()
    env = server_env(var, HOUSEHOLD_DATA_DIR=str(exports))
    stdio = StdioTransport(
        sys.executable, ["-m", "kumitate", "mcp", "--stdio", "--service", "household"], cwd=str(REPO), env=env
    )
    async with Client(stdio) as client:
        _exports(exports, FILES, 20)
        seen = Progress()
        await client.call_tool("import_household_data", {}, progress_handler=seen)
        _assert_increasing(seen.seen, FILES + 1)
        before = _count(var / "kumitate.sqlite3")
        _exports(exports, BIG_FILES, ROWS_PER_BIG_FILE, first=FILES)
        progress = await _cancel_on_first_progress(client)
        assert progress.seen
        assert _count(var / "kumitate.sqlite3") == before == FILES * 20
