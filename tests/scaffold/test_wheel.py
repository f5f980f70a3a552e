"""The wheel alone carries the runtime, the generator, its templates, meta-schemas and review rules.

It holds every file of kumitate/ and codegen/, and it works in a project outside this repository with
nothing of it on the path: installed alone into a fresh venv whose dependencies are found installed (links
to this environment's, tests/scaffold/wheels.py), its `kumitate` runs init, generate --check, lint, new
tool, diff (the review) and serve (the README's curl). That a new team's `make venv` resolves and installs
its dependencies, and the project's `make test` (mypy against the wheel's types) passes, is
`make test-package` (tests/scaffold/test_package.py): it installs ~100 packages, minutes on 2 cores.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.scaffold.conftest import fresh_copy
from tests.scaffold.wheels import PACKAGES, commit_all, run, serves_the_readme_greeting, wheel_venv

pytestmark = pytest.mark.slow


def packaged_files() -> dict[str, Path]:
    """What the wheel must hold: every file under kumitate/ and codegen/ (codegen/meta followed), by its
    name in the wheel; compiled files aside."""
    found = {}
    for package in PACKAGES:
        for directory, dirs, files in os.walk(REPO / package, followlinks=True):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if not name.endswith(".pyc"):
                    path = Path(directory, name)
                    found[path.relative_to(REPO).as_posix()] = path
    return found


@pytest.fixture(scope="session")
def tool_bin(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ of a fresh venv that holds the wheel and nothing of this repository."""
    return wheel_venv(wheel, tmp_path_factory.mktemp("wheel-venv"))


@pytest.fixture(scope="session")
def initialised(tool_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`kumitate init team_tools` from the wheel, once per session; each test works on a copy."""
    root = tmp_path_factory.mktemp("projects")
    run([str(tool_bin / "kumitate"), "init", "team_tools"], root)
    return root / "team_tools"


@pytest.fixture
def project(initialised: Path, tmp_path: Path) -> Path:
    return fresh_copy(initialised, tmp_path)


def test_the_wheel_holds_every_file_of_the_packages(wheel: Path) -> None:
    """Byte for byte, with the `kumitate` command; a file left out of package-data fails here."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        missing = sorted(set(packaged_files()) - names)
        assert not missing, f"the wheel lacks {missing}"
        changed = [name for name, path in packaged_files().items() if archive.read(name) != path.read_bytes()]
        assert not changed, changed
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert "kumitate = kumitate.cli:main" in archive.read(entry_points).decode()


def test_the_venv_holds_nothing_of_this_repository(tool_bin: Path, tmp_path: Path) -> None:
    code = "import codegen, kumitate; print(kumitate.__file__); print(codegen.__file__)"
    where = run([str(tool_bin / "python"), "-c", code], tmp_path).stdout.split()
    assert all("/site-packages/" in path and str(REPO) not in path for path in where), where


def test_the_developer_commands_run_from_the_wheel(wheel: Path, tool_bin: Path, project: Path) -> None:
    """init vendors the wheel and pins its version; generate --check, lint, new tool, tools and diff in the new project; the
    review (`make review`: diff against main, of the working tree) fails a breaking change."""
    kumitate = str(tool_bin / "kumitate")
    pyproject = (project / "pyproject.toml").read_text()
    version = wheel.name.split("-")[1]
    assert f'dependencies = ["kumitate=={version}"]' in pyproject  # the kumitate that made it, vendored
    assert f'"kumitate[codegen,fuzz]=={version}"' in pyproject
    assert (project / "vendor" / wheel.name).is_file()
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

    commit_all(project, "a new tool")
    assert "PASS" in run([kumitate, "diff", "main"], project).stdout  # the review: a tool added breaks nothing
    tool = project / "specs/hello/tools/greet.yaml"
    doc = yaml.safe_load(tool.read_text())
    doc["output"]["properties"]["shout"] = {"type": "string", "description": "The greeting, loud."}
    tool.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    commit_all(project, "a second output field")
    del doc["output"]["properties"]["shout"]
    tool.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))  # uncommitted: the working tree
    review = run([kumitate, "diff", "main"], project, ok=False)
    assert review.returncode != 0, review.stdout
    assert "working tree" in review.stdout and "OUTPUT_FIELD" in review.stdout and "**breaking**" in review.stdout


def test_the_project_serves_from_the_wheel(tool_bin: Path, project: Path, tmp_path: Path) -> None:
    command = [str(tool_bin / "kumitate"), "serve", "--host", "127.0.0.1", "--port", "{port}"]
    serves_the_readme_greeting(command, project, tmp_path / "serve.log")
