"""Shared fixtures: a real uvicorn server on a loopback port, and the spec tree."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from codegen import specs

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("FASTMCP_LOG_LEVEL", "CRITICAL")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def spec_tree() -> specs.SpecTree:
    return specs.load(REPO / "specs")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUMITATE_", "OPENAI_"))}
    env.update({"KUMITATE_DATA_DIR": str(data_dir), "FASTMCP_LOG_LEVEL": "CRITICAL", "PYTHONPATH": str(REPO)})
    env.update(extra)
    return env


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


def start_server(
    data_dir: Path, log: Path, *args: str, log_level: str = "warning", cwd: Path = REPO, **env: str
) -> LiveServer:
    """`kumitate serve` on a free loopback port (extra `args` go to the command line), once it answers."""
    port = free_port()
    out = log.open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kumitate",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            log_level,
            *args,
        ],
        cwd=cwd,
        env=server_env(data_dir, **env),
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(f"{url}/schema/openapi.json", timeout=1).status_code == 200:
                return LiveServer(url, proc, log)
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start within 120 s")


def stop_server(server: LiveServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("live")
    server = start_server(root / "var", root / "server.log")
    yield server
    stop_server(server)
