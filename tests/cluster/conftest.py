"""The real local cluster for these tests: PostgreSQL, Redis, nginx and two kumitate instances.

Started once per session in a temp directory with a free load-balancer port (a `make cluster` of
your own on CLUSTER_PORT is left alone), stopped at the end. When the Debian packages are missing
the tests are skipped with the reason; with KUMITATE_CLUSTER_REQUIRED=1 (CI) they fail instead.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from deploy import servers
from deploy.cluster import Cluster
from tests.servers import unavailable

LOG_TAIL = 4000
"""Characters of each log a failed cluster test's report shows (the end: what happened last)."""


@pytest.fixture(scope="session")
def cluster(seeded_data_dir: Path) -> Iterator[Cluster]:
    missing = servers.missing_packages()
    if missing:
        unavailable(
            f"cluster tests: Debian packages {' '.join(missing)} are not installed (run `make cluster-install` as root)"
        )
    directory = Path(tempfile.mkdtemp(prefix="kumitate-cluster-"))
    directory.chmod(0o755)
    household_exports = directory / "household-exports"  # one folder both instances import (test (e))
    household_exports.mkdir()
    env = {"HOUSEHOLD_DATA_DIR": str(household_exports), "HOUSEHOLD_INCLUDE_SAMPLES": "1"}
    running = Cluster(directory, servers.free_port(), instances=2, python=sys.executable, env=env)
    for index in range(running.count):  # the session's analytics sample database: no instance generates its own
        analytics = running.instance_dir(index) / "data" / "analytics"
        analytics.mkdir(parents=True)
        shutil.copy2(seeded_data_dir / "analytics" / "activities.duckdb", analytics)
    try:
        running.start()
    except (servers.ClusterError, OSError) as exc:
        running.stop(fast=True)
        unavailable(f"cluster tests: the cluster could not be started: {exc}")
    yield running
    running.stop(fast=True)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed cluster test's report ends with the tails of nginx's error log, supervisord's and the
    instances' logs: the cluster's directory is removed when the session ends, and CI keeps only what was
    printed (an intermittent "Server disconnected without sending a response" through nginx, stop 41)."""
    report: pytest.TestReport = yield
    cluster = getattr(item, "funcargs", {}).get("cluster")
    if report.when == "call" and report.failed and isinstance(cluster, Cluster):
        logs = [cluster.dir / "nginx" / "error.log", cluster.dir / "supervisord.log"]
        logs += [cluster.instance_dir(index) / "kumitate.log" for index in range(cluster.count)]
        for log in logs:
            text = log.read_text(errors="replace")[-LOG_TAIL:] if log.exists() else "(no log)"
            report.sections.append((f"cluster log {log}", text))
    return report
