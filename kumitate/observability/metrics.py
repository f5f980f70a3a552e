"""Prometheus metrics for operators: calls, latency, in-flight work, replays, breakers, queue depth.

One `Metrics` per runtime, on its own registry (several runtimes may live in one test process).
The pipeline reports every finished call once (`observe`); in-flight calls are counted around the
call. Outbound circuit breakers and the sync-handler queue are read when scraped, not sampled.
Rate-limit rejections and timeouts are calls with those outcome codes:

    sum by (tool) (rate(kumitate_calls_total{outcome="RATE_LIMITED"}[5m]))
    histogram_quantile(0.95, sum by (le, tool) (rate(kumitate_call_duration_seconds_bucket[5m])))

Labels are service, tool, transport and the catalogue code: never a tool input.
With several worker processes, set PROMETHEUS_MULTIPROC_DIR (prometheus_client's multiprocess
mode) so that a scrape of any worker sums all of them.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar, cast

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from kumitate.outbound.breaker import CircuitBreaker

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
BREAKER_STATES = ("closed", "open", "half_open")

M = TypeVar("M", bound=MetricWrapperBase)

_breakers: weakref.WeakValueDictionary[str, CircuitBreaker] = weakref.WeakValueDictionary()


def track_breaker(name: str, breaker: CircuitBreaker) -> None:
    """Let /metrics show this outbound circuit breaker's state (kumitate.outbound registers each one)."""
    _breakers[name] = breaker


class _ScrapeTime(Collector):
    """Values read when scraped: the handler queue depth and each outbound breaker's state."""

    def __init__(self, queue_depth: Callable[[], int]) -> None:
        self.queue_depth = queue_depth

    def collect(self) -> Iterator[GaugeMetricFamily]:
        queued = GaugeMetricFamily(
            "kumitate_worker_queue_depth", "Sync handler calls waiting for a worker thread (KUMITATE_WORKER_THREADS)."
        )
        queued.add_metric([], self.queue_depth())
        yield queued
        breakers = GaugeMetricFamily(
            "kumitate_outbound_breaker_state",
            "1 for the state each outbound circuit breaker is in (closed, open, half_open).",
            labels=["upstream", "state"],
        )
        for name, breaker in sorted(_breakers.items()):
            current = str(breaker.state).replace("-", "_")
            for state in BREAKER_STATES:
                breakers.add_metric([name, state], 1.0 if current == state else 0.0)
        yield breakers


class Metrics:
    """The Prometheus metrics of one runtime, on a registry of its own."""

    def __init__(self, queue_depth: Callable[[], int] = lambda: 0) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self.calls = Counter(
            "kumitate_calls",
            "Finished tool calls and resource reads, by outcome (OK or the catalogue code).",
            ["service", "tool", "transport", "outcome"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "kumitate_call_duration_seconds",
            "Time from admission to the answer, per call.",
            ["service", "tool", "transport"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "kumitate_calls_in_flight",
            "Calls being served right now.",
            ["service", "tool"],
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.replays = Counter(
            "kumitate_idempotent_replays",
            "Calls answered from the idempotency store instead of running again.",
            ["service", "tool"],
            registry=self.registry,
        )
        # kept to add to a multiprocess scrape: a registry lists its collectors through no public API
        self._scrape_time = _ScrapeTime(queue_depth)
        self.registry.register(self._scrape_time)
        self._children: dict[tuple[int | str, ...], MetricWrapperBase] = {}

    def _child(self, metric: M, *labels: str) -> M:
        """`metric.labels(*labels)`, looked up once: prometheus_client validates and locks on every call."""
        key: tuple[int | str, ...] = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return cast(M, child)  # the key holds the metric's id: its child is of its type

    @contextmanager
    def running(self, service: str, tool: str) -> Iterator[None]:
        """Count the call as in flight for as long as the block runs."""
        gauge = self._child(self.in_flight, service, tool)
        gauge.inc()
        try:
            yield
        finally:
            gauge.dec()

    def observe(
        self, service: str, tool: str, transport: str, outcome: str, seconds: float, *, replayed: bool = False
    ) -> None:
        """Record one finished call: its outcome code and duration (and whether it was a replay)."""
        self._child(self.calls, service, tool, transport, outcome).inc()
        self._child(self.duration, service, tool, transport).observe(seconds)
        if replayed:
            self._child(self.replays, service, tool).inc()

    def exposition(self) -> bytes:
        """The text format Prometheus scrapes (summed over worker processes in multiprocess mode)."""
        if not self.multiprocess:
            return generate_latest(self.registry)
        combined = CollectorRegistry()
        MultiProcessCollector(combined)
        combined.register(self._scrape_time)
        return generate_latest(combined)
