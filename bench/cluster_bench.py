"""Scale-out: throughput through the load balancer with 1 and 2 instances (one mixed workload), and the
idempotency store's latency per operation on SQLite vs PostgreSQL.

Throughput is measured in RUNS interleaved pairs (2 instances, then 1, then 2 ...: nginx is pointed at
one or both between runs), so a change in the machine's load hits both sides alike; the median and the
spread (min-max) of each side and of the per-pair ratio are reported, with the machine's core count and
load average: the instances, nginx, PostgreSQL, Redis and this load generator share those cores.

Run: python -m bench.cluster_bench   (starts its own cluster in a temp directory: needs `make cluster-install`)
"""

from __future__ import annotations

import asyncio
import itertools
import os
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
from kumitate.policies.idempotency import Stored
from kumitate.policies.idempotency_store import IdempotencyStore
from kumitate.serving.deploy import DeploySettings
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
SECONDS = 4.0
RUNS = 5
STORE_OPS = 300


def requests() -> list[tuple[str, Any]]:
    """(path, body) of each workload tool's first successful example."""
    out = []
    for name in WORKLOAD:
        spec = yaml.safe_load((REPO / "specs" / f"{name}.yaml").read_text())
        example = next(e for e in spec["examples"] if "error" not in e)
        out.append((spec["http"]["path"], example["input"]))
    return out


async def throughput(url: str, warm: bool) -> tuple[float, float]:
    """Requests/s and error rate of CONNECTIONS clients cycling through the workload for SECONDS."""
    calls = requests()
    done, failed = 0, 0
    limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        for path, body in calls if warm else []:  # warm up every tool on every instance
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


def interleaved(cluster: Cluster) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """RUNS pairs of (2 instances, 1 instance) measurements, alternating which goes first."""
    both, first = cluster.ports.instances, cluster.ports.instances[:1]
    pairs = []
    for run in range(RUNS):
        result = {}
        for count in (2, 1) if run % 2 == 0 else (1, 2):
            servers.reload_nginx(cluster.dir, cluster.ports.lb, both if count == 2 else first)
            result[count] = asyncio.run(throughput(cluster.url, warm=run == 0))
        pairs.append((result[2], result[1]))
    servers.reload_nginx(cluster.dir, cluster.ports.lb, both)
    return pairs


def spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


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
    cores, load = len(os.sched_getaffinity(0)), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="kumitate-bench-") as tmp:
        directory = Path(tmp)
        directory.chmod(0o755)
        cluster = Cluster(directory / "cluster", servers.free_port(), instances=2, python=sys.executable)
        try:
            cluster.start()
            pairs = interleaved(cluster)
            sqlite = asyncio.run(store_latency(None, directory / "sqlite"))
            postgres = asyncio.run(store_latency(cluster.database_url, directory / "unused"))
        finally:
            cluster.stop()
    two, one = [p[0][0] for p in pairs], [p[1][0] for p in pairs]
    errors = max(max(p[0][1], p[1][1]) for p in pairs)
    print(
        f"{cores} cores (load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end); {CONNECTIONS}"
        f" connections through nginx, {RUNS} interleaved pairs of {SECONDS:g} s runs; workload cycles "
        + ", ".join(w.split("/")[-1] for w in WORKLOAD)
        + f"; idempotency store: {STORE_OPS} keys, in process\n"
    )
    print("| What | Measured: median (min-max) | Ratio: median (min-max) |\n|---|---|---|")
    print(
        f"| Throughput through the load balancer, 2 vs 1 instances | {spread(two, '.0f')} vs {spread(one, '.0f')}"
        f" req/s (errors at most {errors:.1%}) | **{spread([a / b for a, b in zip(two, one, strict=True)], '.2f')}** |"
    )
    for op, label in (("first", "first call (claim + store)"), ("replay", "replay (lookup)")):
        print(
            f"| Idempotency store, {label}, PostgreSQL vs SQLite | {postgres[op]:.2f} vs {sqlite[op]:.2f} ms "
            f"(median) | **{postgres[op] / sqlite[op]:.2f}** |"
        )
    print(
        f"\nEverything (instances, nginx, PostgreSQL, Redis, the load generator) shares these {cores} cores, so"
        '\nthe throughput ratio is what one machine shows, not a scaling law (docs/deployment.md "Scale").'
        "\nPostgreSQL commits are durable (fsync per commit, over TCP, a connection check per checkout); SQLite"
        "\nruns WAL with synchronous=NORMAL in process."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
