"""Test helpers for kumitate projects: a real server on a free port, and spec examples over HTTP and MCP.

A project made by `kumitate init` tests itself with these, the way this repository does:
every example of its specs runs over HTTP on a real uvicorn socket and over MCP (in memory and
streamable HTTP), and must give the declared result on each.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from codegen.examples import Caller, Result, run_all
from codegen.refs import JsonValue
from codegen.specs import SpecTree, ToolSpec
from kumitate.client.http import shaped_body, shaped_request

if TYPE_CHECKING:
    from fastmcp import Client

START_TIMEOUT_S = 120.0


@dataclass
class Server:
    """A kumitate server started in a subprocess for a check: its URL, its process and its log file."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(project: Path, data_dir: Path, **env: str) -> Iterator[Server]:
    """`kumitate serve` for `project` on a free loopback port, until the block ends. It stops without the
    drain delay on SIGTERM (no balancer waits on its /readyz; `env` may set one)."""
    port = free_port()
    log = data_dir.parent / f"server-{port}.log"
    data_dir.mkdir(parents=True, exist_ok=True)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("KUMITATE_")}
    environment.update({"KUMITATE_DATA_DIR": str(data_dir), "KUMITATE_PROJECT": str(project)})
    environment.update({"KUMITATE_DRAIN_DELAY_S": "0", **env})
    command = [sys.executable, "-m", "kumitate", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=project, env=environment, stdout=out, stderr=subprocess.STDOUT)
    server = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        _wait_until_up(server)
        yield server
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a process this module (or a check using it) started: SIGTERM, and SIGKILL after 10 s."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def _wait_until_up(server: Server) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = server.log.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise RuntimeError(f"the server exited with {server.process.returncode}:\n{tail}")
        try:
            if httpx.get(f"{server.url}/v1/versions", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    server.process.kill()
    raise RuntimeError(f"the server did not answer within {START_TIMEOUT_S:.0f} s")


def http_caller(http: httpx.AsyncClient) -> Caller:
    """A tool's example call over HTTP on `http`: the arguments sent where the tool's HTTP binding reads
    them (JSON or form, path, query, headers), the flat output read back from its answer."""

    async def call(tool: ToolSpec, arguments: JsonValue) -> Result:
        path, kwargs = shaped_request(
            tool.http_shape, tool.http_path, arguments, tool.http_method, tool.content_types, tool.form_deep_objects
        )
        response = await http.request(tool.http_method, path, **kwargs)
        return Result(ok=response.is_success, body=shaped_body(tool.http_shape, response, tool.wire_output))

    return call


async def examples_over_http(tree: SpecTree, url: str, headers: dict[str, str] | None = None) -> list[str]:
    """Every example over HTTP (with `headers` on each request: a token); the failures, one line each."""
    async with httpx.AsyncClient(base_url=url, timeout=60, headers=headers) as http:
        failures, _ = await run_all(tree, http_caller(http))
    return failures


async def examples_over_mcp(tree: SpecTree, client: Client[Any]) -> list[str]:
    """Every example through a fastmcp Client (in memory, stdio or streamable HTTP)."""
    async with client:
        from kumitate.client import mcp_result_body

        async def call(tool: ToolSpec, arguments: dict[str, Any]) -> Result:
            result = await client.call_tool(tool.name, arguments, raise_on_error=False)
            return Result(ok=not result.is_error, body=mcp_result_body(result))

        failures, _ = await run_all(tree, call)
    return failures
