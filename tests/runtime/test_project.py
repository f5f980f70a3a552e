"""Where a project keeps specs, generated code and handlers: discovery and configuration."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kumitate.project import SOURCE_CHECKOUT, Project, ProjectError


def test_defaults_are_todays_layout(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    project = Project.discover(tmp_path / "specs", env={})
    assert project.root == tmp_path.resolve()
    assert (project.specs, project.generated, project.handlers) == (
        tmp_path.resolve() / "specs",
        tmp_path.resolve() / "generated",
        tmp_path.resolve() / "handlers",
    )
    assert project.out == project.root and project.openapi == project.generated / "openapi.json"


def test_pyproject_moves_the_paths(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.kumitate]\nspecs = "api/specs"\ngenerated = "src/generated"\nhandlers = "src/handlers"\n'
    )
    nested = tmp_path / "src" / "deep"
    nested.mkdir(parents=True)
    project = Project.discover(nested, env={})
    root = tmp_path.resolve()
    assert project.specs == root / "api" / "specs"
    assert project.out == root / "src" and project.handlers == root / "src" / "handlers"


def test_a_generated_path_must_keep_its_package_name(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.kumitate]\ngenerated = "out/gen"\n')
    with pytest.raises(ProjectError, match=r"pyproject.toml.*generated.*must end in /generated"):
        Project.at(tmp_path)


def test_environment_wins_and_the_checkout_is_the_fallback(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    assert Project.discover(Path("/"), env={"KUMITATE_PROJECT": str(tmp_path)}).root == tmp_path.resolve()
    assert Project.discover(Path("/"), env={}).root == SOURCE_CHECKOUT


def test_activate_puts_the_projects_packages_first_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """generated/ and handlers/ are imported by those names: the project's parent directories go first on
    sys.path (generated's, then handlers'), and activating it again changes nothing."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.kumitate]\ngenerated = "out/generated"\nhandlers = "src/handlers"\n'
    )
    project = Project.at(tmp_path)
    root = str(tmp_path.resolve())
    monkeypatch.setattr(sys, "path", ["/elsewhere", f"{root}/src"])
    assert project.activate() is project
    assert sys.path == [f"{root}/out", f"{root}/src", "/elsewhere"]
    project.activate()
    assert sys.path == [f"{root}/out", f"{root}/src", "/elsewhere"]
