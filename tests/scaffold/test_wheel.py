"""What a new team does: install the kumitate wheel, `kumitate init`, `make test`, `make serve`, the README's
curl, `make review`; and every developer command (diff, generate --check, lint, new tool, init) from that wheel.

Everything runs in a fresh virtual environment in a directory with no copy of this repository, with nothing
from it on the path, so the wheel must carry the runtime, the generator, its templates, meta-schemas and
review rules on its own. The wheel is built (from a copy of the package sources, so the build leaves no
egg-info behind in the checkout) once per session, and installed once per session: by the new project's own
`make venv` with no variables (a fresh .venv, the requirement `init` recorded: the wheel's file URL, with
the `codegen` and `fuzz` extras), as a team's CI would. That .venv's `kumitate` is the developer's command
line for the other tests (an install of the wheel and its ~100 dependencies takes minutes on 2 busy cores;
one is enough to prove each of these).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import REPO, free_port

pytestmark = pytest.mark.slow
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("KUMITATE_", "PYTHON", "VIRTUAL_ENV", "MYPY_"))}
ENV["PIP_NO_COMPILE"] = "1"  # the two installs of the wheel and its ~100 dependencies skip byte-compiling them


def run(command: list[str], cwd: Path, timeout: float = 900, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)
    if ok:
        assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kumitate's wheel, built once per session from a copy of what it packages."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("kumitate", "codegen"):
        shutil.copytree(REPO / package, source / package, ignore=ignore)  # follows codegen/meta -> specs/_meta
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", str(root / "dist")], root)
    return next((root / "dist").glob("kumitate-*.whl"))


@pytest.fixture(scope="session")
def initialised(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `kumitate init team_tools --kumitate <wheel>` writes: a project depending on the wheel (the
    requirement an init run from that wheel records by itself is checked in the developer test)."""
    root = tmp_path_factory.mktemp("projects")
    init = [sys.executable, "-m", "kumitate", "init", "team_tools", "--kumitate", str(wheel)]
    done = subprocess.run(init, cwd=root, env=ENV | {"PYTHONPATH": str(REPO)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "team_tools"


@pytest.fixture(scope="session")
def team_project(initialised: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the new project after its `make venv` (no variables): its own .venv, made by the project's
    Makefile from the requirement `init` recorded. The team test works in it (a venv cannot be moved)."""
    project = tmp_path_factory.mktemp("team") / "team_tools"
    shutil.copytree(initialised, project, symlinks=True)
    run(["make", "venv"], project)
    return project


@pytest.fixture(scope="session")
def tool_bin(team_project: Path) -> Path:
    """The bin/ of a venv with the wheel and its `codegen` extra installed (`pip install 'kumitate[codegen]'`)."""
    return team_project / ".venv/bin"


def commit_all(project: Path, message: str) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    if not (project / ".git").exists():
        run(["git", "init", "-q", "-b", "main"], project)
    run(["git", "add", "-A"], project)
    run([*git, "commit", "-q", "-m", message], project)


def test_a_new_team_starts_from_the_wheel(wheel: Path, team_project: Path, tmp_path: Path) -> None:
    project = team_project
    pyproject = (project / "pyproject.toml").read_text()
    assert f'dependencies = ["kumitate @ {wheel.as_uri()}"]' in pyproject
    assert f'"kumitate[codegen,fuzz] @ {wheel.as_uri()}"' in pyproject

    direct_url = next((project / ".venv/lib").glob("python3.*/site-packages/kumitate-*.dist-info/direct_url.json"))
    assert json.loads(direct_url.read_text())["url"] == wheel.as_uri()  # make venv installed the recorded wheel
    out = run(["make", "test"], project).stdout  # no variables
    assert "4 passed" in out
    assert run([".venv/bin/kumitate", "tools"], project).stdout.startswith("hello.greet\t")

    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(
        ["make", "serve", f"PORT={port}"],
        cwd=project,
        env=ENV | {"KUMITATE_DRAIN_DELAY_S": "0"},  # no balancer to wait for on SIGTERM (5 s by default)
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

    # a breaking change left uncommitted fails the review (the working tree is what is reviewed)
    commit_all(project, "init")
    assert "PASS" in run(["make", "review"], project).stdout
    tool = project / "specs/hello/tools/greet.yaml"
    doc = yaml.safe_load(tool.read_text())
    doc["output"]["properties"]["shout"] = {"type": "string", "description": "The greeting, loud."}
    tool.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    commit_all(project, "a second output field")
    del doc["output"]["properties"]["shout"]
    tool.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    review = run(["make", "review"], project, ok=False)
    assert review.returncode != 0, review.stdout
    assert "working tree" in review.stdout and "OUTPUT_FIELD" in review.stdout and "**breaking**" in review.stdout


def test_the_developer_commands_run_from_the_wheel(
    wheel: Path, tool_bin: Path, initialised: Path, tmp_path: Path
) -> None:
    """init, diff, generate --check, lint and new tool in a project outside this repository."""
    kumitate = str(tool_bin / "kumitate")
    run([kumitate, "init", "other_tools"], tmp_path)  # records the kumitate that made it: the installed wheel
    pyproject = (tmp_path / "other_tools/pyproject.toml").read_text()
    assert f'dependencies = ["kumitate @ {wheel.as_uri()}"]' in pyproject
    assert (tmp_path / "other_tools/specs/hello/tools/greet.yaml").read_text() == (
        initialised / "specs/hello/tools/greet.yaml"
    ).read_text()
    project = tmp_path / "team_tools"
    shutil.copytree(initialised, project, symlinks=True)
    commit_all(project, "init")
    assert run([kumitate, "generate", "--check"], project).stdout.startswith("generated code is up to date")
    assert "specs OK" in run([kumitate, "lint"], project).stdout
    run([kumitate, "new", "tool", "hello", "convert_currency"], project)
    assert "hello.convert_currency" in run([kumitate, "tools"], project).stdout
    diff = run([kumitate, "diff", "main"], project)
    assert "`TOOL_ADDED`" in diff.stdout and "working tree" in diff.stdout
    assert "Seed" not in diff.stdout
    readme = project / "README.md"
    readme.write_text(readme.read_text().replace("| `PORT` |", "| `PORT_EDITED` |"))
    check = run([kumitate, "generate", "--check"], project, ok=False)
    assert check.returncode == 1
    assert "stale: README.md (its settings table)" in check.stdout and "generated/ is" not in check.stdout
