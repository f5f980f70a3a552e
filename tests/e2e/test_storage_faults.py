"""Storage that fails under a running server, or before it starts: a real tmpfs in a private mount
namespace (`unshare -m`, as root), filled until the kernel says ENOSPC, then freed; a read-only one;
and a data directory that cannot be created at all."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, free_port, server_env

pytestmark = pytest.mark.slow
DRIVER = Path(__file__).with_name("storage_driver.py")


@cache
def namespaces_unavailable() -> str | None:
    """Why a private mount namespace with a tmpfs cannot be had here, or None."""
    if shutil.which("unshare") is None:
        return "the unshare command is not installed"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt && umount /mnt"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"unshare -m / mount -t tmpfs is not permitted here: {probe.stderr.strip()[:200]}"
    return None


def drive(mode: str, tmp_path: Path, **env: str) -> Any:
    reason = namespaces_unavailable()
    if reason:
        pytest.skip(reason)
    done = subprocess.run(
        ["unshare", "-m", sys.executable, str(DRIVER), mode, str(tmp_path / "var")],
        cwd=REPO,
        env={**server_env(tmp_path / "var"), "DRIVER_LOG": str(tmp_path / "server.log"), **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_full_disk_is_storage_unavailable_and_everything_recovers(tmp_path: Path, seeded_data_dir: Path) -> None:
    report = drive("full", tmp_path, DRIVER_SEEDED=str(seeded_data_dir))
    assert [c["status"] for c in report["before"]] == [200] * len(report["before"]), report["before"]
    for call in report["full"]:
        assert call["status"] in (200, 503), call  # never a 500, never a 400 with engine internals
        if call["status"] == 503:
            assert (call["code"], call["retry_after"]) == ("STORAGE_UNAVAILABLE", "5"), call
    writes = [c for c in report["full"] if c["kind"] == "write"]
    assert {c["code"] for c in writes} == {"STORAGE_UNAVAILABLE"}, writes
    health = report["health_full"]
    assert (health["status"], health["retry_after"]) == (503, "5")
    assert health["body"]["checks"]["data_dir"] == {"ok": False, "error": "No space left on device"}
    # liveness stays 200 (a restart frees no space) and reports the disk
    assert (health["live_status"], health["live_storage"]) == (200, {"ok": False, "error": "No space left on device"})
    assert (health["yana_status"], health["yana_code"]) == (503, "STORAGE_UNAVAILABLE")
    assert report["health_freed"]["status"] == 200 and report["health_freed"]["yana_status"] == 200
    assert [c["status"] for c in report["freed"]] == [200] * len(report["freed"]), report["freed"]
    log = (tmp_path / "server.log").read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log and '"outcome": "INTERNAL"' not in log


def test_a_read_only_data_directory_stops_start_up_with_one_line(tmp_path: Path) -> None:
    runs = drive("readonly", tmp_path)
    for name, run in runs.items():
        lines = run["stderr"].strip().splitlines()
        assert run["returncode"] != 0, (name, run)
        assert "Traceback" not in run["stderr"], (name, run["stderr"])
        failure = [line for line in lines if line.startswith("kumitate:")]
        assert len(failure) == 1, (name, lines)
        assert str(tmp_path / "var") in failure[0] and "Read-only file system" in failure[0]


@pytest.mark.parametrize("command", [["serve", "--host", "127.0.0.1"], ["mcp", "--stdio"]])
def test_an_unopenable_data_directory_stops_start_up_with_one_line(tmp_path: Path, command: list[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    data_dir = blocker / "var"
    args = [*command, "--port", str(free_port())] if command[0] == "serve" else command
    done = subprocess.run(
        [sys.executable, "-m", "kumitate", *args],
        cwd=REPO,
        env=server_env(data_dir),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [f"kumitate: cannot use the data directory {data_dir}: Not a directory"]
