"""The test tiers CI relies on: a global timeout, coverage in `make test`, and CI running the README's command."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO


def test_every_test_has_a_generous_timeout(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.pluginmanager.hasplugin("timeout"), "pytest-timeout is a dev dependency"
    assert 300 <= float(pytestconfig.getini("timeout")) <= 3600


def test_make_test_measures_coverage_and_ci_runs_it() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "pytest" in recipe and "--cov" in recipe and "coverage report --format=total" in recipe
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "make test" in readme
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test\b", ci, re.M), ".ci/run calls the README's test command"
    assert "^coverage: " in ci, ".ci/run repeats the coverage figure at the end"
