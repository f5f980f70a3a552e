"""What /metrics reads at scrape time: queue depth, in-flight calls and outbound breaker states."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from kumitate.observability.metrics import Metrics
from kumitate.outbound import CircuitBreaker, OutboundClient


def scrape(metrics: Metrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(metrics.exposition().decode())
        for s in family.samples
    }


def test_breaker_states_follow_the_breaker() -> None:
    metrics = Metrics()
    breaker = CircuitBreaker(failure_threshold=2)
    with OutboundClient("http://127.0.0.1:9/", breaker=breaker):
        key = ("kumitate_outbound_breaker_state", frozenset({("upstream", "127.0.0.1:9"), ("state", "closed")}))
        assert scrape(metrics)[key] == 1.0
        breaker.record_failure()
        breaker.record_failure()
        found = scrape(metrics)
        assert found[key] == 0.0
        assert found[(key[0], frozenset({("upstream", "127.0.0.1:9"), ("state", "open")}))] == 1.0


def test_queue_depth_and_in_flight_are_read_live() -> None:
    depth = [0]
    metrics = Metrics(queue_depth=lambda: depth[0])
    depth[0] = 7
    with metrics.running("svc", "tool"):
        found = scrape(metrics)
        assert found[("kumitate_worker_queue_depth", frozenset())] == 7
        assert found[("kumitate_calls_in_flight", frozenset({("service", "svc"), ("tool", "tool")}))] == 1
    assert scrape(metrics)[("kumitate_calls_in_flight", frozenset({("service", "svc"), ("tool", "tool")}))] == 0


def test_a_multiprocess_scrape_keeps_the_scrape_time_values(tmp_path: Path) -> None:
    """With PROMETHEUS_MULTIPROC_DIR (several workers), a scrape sums the workers' files and still reads
    the queue depth and breakers of the worker scraped (in a fresh process: prometheus_client picks
    its multiprocess values when first imported)."""
    code = (
        "from kumitate.observability.metrics import Metrics\n"
        "m = Metrics(queue_depth=lambda: 7)\n"
        "m.observe('svc', 'tool', 'http', 'OK', 0.01)\n"
        "print(m.exposition().decode())\n"
    )
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    samples = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(done.stdout)
        for s in family.samples
    }
    assert samples[("kumitate_worker_queue_depth", frozenset())] == 7
    labels = frozenset({("service", "svc"), ("tool", "tool"), ("transport", "http"), ("outcome", "OK")})
    assert samples[("kumitate_calls_total", labels)] == 1
