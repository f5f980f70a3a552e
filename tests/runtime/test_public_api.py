"""`kumitate` declares what a tool author imports and loads each name only when it is read."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import kumitate
from tests.conftest import REPO


def test_every_declared_name_is_the_object_of_its_home_module() -> None:
    assert set(kumitate.__all__) == {"__version__", *kumitate._HOME}
    for name, home in kumitate._HOME.items():
        assert getattr(kumitate, name) is getattr(importlib.import_module(home), name), name
    assert set(kumitate.__all__) <= set(dir(kumitate))


def test_an_unknown_name_is_an_attribute_error_and_submodules_still_import() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = kumitate.nothing_here  # type: ignore[attr-defined]
    from kumitate import faults

    assert faults is importlib.import_module("kumitate.faults")


def test_importing_kumitate_loads_none_of_the_public_modules() -> None:
    """Every `python -m kumitate` imports the package first: the re-exports must not make it heavier."""
    probe = "import json, sys, kumitate; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    heavy = [m for m in loaded if m.startswith(("kumitate.", "pydantic", "sqlalchemy", "litestar", "fastmcp"))]
    assert heavy == []
