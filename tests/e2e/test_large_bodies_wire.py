"""One large request does not hold up the other services (issue 45): its body is parsed on its service's
thread and checked in a worker process (kumitate.offloop), never on the event loop.

A real server; the large request is sent by a process of its own (so the probe's timings are not the
sender's GIL), while this process calls `summarize_stays` one call after another and times each. The bound
is the issue's: the probe's p99 during the large call within 1.5x its p99 just before, or that plus 50 ms.
The machine runs other tests beside this one: a round that misses is measured again (twice at most), so
only a server that stalls every time fails; before kumitate.offloop, every round stalled for seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer, start_server, stop_server

STAYS = {
    "granularity": "admin",
    "stays": [{"ref": "a", "code": "13101", "name": "千代田区", "start_ts": "2024-05-01T09:00:00+09:00"}],
}
RULE = {
    "version": "1.0",
    "type": "K_OF_N",
    "invitee_scope": {"include_invitee_keys": ["u:1", "u:2", "u:3"]},
    "rule": {"k": 2, "n": 3},
    "finalize_policy": {"mode": "EARLIEST_VALID", "tie_breaker": "earliest_slot"},
}
SLOTS = [{"slot_id": "s1", "start": "2025-06-02T10:00:00+09:00"}]
NOW = "2025-06-01T12:00:00+09:00"
BAD_KEYS = 1_300_000
"""Keys that fail the invitee-key pattern: the 15.6 MB body of the issue (the tool takes up to 32 MiB)."""
MCP_VERSION = "2026-07-28"
ROUNDS = 3
SEND = """
import sys, time, httpx
body = open(sys.argv[2], "rb").read()
headers = dict(h.split(": ", 1) for h in sys.argv[3:])
started = time.perf_counter()
r = httpx.post(sys.argv[1], content=body, headers=headers, timeout=120)
print(time.perf_counter() - started)
sys.stdout.write(r.text[:2000])
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("large-bodies")
    live = start_server(root / "var", root / "server.log", seeded=seeded_data_dir)
    yield live
    stop_server(live)


def _evaluate(keys: list[str], selections: list[dict[str, str]]) -> dict[str, Any]:
    rule = {**RULE, "invitee_scope": {"include_invitee_keys": keys}}
    return {"rule": rule, "slots": SLOTS, "selections": selections, "now": NOW}


def _p99(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[max(0, int(len(ordered) * 0.99) - 1)]


def _probe(client: httpx.Client, url: str, until: Any) -> list[float]:
    """summarize_stays (another service) one call after another until `until()`; each call's seconds."""
    latencies = []
    while not until():
        started = time.perf_counter()
        response = client.post(f"{url}/v1/stays/summarize_stays", json=STAYS)
        latencies.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text[:300]
        time.sleep(0.005)
    return latencies


def _round(url: str, target: str, body: Path, headers: dict[str, str]) -> tuple[float, float, float, str]:
    """(idle p99, p99 during the large call, the large call's seconds, its answer)."""
    with httpx.Client(timeout=60) as client:
        idle_until = time.monotonic() + 1.5
        idle = _probe(client, url, lambda: time.monotonic() > idle_until)
        header_args = [f"{k}: {v}" for k, v in headers.items()]
        sender = subprocess.Popen(
            [sys.executable, "-c", SEND, f"{url}{target}", str(body), *header_args], stdout=subprocess.PIPE, text=True
        )
        during = _probe(client, url, lambda: sender.poll() is not None)
        out, _ = sender.communicate(timeout=120)
    seconds, _, answer = out.partition("\n")
    return _p99(idle), _p99(during) if during else 0.0, float(seconds), answer


def _within_bound(url: str, target: str, body: Path, headers: dict[str, str]) -> tuple[str, list[str]]:
    """The large call's answer, once a round kept the probe within the bound (else every round's figures)."""
    seen = []
    for _ in range(ROUNDS):
        idle, during, seconds, answer = _round(url, target, body, headers)
        seen.append(f"idle p99 {idle * 1000:.1f} ms, during {during * 1000:.1f} ms, large call {seconds:.2f} s")
        assert seconds < 10, seen  # before kumitate.offloop: 43 s, every service waiting
        if during <= max(1.5 * idle, idle + 0.05):
            return answer, seen
    pytest.fail(f"another service's p99 past the bound in all {ROUNDS} rounds: {seen}")


def test_a_huge_invalid_body_over_http_is_a_400_and_stalls_no_other_service(server: LiveServer, tmp_path: Path) -> None:
    body = tmp_path / "bad.json"
    body.write_bytes(json.dumps(_evaluate(["BAD KEY!"] * BAD_KEYS, [])).encode())
    headers = {"content-type": "application/json"}
    answer, _ = _within_bound(server.url, "/v1/attendance/evaluate_attendance", body, headers)
    error = json.loads(answer)["error"]
    assert error["code"] == "BAD_REQUEST"
    assert error["message"].startswith("input does not match the schema: /rule/invitee_scope/include_invitee_keys")


def test_a_huge_invalid_body_over_mcp_is_an_error_result_and_stalls_no_other_service(
    server: LiveServer, tmp_path: Path
) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": MCP_VERSION, "io.modelcontextprotocol/clientCapabilities": {}}
    arguments = _evaluate(["BAD KEY!"] * BAD_KEYS, [])
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "evaluate_attendance", "arguments": arguments, "_meta": meta},
    }
    body = tmp_path / "bad-mcp.json"
    body.write_bytes(json.dumps(message).encode())
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MCP_VERSION,
        "mcp-method": "tools/call",
        "mcp-name": "evaluate_attendance",
    }
    answer, _ = _within_bound(server.url, "/mcp/attendance", body, headers)
    result = json.loads(answer)["result"]
    assert result["isError"] is True, answer[:500]
    error = result["_meta"]["io.kumitate/error"]  # where a 2026-07-28 error result carries the envelope
    assert error["code"] == "BAD_REQUEST"
    assert error["message"].startswith("input does not match the schema: /rule/invitee_scope/include_invitee_keys")


def test_a_large_valid_body_is_served_and_stalls_no_other_service(server: LiveServer, tmp_path: Path) -> None:
    selections = [{"invitee_key": f"u:{i % 3 + 1}", "slot_id": "s1", "status": "selected"} for i in range(200_000)]
    body = tmp_path / "valid.json"
    body.write_bytes(json.dumps(_evaluate(["u:1", "u:2", "u:3"], selections)).encode())
    answer, _ = _within_bound(
        server.url, "/v1/attendance/evaluate_attendance", body, {"content-type": "application/json"}
    )
    result = json.loads(answer)
    assert result["slots"][0]["slot_id"] == "s1" and result["slots"][0]["satisfied"] is True
