"""What a developer meets at start-up (issue 22.6): a missing handler or a bad setting is one line on
stderr, not a traceback; the server's own lines, uvicorn's and the MCP SDK's share one format."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, server_env, start_server, stop_server


def _kumitate(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kumitate", *args],
        cwd=tmp_path,
        env=server_env(tmp_path / "var", **env),
        input="",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_tool_without_a_handler_is_one_line(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "specs").mkdir(parents=True)
    shutil.copytree(REPO / "generated", project / "generated", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "handlers" / "stays").mkdir(parents=True)
    (project / "handlers" / "__init__.py").write_text("")
    (project / "handlers" / "stays" / "__init__.py").write_text("def create(settings):\n    return object()\n")
    done = _kumitate(tmp_path, "mcp", "--stdio", "--service", "stays", KUMITATE_PROJECT=str(project))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "kumitate: service 'stays': handlers/stays does not implement tool 'summarize_stays' (method summarize_stays)"
    ]


def test_an_invalid_setting_names_the_variable_in_one_line(tmp_path: Path) -> None:
    done = _kumitate(tmp_path, "serve", "--port", "0", KUMITATE_WORKERS="0", KUMITATE_LOG_FORMAT="xml")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 2 and all(line.startswith("kumitate: KUMITATE_") for line in lines), lines
    assert "KUMITATE_WORKERS" in done.stderr and "KUMITATE_LOG_FORMAT" in done.stderr


def _lines(log: Path) -> list[str]:
    return [line for line in log.read_text(errors="replace").splitlines() if line.strip()]


@pytest.mark.slow
def test_every_stderr_line_is_json_and_the_mcp_start_is_logged_once(tmp_path: Path) -> None:
    server = start_server(tmp_path / "var", tmp_path / "server.log", log_level="info")
    stop_server(server, graceful=True)
    lines = _lines(server.log)
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert [r["event"] for r in records if r["event"] == "mcp_endpoints_started"] == ["mcp_endpoints_started"]
    assert any(r.get("logger") == "uvicorn.error" and "Uvicorn running" in r["event"] for r in records)
    assert not [line for line in lines if "session manager started" in line]
    foreign = [line for line in lines if not line.startswith("{") and not line.startswith(("nanobind", " - "))]
    assert foreign == []


@pytest.mark.slow
def test_the_text_format_is_one_line_per_event(tmp_path: Path, seeded_data_dir: Path) -> None:
    """On the seeded data (the JSON test above keeps a first start's import lines)."""
    log = tmp_path / "server.log"
    server = start_server(tmp_path / "var", log, log_level="info", seeded=seeded_data_dir, KUMITATE_LOG_FORMAT="text")
    stop_server(server, graceful=True)
    lines = _lines(server.log)
    assert any(" info    mcp_endpoints_started endpoints=" in line for line in lines), lines
    assert any("Uvicorn running on" in line and "logger=uvicorn.error" in line for line in lines), lines
    assert not [line for line in lines if line.startswith("{")]
