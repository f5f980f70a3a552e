"""Instances started at once on one fresh data directory all come up (issue 20): every first-start
loader (migrations, yana labels, household samples, attendance rules, analytics database) is safe
to run concurrently."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.conftest import start_server, stop_server

pytestmark = pytest.mark.slow


def test_three_instances_start_together_on_one_fresh_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "var"
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(start_server, data, tmp_path / f"server{i}.log") for i in range(3)]
        servers = [f.result() for f in futures]
    try:
        for server in servers:
            assert httpx.get(f"{server.url}/readyz", timeout=30).status_code == 200
            found = httpx.post(f"{server.url}/v1/search", json={"query_text": "獺祭"}, timeout=30).json()
            assert found["hits"], found
        logs = "".join((tmp_path / f"server{i}.log").read_text(errors="replace") for i in range(3))
        assert "Traceback" not in logs and "IntegrityError" not in logs
    finally:
        stop_server(*servers)
