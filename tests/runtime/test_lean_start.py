"""A process pays only for what it serves (issue 32): `kumitate mcp --stdio --service stays` answers
without loading a storage engine, the HTTP framework, the JWT/HTTP clients or another service's
code; an instance serving only stays opens no database, and is ready without one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kumitate.storage.engine import SQLITE_FILE
from tests.conftest import REPO, serve_in_process, server_env

pytestmark = pytest.mark.anyio

# sys.modules written at exit by the process under test, which is `python -m kumitate ...` as is.
PROBE = """
import atexit, json, runpy, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["kumitate", *sys.argv[2:]]
runpy.run_module("kumitate", run_name="__main__", alter_sys=True)
"""
NOT_FOR_STAYS = (
    "sqlalchemy",
    "alembic",
    "psycopg",
    "redis",
    "litestar",
    "jwt",
    "duckdb",
    "pandas",
    "kumitate.storage.database",
    "kumitate.policies.oauth",
    "generated.analytics",
    "generated.attendance",
    "generated.household",
    "generated.yana",
    "handlers.analytics",
    "handlers.attendance",
    "handlers.household",
    "handlers.yana",
)


def _rpc(id_: int | None, method: str, **params: object) -> str:
    message: dict[str, object] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        message["id"] = id_
    if params:
        message["params"] = params
    return json.dumps(message) + "\n"


def test_stdio_for_stays_answers_without_storage_http_stack_or_other_services(tmp_path: Path) -> None:
    modules_file = tmp_path / "modules.json"
    proc = subprocess.Popen(
        [sys.executable, "-c", PROBE, str(modules_file), "mcp", "--stdio", "--service", "stays"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=server_env(tmp_path / "var"),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        proc.stdin.write(_rpc(1, "initialize", **hello))
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        proc.stdin.write(_rpc(None, "notifications/initialized") + _rpc(2, "tools/list"))
        proc.stdin.flush()
        listed = json.loads(proc.stdout.readline())
    finally:
        _, stderr = proc.communicate(timeout=60)  # closes stdin: the server exits, the probe writes
    assert [t["name"] for t in listed["result"]["tools"]] == ["summarize_stays"], stderr[-2000:]
    loaded = set(json.loads(modules_file.read_text()))
    assert "fastmcp" in loaded and "generated.stays.bindings" in loaded  # the probe saw the server's modules
    heavy = sorted(m for m in loaded if m.startswith(NOT_FOR_STAYS))
    assert heavy == [], f"loaded for a stays-only stdio server: {heavy[:20]}"
    assert not (tmp_path / "var" / SQLITE_FILE).exists(), "no database file is created for stays"


async def test_a_stays_only_instance_opens_no_database_and_is_ready(tmp_path: Path) -> None:
    async with serve_in_process(tmp_path / "var", KUMITATE_SERVICES="stays") as served:
        runtime = served.runtime
        assert runtime.stores.opened_database is None and runtime.policies.idempotency is None
        ready = await served.http.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert set(ready.json()["checks"]) == {"data_dir"}
        call = await served.http.post("/v1/stays/summarize_stays", json={"stays": []})
        assert call.status_code == 200, call.text
        assert runtime.stores.opened_database is None


async def test_a_service_with_state_opens_the_database_at_start_and_readiness_checks_it(tmp_path: Path) -> None:
    async with serve_in_process(tmp_path / "var", KUMITATE_SERVICES="attendance") as served:
        assert served.runtime.stores.opened_database is not None
        ready = await served.http.get("/readyz")
        assert ready.status_code == 200 and ready.json()["checks"]["database"] == {"ok": True}, ready.text


@pytest.mark.slow  # a fresh interpreter importing all five services: ~5 s idle, 20 s on a loaded CI host
def test_importing_every_service_loads_no_numerical_stack(tmp_path: Path) -> None:
    """A restart pays for numpy, pandas, imagehash or matplotlib only when it builds a sample, hashes an image
    or draws a chart (issue 32: imagehash alone cost every `kumitate serve` start 0.3-0.7 s)."""
    probe = (
        "import json, sys\n"
        "import handlers.analytics, handlers.attendance, handlers.household, handlers.stays, handlers.yana\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, env=server_env(tmp_path), timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(json.loads(done.stdout))
    assert "handlers.yana.store.kb" in loaded  # the probe imported what a start imports
    heavy = sorted(m for m in loaded if m.split(".")[0] in ("numpy", "pandas", "imagehash", "matplotlib", "scipy"))
    assert heavy == [], heavy[:20]


@pytest.mark.slow  # a fresh interpreter building the app: ~3 s idle, 7 s on a loaded host
def test_an_http_instance_for_stays_loads_no_storage_stack(tmp_path: Path) -> None:
    """`kumitate serve --service stays` builds its app without SQLAlchemy, Alembic or psycopg: the task
    routes (and their store) are added only where a served tool can run as a task."""
    probe = (
        "import json, sys\n"
        "from kumitate.app import create_app\n"
        "from kumitate.settings import Settings\n"
        "app = create_app(Settings.from_env())\n"
        "print(json.dumps(sorted(sys.modules)))\n"
        "app.runtime.close()\n"
    )
    env = server_env(tmp_path / "var", KUMITATE_SERVICES="stays")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(json.loads(done.stdout))
    assert "litestar" in loaded and "generated.stays.http" in loaded  # the probe built the HTTP app
    heavy = sorted(m for m in loaded if m.startswith(("sqlalchemy", "alembic", "psycopg", "kumitate.tasks.store")))
    assert heavy == [], heavy[:20]
