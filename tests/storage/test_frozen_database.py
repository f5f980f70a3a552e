"""A hung PostgreSQL (its processes frozen with SIGSTOP, not stopped) against a real server on a socket.

Issue 27, case 3: calls that need the database must answer a retryable 503 within their deadline
(plus the commit grace), never 500 and never hang; tools that do not use it keep answering at their
usual latency (bulkheads); /readyz answers within about a second with 503, /healthz stays 200.
The PostgreSQL cluster is this module's own, so freezing it touches no other test.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import signal
import statistics
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer, start_server, stop_server
from tests.servers import started

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

DB_TIMEOUT_MS = 3000
GRACE_MS = 1000
MONTHLY = ("/v1/household/get_monthly_household", {"year": 2025, "month": 6})  # reads, no deadline of its own
SEARCH = ("/v1/search", {"query_text": "獺祭", "k": 1})  # yana: 2 s deadline, reads labels
SAVE = (
    "/v1/attendance/save_attendance_rule",
    {
        "thread_id": "frozen",
        "rule": {
            "version": "1.0",
            "type": "K_OF_N",
            "invitee_scope": {"include_invitee_keys": ["u:1", "u:2", "u:3"]},
            "rule": {"k": 2, "n": 3},
            "finalize_policy": {"mode": "EARLIEST_VALID", "tie_breaker": "earliest_slot", "auto_finalize": False},
        },
    },
)
STAYS = (
    "/v1/stays/summarize_stays",
    {
        "granularity": "admin",
        "stays": [
            {
                "ref": "a",
                "code": "13101",
                "name": "千代田区",
                "start_ts": "2024-05-01T09:00:00+09:00",
                "end_ts": "2024-05-01T11:00:00+09:00",
            }
        ],
    },
)
INVITEE = ("/v1/attendance/invitee_key", {"kind": "user", "value": "42"})
SERVED = "household,yana,attendance,stays"
"""The services these tests call: analytics (its sample database, its worker processes) is left out."""


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[tuple[str, Path]]:
    from deploy import servers

    directory = Path(tempfile.mkdtemp(prefix="kumitate-frozen-pg-"))  # reachable by the service user
    directory.chmod(0o755)
    url = started(
        "PostgreSQL", servers.pg_bin() is None, lambda: servers.start_postgres(directory, servers.free_port())
    )
    yield url, directory
    servers.stop_postgres(directory, fast=True)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def server(own_postgres: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    url, _ = own_postgres
    root = tmp_path_factory.mktemp("frozen-app")
    live = start_server(
        root / "var",
        root / "server.log",
        KUMITATE_DATABASE_URL=url,
        KUMITATE_DB_TIMEOUT_MS=str(DB_TIMEOUT_MS),
        KUMITATE_COMMIT_GRACE_MS=str(GRACE_MS),
        KUMITATE_WORKER_THREADS="8",
        KUMITATE_BULKHEAD_WAIT_MS="1000",
        KUMITATE_SERVICES=SERVED,
    )
    yield live
    stop_server(live)


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(entry.name))
    return found


@contextlib.contextmanager
def frozen(directory: Path) -> Iterator[None]:
    """SIGSTOP the postmaster, then every backend and helper it forked; SIGCONT all of them on the way out."""
    from deploy import servers

    postmaster = servers.read_pid(directory / "pg" / "postmaster.pid")
    assert postmaster is not None
    stopped = [postmaster]
    try:
        os.kill(postmaster, signal.SIGSTOP)
        for pid in _children(postmaster):
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
        yield
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def call(url: str, route: tuple[str, dict[str, Any]], timeout: float = 30) -> tuple[int, dict[str, Any], float, str]:
    started_at = time.monotonic()
    r = httpx.post(url + route[0], json=route[1], timeout=timeout)
    return r.status_code, r.json(), time.monotonic() - started_at, r.headers.get("retry-after", "")


def test_a_frozen_database_answers_503_in_time_and_other_tools_keep_answering(
    server: LiveServer, own_postgres: tuple[str, Path]
) -> None:
    _, directory = own_postgres
    for route in (MONTHLY, SEARCH, SAVE, STAYS):  # warm: pooled connections exist, first-use costs are paid
        assert call(server.url, route)[0] == 200, route
    with frozen(directory), ThreadPoolExecutor(8) as pool:
        pending = {
            name: pool.submit(call, server.url, route)
            for name, route in (("monthly", MONTHLY), ("search", SEARCH), ("save", SAVE))
        }
        time.sleep(0.3)  # the database calls are in: now the rest must not wait behind them
        stays = call(server.url, STAYS)
        assert stays[0] == 200 and stays[2] < 2.0, stays
        t0 = time.monotonic()
        ready = httpx.get(server.url + "/readyz", timeout=10)
        ready_s = time.monotonic() - t0
        assert ready.status_code == 503 and ready_s < 1.5, (ready.status_code, ready_s)
        assert ready.json()["checks"]["database"]["ok"] is False and ready.headers["retry-after"]
        assert httpx.get(server.url + "/healthz", timeout=10).status_code == 200
        answers = {name: future.result() for name, future in pending.items()}
    print(
        f"\nstays {stays[2]:.3f} s, /readyz {ready_s:.3f} s; "
        + "; ".join(
            f"{name}: {status} {body['error']['code']} in {seconds:.2f} s ({body['error']['message']})"
            for name, (status, body, seconds, _) in answers.items()
        )
    )
    bounds_s = {"monthly": DB_TIMEOUT_MS / 1000, "search": 2.0, "save": (DB_TIMEOUT_MS + GRACE_MS) / 1000}
    for name, (status, body, seconds, retry_after) in answers.items():
        assert status == 503 and body["error"]["code"] == "STORAGE_UNAVAILABLE", (name, status, body)
        assert retry_after and body["error"]["retryable"] is True, (name, body)
        assert seconds < bounds_s[name] + 1.5, (name, seconds)
    # thawed: the cut connections were dropped, the rest answer again
    thawed = time.monotonic() + 60
    while call(server.url, MONTHLY)[0] != 200:  # the stuck threads end at their DB_TIMEOUT_MS bound, then it answers
        assert time.monotonic() < thawed
        time.sleep(0.2)
    assert call(server.url, SAVE)[0] == 200
    assert httpx.get(server.url + "/readyz", timeout=10).status_code == 200


def _latencies(url: str, routes: dict[str, tuple[str, dict[str, Any]]], n: int) -> dict[str, list[float]]:
    """`n` calls of each route, interleaved (so each sees the same moments), one at a time."""
    out: dict[str, list[float]] = {name: [] for name in routes}
    with httpx.Client(base_url=url, timeout=30) as client:
        for _ in range(n):
            for name, (path, body) in routes.items():
                t0 = time.monotonic()
                r = client.post(path, json=body)
                out[name].append(time.monotonic() - t0)
                assert r.status_code == 200, r.text
    return out


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def hold(url: str, calls: int, stop: Any, outcomes: Any) -> None:
    """In a process of its own (its threads must not share a GIL with the measuring client): keep
    `calls` household calls in flight until `stop` is set; count the answers by status."""

    def one() -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            client.get("/v1/versions")  # connected
            with outcomes.get_lock():
                outcomes[3] += 1
            while not stop.is_set():
                status = client.post(MONTHLY[0], json=MONTHLY[1]).status_code
                with outcomes.get_lock():
                    outcomes[0 if status == 503 else 1 if status == 500 else 2] += 1

    with ThreadPoolExecutor(calls) as pool:
        for future in [pool.submit(one) for _ in range(calls)]:
            future.result()


@pytest.fixture
def default_server(own_postgres: tuple[str, Path], tmp_path: Path) -> Iterator[LiveServer]:
    """A server with the default limits (16 threads a service, 5 s bulkhead wait) but a database bound of
    10 s, not 30: the held calls keep the service's threads as long as the test measures either way, and
    the test waits for them to end (once before the database thaws, once after)."""
    live = start_server(
        tmp_path / "var",
        tmp_path / "server.log",
        KUMITATE_DATABASE_URL=own_postgres[0],
        KUMITATE_DB_TIMEOUT_MS="10000",
        KUMITATE_LOOP_STALL_MS="100",
        KUMITATE_SERVICES=SERVED,
    )
    yield live
    stop_server(live)


def test_sixty_calls_stuck_on_the_database_leave_other_services_their_latency(
    default_server: LiveServer, own_postgres: tuple[str, Path]
) -> None:
    """The measurement of issue 27: 60 household calls held by a frozen database (each caller sends
    again as soon as it is answered), the other services' p99 beside their idle p99 (printed; the
    bound asserted is generous: the machine is shared)."""
    server, directory = default_server, own_postgres[1]
    others = {"stays": STAYS, "attendance": INVITEE}
    _latencies(server.url, others, 10)  # warm
    idle_values = _latencies(server.url, others, 150)
    idle = {name: p99(values) for name, values in idle_values.items()}
    spawn = multiprocessing.get_context("spawn")
    stop, outcomes = spawn.Event(), spawn.Array("i", 4)  # answers 503, 500, other; callers connected
    with frozen(directory):
        holder = spawn.Process(target=hold, args=(server.url, 60, stop, outcomes))
        holder.start()
        try:
            while outcomes[3] < 60:
                time.sleep(0.1)
            time.sleep(1.0)  # all 60 in: the service's threads held, the rest waiting for one
            stuck_values = _latencies(server.url, others, 150)
            stuck = {name: p99(values) for name, values in stuck_values.items()}
        finally:
            stop.set()
            holder.join(timeout=60)
    for label, found in (("idle", idle_values), ("stuck", stuck_values)):
        for name, values in found.items():
            q = [round(x * 1000, 1) for x in statistics.quantiles(values, n=100)]
            print(
                f"\n{label} {name} ms: p50 {q[49]} p90 {q[89]} p99 {q[98]} max {round(max(values) * 1000, 1)}", end=""
            )
    refused, failed, other, _ = outcomes[:]
    print(f"\np99 idle {idle}; with 60 household calls stuck {stuck}; household: {refused} x 503, {failed} x 500")
    assert failed == 0 and other == 0 and refused > 0, outcomes[:]
    for name in others:
        assert stuck[name] < max(3 * idle[name], idle[name] + 0.25), (name, idle[name], stuck[name])
    thawed = time.monotonic() + 60
    while call(server.url, MONTHLY)[0] != 200:  # the stuck threads end at their 10 s bound, then it answers
        assert time.monotonic() < thawed
        time.sleep(0.2)
