"""The new project's Makefile: `make venv PYTHON=python3.X` never silently reuses a .venv of another Python."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codegen import scaffold


def other_python() -> str:
    """An interpreter of another minor version than this one: from PATH, else pyenv's installed versions
    (this project's machines carry 3.12 and 3.13 there; docs/development.md, "Python versions")."""
    pyenv = shutil.which("pyenv")
    root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip() if pyenv else ""
    for minor in (12, 13, 11):
        if minor == sys.version_info[1]:
            continue
        found = sorted(Path(root).glob(f"versions/3.{minor}.*/bin/python3.{minor}")) if root else []
        candidates = [*found, shutil.which(f"python3.{minor}")]
        for path in filter(None, candidates):
            if subprocess.run([str(path), "-c", "pass"], capture_output=True).returncode == 0:
                return str(path)
    pytest.skip("no Python of another minor version (PATH, pyenv)")


def test_a_venv_of_another_python_is_an_error(tmp_path: Path) -> None:
    scaffold.init_project(tmp_path / "p", kumitate="kumitate==0.1.0")
    project = tmp_path / "p"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", ".venv"], cwd=project, check=True)
    other = other_python()
    done = subprocess.run(["make", "venv", f"PYTHON={other}"], cwd=project, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    minor = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert f".venv is Python {minor}, but PYTHON={other} is Python" in done.stderr
    assert "remove .venv or choose another VENV=" in done.stderr
    assert not (project / ".venv/.installed").exists()  # nothing was installed into the wrong venv
    # the same Python is reused as before (the check passes; the dry run shows the install would run)
    same = subprocess.run(
        ["make", "-n", "venv", f"PYTHON={sys.executable}"], cwd=project, capture_output=True, text=True
    )
    assert same.returncode == 0 and "pip install -q -e '.[dev]'" in same.stdout, same.stderr
