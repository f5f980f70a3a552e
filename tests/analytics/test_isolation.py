"""Resource governance (issue 27 items 1 and 2), on the service: every query runs in a worker process
that the deadline can end, whatever the query does, and every slot and reservation comes back.

The memory bombs of the issue run against a server inside a memory cgroup (test_isolation_wire.py); the
bombs here are small (a few hundred MB) against a worker bound of 256 MB.
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path

import pytest
from sqlalchemy import select

from handlers.analytics.core.service import AnalyticsService
from handlers.analytics.store import exports_table as analytics_exports
from kumitate.context import CallContext, Principal, bound, state_of
from kumitate.errors import ToolError

from .conftest import FakeClock, make_service

SLOW = "SELECT count(*) AS n FROM range(100000000000) r(i) WHERE hash(i) % 1000003 = 0"
# 50 million BIGINTs in one list: 400 MB that DuckDB's memory_limit does not count.
LIST_BOMB = "SELECT sum(len(l)) AS n FROM (SELECT list(i) AS l FROM range(50000000) r(i))"
# The repro: ~1 GB of CSV per export against a 100 MB per-export and 500 MB per-principal quota.
WIDE = "SELECT repeat('x', 1000) AS s FROM range(1000000)"
ALICE = Principal("alice", frozenset({"analytics"}))


def _worker_pids(service: AnalyticsService) -> set[int]:
    return {s.worker.pid for s in service.runner.slots if s.worker is not None and s.worker.alive()}


def _call(deadline_s: float) -> CallContext:
    deadline = time.monotonic() + deadline_s
    return CallContext(service="analytics", tool="t", transport="test", run_id="r", trace_id="t", deadline=deadline)


def test_queries_run_in_workers_under_a_data_limit(service: AnalyticsService) -> None:
    assert service.profile({"table_or_query": "activities", "columns": ["activity_id"]})["row_count"] == 6
    (pid,) = _worker_pids(service)
    assert pid != os.getpid()
    limits = Path(f"/proc/{pid}/limits").read_text()
    line = next(line for line in limits.splitlines() if line.startswith("Max data size"))
    assert line.split()[3:5] == [str(1024 << 20)] * 2


def test_a_query_past_the_memory_bound_is_too_expensive(
    small_db_template: Path, tmp_path: Path, clock: FakeClock
) -> None:
    svc = make_service(small_db_template, tmp_path, clock, worker_memory_mb=256)
    try:
        for run in (
            lambda: svc.profile({"table_or_query": LIST_BOMB}),
            lambda: svc.export({"query": LIST_BOMB, "format": "csv"}),
            lambda: svc.materialize({"name": "bomb", "query": LIST_BOMB}),
        ):
            with pytest.raises(ToolError) as info:
                run()
            assert info.value.code == "QUERY_TOO_EXPENSIVE"
            assert "256 MB" in info.value.message and "aggregate" in info.value.message
        assert not list(svc.exports.directory.glob("*.csv")) and svc.schema()["materialized"] == []
        assert svc.schema()["limits"]["query_memory_mb"] == 256
        # Every slot is free and answers.
        assert svc.runner.idle() == svc.runner.pool_size
        assert svc.profile({"table_or_query": "activities", "columns": ["activity_id"]})["row_count"] == 6
    finally:
        svc.close()


def test_a_worker_that_does_not_stop_is_killed_at_the_deadline_and_replaced(service: AnalyticsService) -> None:
    """A worker that cannot honour the interrupt (frozen here with SIGSTOP) is killed a grace period later."""
    assert service.profile({"table_or_query": "activities", "columns": ["activity_id"]})["row_count"] == 6
    (frozen,) = _worker_pids(service)
    os.kill(frozen, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(ToolError) as info:
            service.profile({"table_or_query": "splits"}, deadline=started + 1.0)
        elapsed = time.monotonic() - started
    finally:
        with suppress(ProcessLookupError):
            os.kill(frozen, signal.SIGCONT)
    assert info.value.code == "QUERY_TIMEOUT"
    assert elapsed < 1.0 + 1.0 + 3  # the deadline, the kill grace, a loaded machine
    with pytest.raises(ProcessLookupError):
        os.kill(frozen, 0)  # killed and reaped
    assert service.runner.idle() == service.runner.pool_size
    assert service.profile({"table_or_query": "activities", "columns": ["activity_id"]})["row_count"] == 6
    assert frozen not in _worker_pids(service)


def test_a_cancelled_call_frees_its_worker(service: AnalyticsService) -> None:
    ctx = _call(30)
    pool = ThreadPoolExecutor(1)
    try:

        def slow() -> None:
            with bound(ctx):
                service.profile({"table_or_query": SLOW})

        future = pool.submit(slow)
        end = time.monotonic() + 10
        while service.runner.idle() == service.runner.pool_size and time.monotonic() < end:
            time.sleep(0.01)
        time.sleep(0.2)
        state_of(ctx).cancel()  # as the pipeline does when the caller goes away
        with pytest.raises(BaseException) as info:
            future.result(timeout=5)
        assert type(info.value).__name__ == "CallCancelled"
    finally:
        pool.shutdown(wait=False)
    assert service.runner.idle() == service.runner.pool_size


def test_parallel_exports_at_the_byte_quota_all_answer_and_give_everything_back(
    small_db_template: Path, tmp_path: Path
) -> None:
    """Issue 27 item 2: 8 parallel exports past the byte quotas, a few rounds; every call answers by its
    deadline (a hung COPY is killed), every worker is free after, no reservation or partial file is left."""
    svc = make_service(small_db_template, tmp_path, query_timeout_s=15)
    deadline_s = 15.0
    try:

        def export(_: int) -> tuple[str, float]:
            ctx = _call(deadline_s)
            started = time.monotonic()
            with bound(ctx):
                try:
                    svc.export(
                        {"query": WIDE, "format": "csv", "max_rows": 1_000_000}, deadline=ctx.deadline, principal=ALICE
                    )
                    outcome = "OK"
                except ToolError as exc:
                    outcome = exc.code
            return outcome, time.monotonic() - started

        pool = ThreadPoolExecutor(8)
        try:
            for _ in range(3):
                futures = [pool.submit(export, i) for i in range(8)]
                results = [f.result(timeout=deadline_s + 10) for f in futures]  # a hang fails here
                assert {code for code, _ in results} <= {"EXPORT_QUOTA_EXCEEDED", "QUERY_TIMEOUT", "OK"}, results
                assert max(took for _, took in results) < deadline_s + 5, results
        finally:
            pool.shutdown(wait=False)
        assert svc.runner.idle() == svc.runner.pool_size
        started = time.monotonic()
        assert svc.profile({"table_or_query": "activities", "columns": ["activity_id"]})["row_count"] == 6
        assert time.monotonic() - started < 5
        with svc.database.read() as conn:
            states = conn.execute(select(analytics_exports.c.state)).scalars().all()
        assert "writing" not in states  # every reservation was given back
        published = len(states)
        assert len(list(svc.exports.directory.glob("*.csv"))) == published  # no partial file left
    finally:
        svc.close()


def test_a_worker_that_keeps_more_than_its_idle_budget_is_replaced(
    small_db_template: Path, tmp_path: Path, clock: FakeClock
) -> None:
    """After a call, a worker holding more than KUMITATE_ANALYTICS_WORKER_IDLE_MB is retired, so idle workers
    never hold what a large query left behind; one within its budget is kept for the next call."""
    kept = make_service(small_db_template, tmp_path / "kept", clock)  # 192 MiB: a worker holds ~80 after a query
    lean = make_service(small_db_template, tmp_path / "lean", clock, worker_idle_mb=64)
    try:
        for svc, replaced in ((kept, False), (lean, True)):
            assert svc.profile({"table_or_query": "activities", "columns": ["activity_id"]})["row_count"] == 6
            first = _worker_pids(svc)
            assert svc.profile({"table_or_query": "activities", "columns": ["activity_id"]})["row_count"] == 6
            second = _worker_pids(svc)
            if replaced:  # retired as each call checked it in: no worker waits in the pool
                assert first == second == set(), (first, second)
            else:  # the same worker served both calls and waits for the next
                assert len(first) == 1 and first == second, (first, second)
            assert svc.runner.idle() == svc.runner.pool_size
    finally:
        kept.close()
        lean.close()
