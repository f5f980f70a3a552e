"""What a new team does: install the kumitate wheel, `kumitate init`, `make test`, `make serve`, the README's
curl, `make review`; and every developer command (diff, generate --check, lint, new tool) from that wheel.

Everything runs in fresh virtual environments in a directory with no copy of this repository, with nothing
from it on the path, so the wheel must carry the runtime, the generator, its templates, meta-schemas and
review rules on its own. The wheel is built (from a copy of the package sources, so the build leaves no
egg-info behind in the checkout) and installed with its `codegen` extra once per session. The project's
`make test` runs with no variables: it makes its own .venv from the requirement `kumitate init` recorded
(the wheel's file URL), as a team's CI would.
"""

from __future__ import annotations

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
def tool_bin(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ of a fresh venv with the wheel and its documented extra (`pip install 'kumitate[codegen]'`)."""
    venv = tmp_path_factory.mktemp("tool") / "venv"
    run([sys.executable, "-m", "venv", str(venv)], venv.parent)
    run([str(venv / "bin/python"), "-m", "pip", "install", "-q", f"{wheel}[codegen]"], venv.parent)
    return venv / "bin"


@pytest.fixture(scope="session")
def initialised(tool_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("projects")
    run([str(tool_bin / "kumitate"), "init", "team_tools"], root)
    return root / "team_tools"


def commit_all(project: Path, message: str) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    if not (project / ".git").exists():
        run(["git", "init", "-q", "-b", "main"], project)
    run(["git", "add", "-A"], project)
    run([*git, "commit", "-q", "-m", message], project)


def test_a_new_team_starts_from_the_wheel(wheel: Path, initialised: Path, tmp_path: Path) -> None:
    project = tmp_path / "team_tools"
    shutil.copytree(initialised, project, symlinks=True)
    pyproject = (project / "pyproject.toml").read_text()
    assert f'dependencies = ["kumitate @ {wheel.as_uri()}"]' in pyproject
    assert f'"kumitate[codegen,fuzz] @ {wheel.as_uri()}"' in pyproject

    out = run(["make", "test"], project).stdout  # no variables: its own .venv from the recorded requirement
    assert "4 passed" in out
    assert run([".venv/bin/kumitate", "tools"], project).stdout.startswith("hello.greet\t")

    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(
        ["make", "serve", f"PORT={port}"],
        cwd=project,
        env=ENV,
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


def test_the_developer_commands_run_from_the_wheel(tool_bin: Path, initialised: Path, tmp_path: Path) -> None:
    """diff, generate --check, lint and new tool in a project outside this repository."""
    project = tmp_path / "team_tools"
    shutil.copytree(initialised, project, symlinks=True)
    kumitate = str(tool_bin / "kumitate")
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
