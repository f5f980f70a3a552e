"""Scale-out: throughput through the load balancer with 1 and 2 instances (one mixed workload), and the
idempotency store's latency per operation on SQLite vs PostgreSQL, as ratios measured in one run.

Run: python -m bench.cluster_bench   (starts its own cluster in a temp directory: needs `make cluster-install`)
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from deploy import servers
from deploy.cluster import Cluster
from kumitate.deploy import DeploySettings
from kumitate.policies.idempotency import IdempotencyStore, Stored
from kumitate.storage import open_database

REPO = Path(__file__).resolve().parent.parent
# Tools without a rate limit (yana's 5 req/s would measure the limiter, not the instances).
WORKLOAD = [
    "stays/tools/summarize_stays",
    "attendance/tools/invitee_key",
    "attendance/tools/parse_attendance_intent",
    "household/tools/get_monthly_household",
]
CONNECTIONS = 16
SECONDS = 10.0
STORE_OPS = 300


def requests() -> list[tuple[str, Any]]:
    """(path, body) of each workload tool's first successful example."""
    out = []
    for name in WORKLOAD:
        spec = yaml.safe_load((REPO / "specs" / f"{name}.yaml").read_text())
        example = next(e for e in spec["examples"] if "error" not in e)
        out.append((spec["http"]["path"], example["input"]))
    return out


async def throughput(url: str) -> tuple[float, float]:
    """Requests/s and error rate of CONNECTIONS clients cycling through the workload for SECONDS."""
    calls = requests()
    done, failed = 0, 0
    limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        for path, body in calls:  # warm up every tool on every instance
            for _ in range(4):
                await http.post(path, json=body)
        deadline = time.perf_counter() + SECONDS

        async def client(offset: int) -> None:
            nonlocal done, failed
            for path, body in itertools.islice(itertools.cycle(calls), offset, None):
                if time.perf_counter() >= deadline:
                    return
                response = await http.post(path, json=body)
                done += 1
                failed += response.status_code >= 400

        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(CONNECTIONS)))
        elapsed = time.perf_counter() - started
    return done / elapsed, failed / max(done, 1)


async def store_latency(database_url: str | None, data_dir: Path) -> dict[str, float]:
    """Median ms per operation: a first call (claim + store) and a replay (one lookup)."""
    store = IdempotencyStore(open_database(data_dir, DeploySettings.model_validate({"database_url": database_url})))

    async def execute() -> tuple[Stored, bool]:
        return Stored(200, {"ok": True, "rows": list(range(20))}), True

    first, replay = [], []
    for i in range(STORE_OPS):
        ident = ("bench.tool", "anonymous", f"key-{i}")
        started = time.perf_counter()
        await store.run(ident, {"i": i}, 3600, execute)
        first.append(time.perf_counter() - started)
        started = time.perf_counter()
        await store.run(ident, {"i": i}, 3600, execute)
        replay.append(time.perf_counter() - started)
    store._db.close()
    return {"first": statistics.median(first) * 1000, "replay": statistics.median(replay) * 1000}


def main() -> int:
    missing = servers.missing_packages()
    if missing:
        print(f"skipped: Debian packages {' '.join(missing)} are missing (make cluster-install)")
        return 0
    with tempfile.TemporaryDirectory(prefix="kumitate-bench-") as tmp:
        directory = Path(tmp)
        directory.chmod(0o755)
        cluster = Cluster(directory / "cluster", servers.free_port(), instances=2, python=sys.executable)
        try:
            cluster.start()
            two = asyncio.run(throughput(cluster.url))
            servers.reload_nginx(cluster.dir, cluster.ports.lb, cluster.ports.instances[:1])
            one = asyncio.run(throughput(cluster.url))
            sqlite = asyncio.run(store_latency(None, directory / "sqlite"))
            postgres = asyncio.run(store_latency(cluster.database_url, directory / "unused"))
        finally:
            cluster.stop()
    print(
        f"{CONNECTIONS} connections for {SECONDS:g} s through nginx; workload cycles "
        + ", ".join(w.split("/")[-1] for w in WORKLOAD)
        + f"; idempotency store: {STORE_OPS} keys, in process\n"
    )
    print("| What | Measured | Ratio |\n|---|---|---|")
    print(
        f"| Throughput through the load balancer, 2 vs 1 instances | {two[0]:.0f} vs {one[0]:.0f} req/s "
        f"(errors {two[1]:.1%} / {one[1]:.1%}) | **{two[0] / one[0]:.2f}** |"
    )
    for op, label in (("first", "first call (claim + store)"), ("replay", "replay (lookup)")):
        print(
            f"| Idempotency store, {label}, PostgreSQL vs SQLite | {postgres[op]:.2f} vs {sqlite[op]:.2f} ms "
            f"(median) | **{postgres[op] / sqlite[op]:.2f}** |"
        )
    print(
        "\nEverything (instances, nginx, PostgreSQL, Redis, the load generator) shares this machine's CPUs, so the"
        "\nthroughput ratio is what one machine shows, not a scaling law. PostgreSQL commits are durable (fsync per"
        "\ncommit, over TCP, a connection check per checkout); SQLite runs WAL with synchronous=NORMAL in process."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
