"""SIGTERM drains a real `kumitate serve`: /readyz answers 503 at once while requests are still served
(with `Connection: close`, so a balancer keeps no connection to it), the port closes after KUMITATE_DRAIN_DELAY_S, the call in flight gets its answer, and the process exits 0."""

from __future__ import annotations

import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests import slowcall
from tests.conftest import start_server, stop_server


def refuses(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    try:
        socket.create_connection((host, int(port)), timeout=0.5).close()
    except OSError:
        return True
    return False


@pytest.mark.slow  # a real server and a 5 s call; make fast keeps test_drain_units and test_readiness_wire's drain
def test_sigterm_turns_readiness_off_then_closes_the_port_and_finishes_the_call_in_flight(
    tmp_path: Path, seeded_data_dir: Path
) -> None:
    delay_s = 2.0
    server = start_server(
        tmp_path / "var",
        tmp_path / "server.log",
        "--log-level",
        "info",
        seeded=seeded_data_dir,
        KUMITATE_DRAIN_DELAY_S=str(delay_s),
    )
    try:
        query = slowcall.calibrated(server.url, 5.0)
        with ThreadPoolExecutor(1) as pool:
            body = {"table_or_query": query}
            in_flight = pool.submit(httpx.post, f"{server.url}/v1/analytics/profile", json=body, timeout=60)
            time.sleep(0.5)
            assert not in_flight.done()
            assert httpx.get(f"{server.url}/healthz", timeout=5).headers.get("Connection") != "close"
            server.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            ready = httpx.get(f"{server.url}/readyz", timeout=5)
            assert ready.status_code == 503 and ready.json()["draining"] is True
            assert ready.headers["Retry-After"].isdigit()
            served = httpx.get(f"{server.url}/healthz", timeout=5)
            assert served.status_code == 200  # still serving, but no connection kept for the next request
            assert served.headers["Connection"] == "close" and ready.headers["Connection"] == "close"
            while not refuses(server.url) and time.monotonic() - signalled < delay_s + 10:
                time.sleep(0.05)
            closed_after = time.monotonic() - signalled
            answered = in_flight.result()
        assert delay_s - 0.5 <= closed_after <= delay_s + 3, closed_after
        # the call in flight finished within its deadline (15 s): its result, or REQUEST_TIMEOUT at the deadline
        assert answered.status_code in (200, 408), answered.text
        assert server.process.wait(timeout=30) == 0
    finally:
        stop_server(server)
    assert '"event": "draining"' in server.log.read_text(errors="replace")
