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


def test_make_test_runs_in_a_seeded_random_order_and_ci_varies_the_seed_by_commit() -> None:
    """Order dependencies surface in CI (the order changes with the commit) and reproduce locally
    (the seed is printed; `make test TEST_SEED=<n>`); other pytest runs keep file order."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^TEST_ORDER = .*-p randomly --randomly-seed=\$\(TEST_SEED\)", makefile, re.M)
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "$(TEST_ORDER)" in recipe and "TEST_SEED=$(TEST_SEED) repeats it" in recipe
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r'^make test TEST_SEED="\$test_seed"', ci, re.M) and "git rev-parse" in ci
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "-p no:randomly" in pyproject
