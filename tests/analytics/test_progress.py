"""Export and materialize report progress per phase, and a call cancelled mid-way publishes nothing."""

from __future__ import annotations

import threading
import time

import pytest

from handlers.analytics.core.service import AnalyticsService
from kumitate.context import CallCancelled, CallContext, bound, state_of

from .test_materialize import PER_RUN


class Recorder:
    """A progress sink that records reports and cancels its call at report `cancel_at`."""

    def __init__(self, cancel_at: float | None = None) -> None:
        self.ctx = CallContext(service="analytics", tool="t", transport="test", run_id="r", trace_id="t")
        state_of(self.ctx).progress_sink = self
        self.cancel_at = cancel_at
        self.seen: list[float] = []

    def __call__(self, done: float, total: float | None, message: str | None) -> None:
        self.seen.append(done)
        assert total == 3 and message
        if done == self.cancel_at:
            assert state_of(self.ctx).cancel()  # as the pipeline does when the caller goes away


def test_export_and_materialize_report_each_phase(service: AnalyticsService) -> None:
    for run in (
        lambda: service.export({"query": PER_RUN}),
        lambda: service.materialize({"name": "per_run", "query": PER_RUN}),
    ):
        recorder = Recorder()
        with bound(recorder.ctx):
            run()
        assert recorder.seen == [0, 1, 2]


def test_an_export_cancelled_while_writing_leaves_no_file(service: AnalyticsService) -> None:
    recorder = Recorder(cancel_at=1)  # the COPY runs after report 1; report 2 stops the call
    with bound(recorder.ctx), pytest.raises(CallCancelled):
        service.export({"query": PER_RUN})
    assert list(service.exports.directory.iterdir()) == []


def test_a_materialize_cancelled_while_building_leaves_no_table(service: AnalyticsService) -> None:
    recorder = Recorder(cancel_at=1)
    with bound(recorder.ctx), pytest.raises(CallCancelled):
        service.materialize({"name": "per_run", "query": PER_RUN})
    assert service.schema()["materialized"] == []
    tables = service.runner.con.execute("SELECT table_name FROM duckdb_tables() WHERE table_name LIKE '%mat%'")
    assert tables.fetchall() == []


SLOW = (  # about a second per row of c here, so it runs into the 10 s query deadline
    "SELECT count(*) AS n FROM time_series_metrics a, time_series_metrics b, "
    "(SELECT elapsed_s FROM time_series_metrics LIMIT 20) c "
    "WHERE (a.elapsed_s * 31 + b.elapsed_s * 17 + c.elapsed_s) % 1000003 = 5"
)


def test_a_cancelled_query_is_interrupted_at_once(service: AnalyticsService) -> None:
    """The caller goes away while DuckDB runs: the query stops within a poll, not at its deadline."""
    recorder = Recorder()
    timer = threading.Timer(0.3, state_of(recorder.ctx).cancel)
    started = time.monotonic()
    timer.start()
    try:
        with bound(recorder.ctx), pytest.raises(CallCancelled):
            service.materialize({"name": "slow", "query": SLOW})
    finally:
        timer.cancel()
    assert time.monotonic() - started < 3  # the query alone runs for longer than that
    assert service.schema()["materialized"] == []
