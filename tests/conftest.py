"""Shared fixtures: the app in process (httpx.ASGITransport), a real uvicorn server on a loopback
port, and the spec tree.

Two tiers of wire tests (README, "Testing"): most HTTP behaviour is asserted in process against
`create_app(...)` through `in_process_app` / `serve_in_process` (no socket, part of `make fast`);
what needs a socket or a second process (MCP streamable HTTP with a real client, stdio, workers,
timeouts, streamed bodies, proxies, restarts) runs on `live_server` / `start_server` and is marked slow.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from codegen import specs
from tests.servers import fresh_pg_database, started

if TYPE_CHECKING:  # the app is imported by the fixtures that build one, not by every test session
    from kumitate.app import KumitateApp
    from kumitate.runtime import Runtime
    from kumitate.settings import Settings

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("FASTMCP_LOG_LEVEL", "CRITICAL")

# Test modules that share one expensive thing run on one xdist worker, as one work unit (named by its key).
# The cluster (PostgreSQL, Redis, nginx and three instances): split across two workers, two clusters ran at
# once on two cores, and a killed instance took longer than 10 s to come back. The modules that build with
# the project's mypy cache (.mypy_cache, what `make types` writes): one after the other, the first warms a
# cold cache and the others reuse it; on two workers at once each paid the cold build of the libraries
# (3.5 and 4.7 minutes on a busy 2-core machine).
SHARED_SCOPES = {
    "tests/cluster/": ("tests/cluster/",),
    "mypy cache": (
        "tests/contract/test_declared_errors.py",
        "tests/codegen/test_raises.py",
        "tests/codegen/test_error_codes.py",
    ),
}

# The longest work units (measured: `pytest -m slow --durations`), handed out first and paired so the two
# workers start on about equal loads; every other unit then goes to whichever worker is free. xdist's
# default order (most tests first) left these few-test, minutes-long modules for the end of a run, where
# one worker ran them alone while the other idled.
LONGEST_SCOPES_FIRST = (
    "tests/scaffold/test_ci.py",  # pre-commit try-repo: a hook venv installed from this repository
    "tests/scaffold/test_scaffold.py",  # projects' mypy, raises check, tests and fuzz
    "tests/cluster/",  # PostgreSQL, Redis, nginx and three instances, killed and restarted
    "tests/codegen/test_golden_typed.py",  # mypy --strict on every golden case
    "mypy cache",  # the handlers' typed build (minutes when the cache is cold)
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadscope`, but each of SHARED_SCOPES is a single scope (one worker, one set-up),
    and LONGEST_SCOPES_FIRST are dispatched before the rest."""
    if config.getoption("dist", None) != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedSessionScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            for scope, prefixes in SHARED_SCOPES.items():
                if nodeid.startswith(prefixes):
                    return scope
            return str(super()._split_scope(nodeid))

        def schedule(self) -> None:
            """The work queue keeps the position a scope was first put at: put the longest in first
            (xdist then fills in their tests and appends every other scope in its own order)."""
            if self.collection is None and self.registered_collections:
                scopes = {self._split_scope(nodeid) for nodeid in next(iter(self.registered_collections.values()))}
                for scope in LONGEST_SCOPES_FIRST:
                    if scope in scopes:
                        self.workqueue[scope] = {}
            super().schedule()

    return SharedSessionScheduling(config, log)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def machine_share(request: pytest.FixtureRequest) -> Iterator[None]:
    """Under xdist, a test marked `exclusive` runs while no other worker runs a test; every other test
    shares the machine as usual. For the few tests whose claim is a time on this machine (a killed
    instance back within 10 s) and that a neighbour's pip install or mypy run would otherwise decide.

    Two flock files: `main` (shared per test, exclusive for a marked one) and `gate`, which a marked
    test holds while it waits, so the other worker cannot keep taking `main` from test to test."""
    workerinput = getattr(request.config, "workerinput", None)  # not inherited by a pytest a test runs
    if workerinput is None:  # one process: nothing to share with
        yield
        return
    run = workerinput["testrunuid"]
    exclusive = request.node.get_closest_marker("exclusive") is not None
    base = Path(tempfile.gettempdir()) / f"kumitate-tests-{run}"
    with (base.with_suffix(".gate")).open("a") as gate, (base.with_suffix(".main")).open("a") as main:
        fcntl.flock(gate, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        fcntl.flock(main, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        if not exclusive:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module scope (anyio's own default): a module-scoped async fixture (an in-process app) may use it."""
    return "asyncio"


@pytest.fixture(scope="session")
def spec_tree() -> specs.SpecTree:
    return specs.load(REPO / "specs")


# -- real PostgreSQL and Redis ----------------------------------------------------------------------
# One of each per session, whichever directory's tests ask first; stopped at the end. Define them
# only here: a module or conftest that imports a session fixture gets a second server of its own.
@pytest.fixture(scope="session")
def server_dir() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="kumitate-servers-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url(server_dir: Path) -> Iterator[str]:
    from deploy import servers

    yield started(
        "PostgreSQL",
        servers.pg_bin() is None,
        lambda: servers.start_postgres(server_dir, servers.free_port(), durable=False),
    )
    servers.stop_postgres(server_dir, fast=True)


@pytest.fixture(scope="session")
def redis_url(server_dir: Path) -> Iterator[str]:
    from deploy import servers

    missing = "redis-server" in servers.missing_packages()
    yield started("Redis", missing, lambda: servers.start_redis(server_dir, servers.free_port()))
    servers.stop_redis(server_dir, fast=True)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """None (the embedded SQLite file under tmp_path) or a fresh PostgreSQL database per test."""
    if request.param == "sqlite":
        return None
    base: str = request.getfixturevalue("postgres_url")
    return fresh_pg_database(base, tmp_path.name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a server a test starts. No drain delay on SIGTERM (5 s by default: the balancer's
    check period, with no balancer here), so stopping a server costs no wait; tests/e2e/test_drain_wire.py
    sets one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUMITATE_", "OPENAI_"))}
    env.update({"KUMITATE_DATA_DIR": str(data_dir), "FASTMCP_LOG_LEVEL": "CRITICAL", "PYTHONPATH": str(REPO)})
    env["KUMITATE_DRAIN_DELAY_S"] = "0"
    env.update(extra)
    return env


K_OF_N_RULE = {
    "version": "1.0",
    "type": "K_OF_N",
    "invitee_scope": {"include_invitee_keys": ["u:1", "u:2", "u:3"]},
    "rule": {"k": 2, "n": 3},
    "finalize_policy": {"mode": "EARLIEST_VALID", "tie_breaker": "earliest_slot"},
}
"""An attendance rule every wire test can save: 2 of 3 invitees, the earliest valid slot."""


IN_PROCESS_URL = "http://127.0.0.1:8000"
"""The address an in-process app believes it serves (no socket is bound): its public base URL,
and the base URL of its client, so the Host/Origin gate and result URLs see what a server would."""


@dataclass
class InProcessApp:
    """`create_app(...)` in this process, started (lifespan), with an httpx client wired to it."""

    url: str
    http: httpx.AsyncClient
    app: KumitateApp
    data_dir: Path

    @property
    def runtime(self) -> Runtime:
        return self.app.runtime


def app_settings(data_dir: Path, **env: str) -> Settings:
    """What `kumitate serve --host 127.0.0.1 --port 8000` reads from `server_env(data_dir, **env)`."""
    from kumitate.settings import Settings

    return Settings.from_env(server_env(data_dir, **env), host="127.0.0.1", port=8000)


@pytest.fixture(scope="session")
def seeded_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory after one first start with the default settings (samples imported, indexes
    built), then closed. An in-process app, and a real server given `seeded=`, starts on a copy of
    it: the seeding (seconds) is paid once per session, and no app sees another's writes. A test
    whose settings change what a first start imports (HOUSEHOLD_DATA_DIR, ...) starts from empty."""
    from kumitate.runtime import Runtime

    data_dir = tmp_path_factory.mktemp("seeded") / "var"
    Runtime(app_settings(data_dir)).close()
    return data_dir


def seeded_copy(seeded: Path, data_dir: Path) -> Path:
    """`data_dir` as a copy of the session's seeded data directory (for a server started by other means
    than `start_server`, e.g. `kumitate mcp --stdio`): a first start's imports take seconds."""
    shutil.copytree(seeded, data_dir)
    return data_dir


@contextlib.asynccontextmanager
async def serve_in_process(data_dir: Path, seeded: Path | None = None, **env: str) -> AsyncIterator[InProcessApp]:
    """The app for `server_env(data_dir, **env)` through its lifespan, requests sent through
    httpx.ASGITransport; `seeded`: a data directory to start from (copied to `data_dir`).

    httpx runs no lifespan. The app's lifespan is its Litestar application's (the outer ASGI layer
    hands lifespan events to it unchanged), so Litestar's own `lifespan()` context runs it: what a
    server's startup and shutdown events would. (asgi-lifespan was tried and left: its 2.1 hands
    every request one shared `scope["state"]` dict, so Litestar's per-request state leaked between
    requests.)"""
    from litestar import Litestar

    from kumitate.app import create_app

    if seeded is not None:
        shutil.copytree(seeded, data_dir)
    app = create_app(app_settings(data_dir, **env))
    assert isinstance(app.app, Litestar)
    async with (
        app.app.lifespan(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=IN_PROCESS_URL, timeout=60) as http,
    ):
        yield InProcessApp(IN_PROCESS_URL, http, app, data_dir)


@pytest.fixture(scope="module")
async def in_process_app(
    tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path
) -> AsyncIterator[InProcessApp]:
    """The default app (every service, no tokens) in process, one per test module (its own data)."""
    async with serve_in_process(tmp_path_factory.mktemp("app") / "var", seeded_data_dir) as served:
        yield served


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


def start_server(
    data_dir: Path,
    log: Path,
    *args: str,
    log_level: str = "warning",
    cwd: Path = REPO,
    seeded: Path | None = None,
    **env: str,
) -> LiveServer:
    """`kumitate serve` on a free loopback port (extra `args` go to the command line), once it answers;
    `seeded`: a data directory to start from (copied to `data_dir`: no first-start import to wait for)."""
    if seeded is not None:
        shutil.copytree(seeded, data_dir)
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
        start_new_session=True,  # its own process group: stop_server kills its children with it
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


def stop_server(*servers: LiveServer, graceful: bool = False) -> None:
    """Stop `servers`, all at once. By default each is killed with its child processes (workers, the
    analytics worker): a graceful stop of a throwaway server spends 1-2 s in the interpreter's exit for
    nothing a test reads. `graceful`: SIGTERM (it drains and logs its stop), for a test that reads what
    the server writes as it stops."""
    for server in servers:
        if graceful:
            server.process.terminate()
            continue
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(server.process.pid) == server.process.pid:  # started by start_server
                os.killpg(server.process.pid, signal.SIGKILL)
            else:
                server.process.kill()
    for server in servers:
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.process.kill()


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("live")
    server = start_server(root / "var", root / "server.log", seeded=seeded_data_dir)
    yield server
    stop_server(server)
