"""Dependencies point down (issue 19.2): the runtime loads no developer tooling and no service it does not serve.

Checked in a fresh interpreter each time: what a module imports is only visible in `sys.modules`
of a process that imported nothing else first.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, server_env

TOOLING = ("codegen", "datamodel_code_generator", "ruff", "jinja2", "schemathesis", "pytest")
"""The generator and the review, their dependencies (the `codegen` extra), and the test tools."""
REPORT = "import atexit, json, sys; atexit.register(lambda: print('MODULES', json.dumps(sorted(sys.modules)), file=sys.stderr))"


def _modules(code: str, tmp_path: Path, stdin: str = "") -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", f"{REPORT}\n{code}"],
        cwd=REPO,
        env=server_env(tmp_path / "var"),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    line = next((x for x in done.stderr.splitlines() if x.startswith("MODULES ")), None)
    assert line is not None, done.stderr[-3000:]
    return set(json.loads(line.removeprefix("MODULES ")))


def _tops(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in names)


@pytest.mark.parametrize("module", ["kumitate.runtime", "kumitate.app", "kumitate.cli", "kumitate.settings"])
def test_runtime_modules_import_no_tooling_generated_code_or_handlers(module: str, tmp_path: Path) -> None:
    modules = _modules(f"import {module}", tmp_path)
    assert _tops(modules, (*TOOLING, "generated", "handlers")) == []


def test_the_command_line_loads_no_tooling_to_show_its_version(tmp_path: Path) -> None:
    modules = _modules(
        "from kumitate.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass", tmp_path
    )
    assert _tops(modules, (*TOOLING, "generated", "handlers")) == []


@pytest.mark.slow
def test_mcp_stdio_loads_no_tooling_and_only_the_served_service(tmp_path: Path) -> None:
    """`kumitate mcp --stdio --service stays` until its stdin ends: the stays handlers, nothing of the
    generator, the review or another service's handlers (and so none of their DuckDB, pandas, scipy)."""
    modules = _modules("from kumitate.cli import main\nmain(['mcp', '--stdio', '--service', 'stays'])", tmp_path)
    assert _tops(modules, TOOLING) == []
    assert "handlers.stays" in modules
    assert {m.split(".")[1] for m in modules if m.startswith("handlers.")} == {"stays"}
    assert _tops(modules, ("duckdb", "pandas", "scipy", "matplotlib")) == []
