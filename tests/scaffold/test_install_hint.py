"""A generator command where only kumitate's runtime is installed says what to install (no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

# The codegen extra's modules made unimportable (None in sys.modules is how Python marks a module absent).
WITHOUT = "import sys; sys.modules.update(dict.fromkeys(['jinja2', 'datamodel_code_generator', 'jsonschema'])); "


@pytest.mark.parametrize("argv", [["generate", "--check"], ["lint"], ["diff", "main"], ["new", "tool", "hello", "x"]])
def test_codegen_commands_without_the_extra_print_the_install_hint(argv: list[str], tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()  # a project of its own: nothing is written into this repository
    code = WITHOUT + f"from kumitate.cli import main; sys.exit(main({argv!r}))"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUMITATE_")} | {"PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"kumitate {argv[0]}: the generator is not installed" in done.stderr
    assert "pip install 'kumitate[codegen]'" in done.stderr
