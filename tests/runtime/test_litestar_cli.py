"""Litestar's own CLI works on the HTTP part of the app (issue 22.6): `litestar --app kumitate.app:create_litestar routes`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, seeded_copy, server_env


@pytest.mark.slow
def test_litestar_routes_lists_the_generated_http_routes(tmp_path: Path, seeded_data_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "litestar", "--app", "kumitate.app:create_litestar", "routes"],
        cwd=REPO,
        env={**server_env(seeded_copy(seeded_data_dir, tmp_path / "var")), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "/v1/stays/summarize_stays" in done.stdout and "/healthz" in done.stdout
