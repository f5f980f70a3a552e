"""The wheel, built once per session for whichever scaffold tests ask (test_wheel.py, test_package.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.scaffold.wheels import build_wheel


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kumitate's wheel, built once per session from a copy of what it packages."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def fresh_copy(initialised: Path, tmp_path: Path) -> Path:
    """A copy of an initialised project, at the same name, for one test to change."""
    return Path(shutil.copytree(initialised, tmp_path / initialised.name, symlinks=True))
