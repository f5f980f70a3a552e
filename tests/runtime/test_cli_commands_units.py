"""`kumitate init | new | tools` refusals through `main([...])` in process: each says what is wrong
in one line, exits 2 and writes nothing (tests/scaffold covers what they write when they succeed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import codegen
from kumitate.cli import main
from kumitate.project import SOURCE_CHECKOUT


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    return status, capsys.readouterr().err.strip()


def specs_status() -> str:
    """What git sees changed under this checkout's specs/ and handlers/ (a refused `new` touches neither)."""
    done = subprocess.run(
        ["git", "status", "--porcelain", "--", "specs", "handlers"],
        cwd=SOURCE_CHECKOUT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_init_refuses_a_directory_that_is_not_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    status, err = run(capsys, "init", str(tmp_path))
    assert status == 2
    assert err == f"{tmp_path} is not empty; `kumitate init` starts a project in a new directory"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_init_refuses_a_name_that_is_not_snake_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = run(capsys, "init", str(tmp_path / "new"), "--service", "Hello-World")
    assert status == 2
    assert err.startswith("service name 'Hello-World' must be snake_case")
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["new", "service", "Bad"], "service name 'Bad' must be snake_case"),
        (["new", "service", "stays"], "already exists; nothing was changed"),
        (["new", "tool", "no_such_service", "a_tool"], "no service 'no_such_service' in "),
        (["new", "resource", "no_such_service", "a_resource"], "no service 'no_such_service' in "),
    ],
)
def test_new_refuses_and_changes_nothing(
    argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KUMITATE_PROJECT", raising=False)
    monkeypatch.chdir(SOURCE_CHECKOUT)
    before = specs_status()
    status, err = run(capsys, *argv)
    assert status == 2
    assert message in err
    assert specs_status() == before


def test_tools_in_a_project_without_a_lockfile_says_to_generate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.kumitate]\n")
    monkeypatch.setenv("KUMITATE_PROJECT", str(tmp_path))
    status, err = run(capsys, "tools")
    assert status == 2
    assert err == f"no {tmp_path.resolve()}/generated/tools.lock.json: run `kumitate generate`"


def test_a_generator_command_without_the_generator_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As where only the runtime is installed: the scaffold's jinja2 cannot be imported."""
    monkeypatch.delitem(sys.modules, "codegen.scaffold", raising=False)
    monkeypatch.delattr(codegen, "scaffold", raising=False)
    monkeypatch.setitem(sys.modules, "jinja2", None)  # import jinja2 raises ModuleNotFoundError
    status, err = run(capsys, "init", str(tmp_path / "new"))
    assert status == 2
    assert err.startswith("kumitate init: the generator is not installed (no module 'jinja2').")
    assert "pip install 'kumitate[codegen]'" in err
    assert not (tmp_path / "new").exists()


def test_another_missing_module_is_not_blamed_on_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "codegen.scaffold", raising=False)
    monkeypatch.delattr(codegen, "scaffold", raising=False)
    monkeypatch.setitem(sys.modules, "codegen.scaffold", None)
    with pytest.raises(ModuleNotFoundError):
        main(["init", str(tmp_path / "new")])
