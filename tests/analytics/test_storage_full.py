"""A full disk answers STORAGE_UNAVAILABLE (503, retryable) without engine internals, and recovers (issue 21).

Real: the service directory is a 1 MB tmpfs mounted in a private mount namespace
(`unshare -m`, root only), so DuckDB and Python hit ENOSPC exactly as on a full disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("storage_full_child.py")
ENGINE_WORDS = ("IO Error", "DuckDB", "No space", "errno", "/", ".csv", "Could not")


def _can_mount_tmpfs(tmp_path: Path) -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {probe}"], capture_output=True, timeout=30
    )
    return done.returncode == 0


def test_full_disk_is_storage_unavailable_and_recovers(small_db_template: Path, tmp_path: Path) -> None:
    if not _can_mount_tmpfs(tmp_path):
        pytest.skip("needs root and unshare -m to mount a private tmpfs")
    db = tmp_path / "activities.duckdb"
    shutil.copy(small_db_template, db)
    mount = tmp_path / "small_disk"
    mount.mkdir()
    script = (
        f'mount -t tmpfs -o size=1m tmpfs "{mount}" && exec "{sys.executable}" "{CHILD}" "{db}" "{mount}/analytics"'
    )
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for case in ("big", "small_on_full_disk"):
        assert out[case]["code"] == "STORAGE_UNAVAILABLE", out[case]
        assert out[case]["details"]["retry_after_ms"] > 0
        assert not any(word in out[case]["message"] for word in ENGINE_WORDS), out[case]["message"]
    # Nothing half-written is left behind, and reads that need no disk still work.
    assert out["left_after_big"] == [] and out["left_after_small"] == []
    assert out["profile_on_full_disk"] == {"ok": 6}
    # Space returns: the same export succeeds and reads back.
    assert out["small_after_space_returns"] == {"ok": 6}
    assert out["read_back"].startswith("activity_id,distance_km")
    # The log names the failure's class, not the query or the path.
    assert "class=IOException" in done.stderr
    assert str(mount) not in done.stderr and "SELECT" not in done.stderr
