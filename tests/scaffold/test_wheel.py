"""What a new team does: install the kumitate wheel, `kumitate init`, `make test`, `make serve`, and the README's curl.

Everything runs in a fresh virtual environment with nothing from this repository on its path,
so the wheel must carry the runtime, the generator, its templates and meta-schemas on its own.
The project's Makefile runs in the environment the wheel was installed into (its `VENV=`): its venv
recipe then installs the project and its dev tools there. A second install of the same wheel into a
new .venv would take half a minute and prove nothing the first one does not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO, free_port

pytestmark = pytest.mark.slow


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_a_new_team_starts_from_the_wheel(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUMITATE_", "PYTHON", "VIRTUAL_ENV"))}
    run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO), "-w", str(tmp_path / "dist")],
        tmp_path,
        env,
    )
    wheel = next((tmp_path / "dist").glob("kumitate-*.whl"))
    tool_venv = tmp_path / "tool"
    run([sys.executable, "-m", "venv", str(tool_venv)], tmp_path, env)
    run([str(tool_venv / "bin/python"), "-m", "pip", "install", "-q", f"{wheel}[codegen]"], tmp_path, env)

    run([str(tool_venv / "bin/kumitate"), "init", "team_tools", "--kumitate", f"{wheel}[codegen]"], tmp_path, env)
    project = tmp_path / "team_tools"
    venv = f"VENV={tool_venv}"
    out = run(["make", "test", venv], project, env)
    assert "4 passed" in out

    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(
        ["make", "serve", venv, f"PORT={port}"],
        cwd=project,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        readme = (project / "README.md").read_text()
        assert "/v1/hello/greet" in readme and '{"name": "kumitate"}' in readme
        deadline = time.monotonic() + 120
        while True:
            try:
                response = httpx.post(f"http://127.0.0.1:{port}/v1/hello/greet", json={"name": "kumitate"}, timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()[-3000:]
                time.sleep(0.3)
        assert response.status_code == 200
        assert response.json() == {"message": "Hello, kumitate!"}
        assert '{"message":"Hello, kumitate!"}' in readme
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
