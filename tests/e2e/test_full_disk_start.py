"""A first start on a disk too small for the sample import (issue 27 item 7): one error line on stderr
(after the log lines of what it stored before the disk filled),
exit status 1, and no temporary file left behind (seen: a traceback and a 2.9 MB
`.activities.duckdb.<pid>.tmp`). A real tmpfs in a private mount namespace, as in test_storage_faults."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, free_port, server_env
from tests.e2e.test_storage_faults import namespaces_unavailable

pytestmark = pytest.mark.slow

SCRIPT = """
mount -t tmpfs -o size="$2" tmpfs "$1" || exit 90
"$3" -m kumitate serve --host 127.0.0.1 --port "$4" 2>"$5" >/dev/null
echo "rc=$?"
find "$1" -type f
"""


@pytest.mark.parametrize("size", ["1m", "4m"])
def test_a_first_start_on_a_full_disk_is_one_line_and_leaves_no_temp_file(tmp_path: Path, size: str) -> None:
    """1 MiB fills during the SQLite stores, 4 MiB inside the DuckDB sample build."""
    reason = namespaces_unavailable()
    if reason:
        pytest.skip(reason)
    data = tmp_path / "var"
    data.mkdir()
    stderr = tmp_path / "stderr.txt"
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", SCRIPT, "sh", str(data), size, sys.executable, str(free_port()), str(stderr)],
        cwd=REPO,
        env=server_env(data),
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stdout.splitlines()
    assert lines and lines[0] == "rc=1", (done.stdout, stderr.read_text()[-3000:])
    *before, last = stderr.read_text().splitlines()
    assert last == f"kumitate: cannot use the data directory {data}: {last.rsplit(': ', 1)[-1].strip()}"
    # before it, only the one-line log events of what the start stored (issue 34): no traceback
    assert all("event" in json.loads(line) for line in before), before
    assert any(s in stderr.read_text() for s in ("No space left on device", "Database or disk is full"))
    left = [Path(line).name for line in lines[1:]]
    assert not [name for name in left if ".tmp" in name], left
