"""The real local cluster for these tests: PostgreSQL, Redis, nginx and two kumitate instances.

Started once per session in a temp directory with a free load-balancer port (a `make cluster` of
your own on CLUSTER_PORT is left alone), stopped at the end. When the Debian packages are missing
the tests are skipped with the reason; with KUMITATE_CLUSTER_REQUIRED=1 (CI) they fail instead.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy import servers
from deploy.cluster import Cluster
from tests.servers import unavailable


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
