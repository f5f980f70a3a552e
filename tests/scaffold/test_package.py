"""What a new team does, in `make test-package` (not `make test`): install the kumitate wheel with its
dependencies, `kumitate init`, `make test`, `make serve` and the README's curl, `make review`.

The project is made by `kumitate init --kumitate <wheel>` and its own `make venv` with no variables makes a
fresh .venv from the requirement `init` recorded (the wheel's file URL, with the `codegen` and `fuzz`
extras), as a team's CI would: the wheel's ~100 dependencies resolved and installed, then the project's
mypy against the wheel's types. That the wheel holds every file, and its commands work with nothing of
this repository on the path, is `make test`'s (tests/scaffold/test_wheel.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.scaffold.wheels import ENV, commit_all, run, serves_the_readme_greeting

pytestmark = [pytest.mark.slow, pytest.mark.package]


@pytest.fixture(scope="session")
def team_project(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`kumitate init team_tools --kumitate <wheel>`, then the project's `make venv` (no variables)."""
    root = tmp_path_factory.mktemp("team")
    init = [sys.executable, "-m", "kumitate", "init", "team_tools", "--kumitate", str(wheel)]
    done = subprocess.run(init, cwd=root, env=ENV | {"PYTHONPATH": str(REPO)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    project = root / "team_tools"
    run(["make", "venv"], project)
    return project


def test_a_new_team_starts_from_the_wheel(wheel: Path, team_project: Path, tmp_path: Path) -> None:
    project = team_project
    pyproject = (project / "pyproject.toml").read_text()
    version = wheel.name.split("-")[1]
    assert f'dependencies = ["kumitate=={version}"]' in pyproject  # what a CI runner can install
    assert f'"kumitate[codegen,fuzz]=={version}"' in pyproject
    assert (project / "vendor" / wheel.name).read_bytes() == wheel.read_bytes()  # found there (PIP_FIND_LINKS)
    installed = next((project / ".venv/lib").glob("python3.*/site-packages/kumitate-*.dist-info"))
    assert installed.name == f"kumitate-{version}.dist-info"  # make venv installed the vendored wheel
    out = run(["make", "test"], project).stdout  # no variables: drift check, mypy, raises check, tests
    assert "4 passed" in out
    assert run([".venv/bin/kumitate", "tools"], project).stdout.startswith("hello.greet\t")
    serves_the_readme_greeting(["make", "serve", "PORT={port}"], project, tmp_path / "serve.log")
    commit_all(project, "init")
    assert "PASS" in run(["make", "review"], project).stdout
