"""Issue 27 items 1 and 2 on the wire: a real server (uvicorn on a socket) inside an OS memory limit the
test sets, so a regression fails the test instead of taking the machine down.

The server runs in a cgroup v1 memory group (a new group below the test's own, 3 GiB for the server and its
workers together) when the machine has one and we are root, else under RLIMIT_DATA of 3 GiB (each process
then has its own bound). The issue's bombs: `len(range(300000000))` to profile and `unnest(range(1e9))`
to export then profile, once over HTTP and once over MCP; then the parallel-export repro.
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import httpx
import pytest
from fastmcp import Client

from kumitate.client import mcp_result_body
from tests.conftest import REPO, LiveServer, free_port, server_env, stop_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LIMIT_BYTES = 3 << 30
GIB = 1 << 30
CGROUPS = Path("/sys/fs/cgroup/memory")
RANGE_BOMB = "SELECT len(range(300000000)) AS l"
UNNEST_BOMB = "SELECT unnest(range(1000000000)) AS x"
WIDE = "SELECT repeat('x', 1000) AS s FROM range(1000000)"
TOOL_TIMEOUT_S = 15


def _own_memory_group() -> Path:
    """The cgroup v1 memory group this test process runs in (the new group goes below it, not beside)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return CGROUPS / path.lstrip("/")
    return CGROUPS


def _memory_group(name: str) -> Path | None:
    """A fresh cgroup v1 memory group limited to LIMIT_BYTES, or None where there is none to make."""
    if os.geteuid() != 0 or not (CGROUPS / "memory.limit_in_bytes").exists():
        return None
    group = _own_memory_group() / name
    try:
        group.mkdir(exist_ok=True)
        (group / "memory.limit_in_bytes").write_text(str(LIMIT_BYTES))
    except OSError:
        return None
    return group


def _limit_data() -> None:  # the fallback: runs in the forked child before exec
    resource.setrlimit(resource.RLIMIT_DATA, (LIMIT_BYTES, LIMIT_BYTES))


def _rss_of_tree(pid: int) -> int:
    """RSS of `pid` and its descendants (the server and its analytics workers), bytes."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with suppress(OSError, ValueError, IndexError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    total = 0
    for member in tree:
        with suppress(OSError, ValueError, IndexError):
            total += int(Path(f"/proc/{member}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return total


class Server:
    def __init__(self, live: LiveServer, group: Path | None) -> None:
        self.live, self.group = live, group

    @property
    def url(self) -> str:
        return self.live.url

    def rss(self) -> int:
        return _rss_of_tree(self.live.process.pid)

    def oom_kills(self) -> int:
        if self.group is None:
            return 0
        for line in (self.group / "memory.oom_control").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("isolation_wire")
    group = _memory_group(f"kumitate-test-isolation-{os.getpid()}")
    port = free_port()
    command = [sys.executable, "-m", "kumitate", "serve", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--service", "analytics", "--log-level", "warning"]
    if group is not None:  # join the group first, so every worker the server starts is in it too
        command = ["sh", "-c", f'echo $$ > "{group}/cgroup.procs" && exec "$@"', "sh", *command]
    log = (root / "server.log").open("wb")
    process = subprocess.Popen(
        command,
        cwd=REPO,
        # KUMITATE_HEAP_KEEP_MB=0: the RSS bound is on what the bombs leave behind, not on the freed heap the
        # server keeps by design for its next large call (up to 64 MiB, kumitate/serving/heap.py)
        env=server_env(root / "var", KUMITATE_ANALYTICS_SCALE="0.05", KUMITATE_HEAP_KEEP_MB="0"),
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=None if group is not None else _limit_data,
    )
    live = LiveServer(f"http://127.0.0.1:{port}", process, root / "server.log")
    try:
        end = time.monotonic() + 120
        while True:
            assert process.poll() is None, (root / "server.log").read_text(errors="replace")[-3000:]
            with suppress(httpx.HTTPError):
                if httpx.get(f"{live.url}/schema/openapi.json", timeout=1).status_code == 200:
                    break
            assert time.monotonic() < end, "the server did not start"
            time.sleep(0.2)
        yield Server(live, group)
    finally:
        stop_server(live)
        log.close()
        if group is not None:
            with suppress(OSError):
                group.rmdir()


async def _post(http: httpx.AsyncClient, tool: str, body: dict[str, object]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = await http.post(f"/v1/analytics/{tool}", json=body)
    return response, time.monotonic() - started


def _too_expensive(response: httpx.Response) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "QUERY_TOO_EXPENSIVE" and error["retryable"] is False
    assert "aggregate" in error["message"] and "range()" in error["message"]


async def test_memory_bombs_answer_422_and_the_server_stays_small(server: Server) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        warm, _ = await _post(http, "profile", {"table_or_query": "activities", "columns": ["distance_km"]})
        assert warm.status_code == 200, warm.text
        before = server.rss()
        bombs = [
            ("profile", {"table_or_query": RANGE_BOMB}),
            ("export", {"query": UNNEST_BOMB, "format": "csv", "max_rows": 1_000_000}),
            ("profile", {"table_or_query": UNNEST_BOMB}),
            ("materialize", {"name": "bomb", "query": RANGE_BOMB}),
        ]
        for tool, body in bombs:
            response, took = await _post(http, tool, body)
            _too_expensive(response)
            assert took < TOOL_TIMEOUT_S + 2
        after = server.rss()
        ok, took = await _post(http, "profile", {"table_or_query": "activities", "columns": ["distance_km"]})
    assert ok.status_code == 200 and took < 5
    assert server.live.process.poll() is None and server.oom_kills() == 0
    assert after < GIB, f"server and workers hold {after >> 20} MiB after the bombs (before: {before >> 20} MiB)"
    print(f"RSS server+workers: before {before >> 20} MiB, after the bombs {after >> 20} MiB")


async def test_a_memory_bomb_over_mcp_is_a_tool_error(server: Server) -> None:
    async with Client(f"{server.url}/mcp") as client:
        result = await client.call_tool("profile", {"table_or_query": RANGE_BOMB}, raise_on_error=False)
    assert result.is_error
    assert mcp_result_body(result)["error"]["code"] == "QUERY_TOO_EXPENSIVE"
    assert server.live.process.poll() is None and server.rss() < GIB


async def test_parallel_exports_at_the_quota_answer_and_leave_every_worker_free(server: Server) -> None:
    """The issue's repro, smaller: rounds of 8 parallel ~1 GB CSV exports against the byte quotas."""
    body = {"query": WIDE, "format": "csv", "max_rows": 1_000_000}
    async with httpx.AsyncClient(base_url=server.url, timeout=TOOL_TIMEOUT_S + 15) as http:
        for _ in range(2):
            answers = await asyncio.gather(*(_post(http, "export", body) for _ in range(8)))
            for response, took in answers:
                assert took < TOOL_TIMEOUT_S + 5
                assert response.status_code == 200 or response.json()["error"]["code"] in {
                    "EXPORT_QUOTA_EXCEEDED",
                    "QUERY_TIMEOUT",
                    "REQUEST_TIMEOUT",
                }, response.text
        ok, took = await _post(http, "profile", {"table_or_query": "activities", "columns": ["distance_km"]})
    assert ok.status_code == 200, ok.text
    assert took < 5
