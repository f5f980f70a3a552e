"""A tool call that takes a few seconds on any machine, for tests that need a call in flight: an
analytics query over a self-join of DuckDB's range(), sized from a timed probe."""

from __future__ import annotations

import math
import time

import httpx

PROBE_N = 10_000


def slow_query(n: int) -> str:
    """A one-row DuckDB query over n² rows (its time grows with n²)."""
    return f"SELECT sum(a.range * b.range) AS s FROM range({n}) a, range({n}) b"


def calibrated(base_url: str, seconds: float) -> str:
    """A query that keeps the instance at `base_url` busy for about `seconds` (analytics profile's
    deadline is 15 s: keep `seconds` well under it)."""
    started = time.monotonic()
    probe = httpx.post(f"{base_url}/v1/analytics/profile", json={"table_or_query": slow_query(PROBE_N)}, timeout=60)
    probe.raise_for_status()
    return slow_query(int(PROBE_N * math.sqrt(seconds / max(time.monotonic() - started, 0.05))))
