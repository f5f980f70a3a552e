"""Pipeline benchmarks (issue 13): large payloads end to end over real sockets, each against
the work itself measured in the same run, plus small-request overhead and worker scaling.

Ratios (targets from issue 13):
* summarize_stays, 100k records, HTTP: wall time of one request (client sends pre-encoded
  bytes, reads the response) / (parse + JSON Schema validation + handler core + dump of
  the same payload in this process): <= 1.15 in 5 of 5 interleaved runs (issue 32; it was 1.25);
* evaluate_attendance, 1,000 invitees x 200 slots, 40k and 200k selections, HTTP: <= 1.5;
* the same over MCP streamable HTTP (a JSON-RPC tools/call, pre-encoded): <= 1.5;
* small requests (5 stays): HTTP throughput vs a hand-written Litestar route >= 0.95, and MCP
  time per call over streamable HTTP vs a hand-written fastmcp tool <= 1.05;
* throughput with KUMITATE_WORKERS=2 vs 1 on a mixed workload (recorded).

Run: python -m bench.pipeline_bench  (prints a Markdown table; about three minutes);
`--stays-only`: the summarize_stays row alone (about 20 s); `--stays-only --heap-pairs N`: N pairs of runs,
the server keeping freed memory between large calls (KUMITATE_HEAP_KEEP_MB's default) and not (0);
`--mcp-small-only`: the small MCP call rows alone (about a minute).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs
import orjson

from bench.attendance_bench import INVITEES, evaluation_request
from bench.foundation_bench import PAYLOAD, _free_port, http_throughput
from bench.stays_bench import records
from bench.wrk_bench import BASELINE_MCP_TOOL, Served, cpu_seconds, kumitate_server
from generated.attendance.bindings import EVALUATE_ATTENDANCE
from generated.stays.bindings import SUMMARIZE_STAYS
from handlers.attendance.core.evaluate import evaluate_attendance
from handlers.stays.core import summarize
from kumitate.settings import Settings

REPO = Path(__file__).resolve().parent.parent
RUNS = 5
WARMUPS = 3
"""Calls per side before the runs: a server's heap grows to its working size over its first large calls
(summarize_stays 100k: 18,900, 8,300, 3,000, then ~400 page faults a call), and a long-running server
answers from that steady state."""
JSON_HEADERS = {"content-type": "application/json"}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def once(fn: Callable[[], Any], pid: int | None = None) -> tuple[float, float]:
    """Wall ms of one run of `fn`, and CPU ms: of the server process `pid` (every thread), or of this one."""
    cpu = cpu_seconds(pid) if pid else time.process_time()
    started = time.perf_counter()
    fn()
    wall = time.perf_counter() - started
    return wall * 1000, ((cpu_seconds(pid) if pid else time.process_time()) - cpu) * 1000


def limit_work(raw: bytes, schema: dict[str, Any], core: Callable[[Any], Any]) -> None:
    """The physical limit: parse, validate against the spec, the domain work, serialise."""
    data = orjson.loads(raw)
    if not jsonschema_rs.Draft202012Validator(schema).is_valid(data):
        raise AssertionError("benchmark payload does not match the schema")
    orjson.dumps(core(data))


def _mcp_session(client: httpx.Client, url: str) -> dict[str, str]:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    response = client.post(f"{url}/mcp", json=init, headers=MCP_HEADERS)
    headers = {**MCP_HEADERS, "mcp-protocol-version": "2025-06-18"}
    if "mcp-session-id" in response.headers:
        headers["mcp-session-id"] = response.headers["mcp-session-id"]
    client.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def post(conn: http.client.HTTPConnection, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str, bytes]:
    """One POST on a kept-alive connection of the standard library's client: (status, content type, the
    body, read whole). The large-payload rows time their calls with it: httpx reads a response 64 KB at a
    time through h11, about 20 ms of client CPU on the 7.9 MB summarize_stays answer, which the server's
    wall time then carried (http.client: about 6 ms)."""
    conn.request("POST", path, body=body, headers=headers)
    response = conn.getresponse()
    return response.status, response.getheader("content-type", ""), response.read()


def _mcp_ok(response: httpx.Response) -> None:
    _mcp_answered(response.status_code, response.headers.get("content-type", ""), response.content)


def _mcp_answered(status: int, content_type: str, body: bytes) -> None:
    text = body.decode()
    if status != 200:
        raise AssertionError(f"MCP {status}: {text[:300]}")
    if content_type.startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    result = json.loads(text)["result"]
    if result.get("isError"):
        raise AssertionError(str(result)[:300])


CASES: list[tuple[str, Any, Callable[[], Any], Callable[[Any], Any], float, bool]] = [
    ("summarize_stays, 100k records", SUMMARIZE_STAYS, lambda: {"stays": records()}, summarize, 1.15, False),
    (
        "evaluate_attendance, 1,000 x 200, 40k selections",
        EVALUATE_ATTENDANCE,
        lambda: evaluation_request("K_OF_N", density=0.2),
        evaluate_attendance,
        1.5,
        True,
    ),
    (
        "evaluate_attendance, 1,000 x 200, 200k selections",
        EVALUATE_ATTENDANCE,
        lambda: evaluation_request("K_OF_N", density=1.0),
        evaluate_attendance,
        1.5,
        True,
    ),
]
"""label, binding, payload, the handler's core, the target (server / limit, in every run), also over MCP."""


def large_payloads(served: Served, cases: list[Any] = CASES) -> list[dict[str, Any]]:
    """RUNS interleaved runs per case (limit, HTTP[, MCP], limit, HTTP ...), one call each after WARMUPS:
    wall ms and CPU ms (the limit's in this process, the server's in its process) of every run."""
    url = f"http://127.0.0.1:{served.port}"
    rows = []
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=120)
    with httpx.Client(timeout=120) as client:
        mcp_headers = _mcp_session(client, url)
        for label, binding, make_payload, core, target, over_mcp in cases:
            payload = make_payload()
            raw = orjson.dumps(payload)
            rpc = orjson.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": binding.name, "arguments": payload},
                }
            )

            def over_http(raw: bytes = raw, path: str = binding.http_path) -> None:
                status, _, body = post(conn, path, raw, JSON_HEADERS)
                if status != 200:
                    raise AssertionError(body[:300].decode())

            def over_mcp_http(rpc: bytes = rpc) -> None:
                _mcp_answered(*post(conn, "/mcp", rpc, mcp_headers))

            def limit(raw: bytes = raw, schema: dict[str, Any] = binding.input_schema, core: Any = core) -> None:
                limit_work(raw, schema, core)

            sides: dict[str, tuple[Callable[[], None], int | None]] = {
                "limit": (limit, None),
                "http": (over_http, served.pid),
            }
            if over_mcp:
                sides["mcp"] = (over_mcp_http, served.pid)
            for _ in range(WARMUPS):
                for fn, _ in sides.values():
                    fn()
            runs: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            for _ in range(RUNS):  # interleaved, so drift on a shared machine hits every side alike
                for side, (fn, pid) in sides.items():
                    runs[side].append(once(fn, pid))
            rows.append({"label": label, "bytes": len(raw), "target": target, "runs": runs})
    conn.close()
    return rows


def payload_rows(row: dict[str, Any]) -> list[str]:
    """Table rows for one case: medians, the ratio of every run, how many runs met the target, and CPU."""
    out = []
    limit = row["runs"]["limit"]
    for side, name in (("http", f"over HTTP ({row['bytes'] / 1e6:.1f} MB body)"), ("mcp", "over MCP streamable HTTP")):
        if side not in row["runs"]:
            continue
        server = row["runs"][side]
        ratios = [s[0] / lim[0] for s, lim in zip(server, limit, strict=True)]
        met = sum(r <= row["target"] for r in ratios)
        wall = f"{statistics.median(s[0] for s in server):.0f} ms vs limit {statistics.median(lim[0] for lim in limit):.0f} ms"
        cpu = (
            f"{statistics.median(s[1] for s in server):.0f} vs {statistics.median(lim[1] for lim in limit):.0f} ms CPU"
        )
        out.append(
            f"| {row['label']} {name} | {wall} (medians; {cpu}); each run: {', '.join(f'{r:.2f}' for r in ratios)} "
            f"| ≤ {row['target']} in {len(ratios)} of {len(ratios)} | {met} of {len(ratios)}: {_met(met == len(ratios))} |"
        )
    return out


BASELINE_MCP = BASELINE_MCP_TOOL + 'app = mcp.http_app(path="/mcp", transport="http")\n'


def mcp_small_calls(url: str, tmp: Path, calls: int = 300) -> dict[str, float]:
    """Time per tools/call over streamable HTTP (one session, sequential), kumitate vs hand-written fastmcp."""
    (tmp / "baseline_mcp_app.py").write_text(BASELINE_MCP)
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": f"{tmp}:{REPO}", "FASTMCP_LOG_LEVEL": "CRITICAL", "KUMITATE_DATA_DIR": str(tmp)}
    cmd = [sys.executable, "-m", "uvicorn", "baseline_mcp_app:app", "--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    baseline = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                httpx.post(f"{baseline}/mcp", json={}, headers=MCP_HEADERS, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)

        async def timed(target: str) -> float:
            from fastmcp import Client
            from fastmcp.client.transports import StreamableHttpTransport

            async with Client(StreamableHttpTransport(f"{target}/mcp")) as client:
                for _ in range(20):
                    await client.call_tool("summarize_stays", PAYLOAD)
                started = time.perf_counter()
                for _ in range(calls):
                    await client.call_tool("summarize_stays", PAYLOAD)
                return (time.perf_counter() - started) / calls * 1000

        rpc = orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "summarize_stays", "arguments": PAYLOAD},
            }
        )

        def raw_timed(target: str) -> float:
            """The same calls as pre-encoded JSON-RPC posts: the server's and the protocol's cost only,
            without the fastmcp client's per-call work (it validates each result against the tool's
            output schema with the pure-Python jsonschema, and builds a typed `data` from it)."""
            with httpx.Client(timeout=30) as http:
                headers = _mcp_session(http, target)
                for _ in range(20):
                    _mcp_ok(http.post(f"{target}/mcp", content=rpc, headers=headers))
                started = time.perf_counter()
                for _ in range(calls):
                    _mcp_ok(http.post(f"{target}/mcp", content=rpc, headers=headers))
                return (time.perf_counter() - started) / calls * 1000

        times: dict[str, list[float]] = {"kumitate": [], "baseline": [], "kumitate_raw": [], "baseline_raw": []}
        for _ in range(3):
            for name, target in (("kumitate", url), ("baseline", baseline)):
                times[name].append(asyncio.run(timed(target)))
                times[f"{name}_raw"].append(raw_timed(target))
    finally:
        proc.terminate()
        proc.wait()
    k, b = statistics.median(times["kumitate"]), statistics.median(times["baseline"])
    kr, br = statistics.median(times["kumitate_raw"]), statistics.median(times["baseline_raw"])
    return {
        "kumitate_ms": k,
        "baseline_ms": b,
        "ratio": k / b,
        "kumitate_raw_ms": kr,
        "baseline_raw_ms": br,
        "raw_ratio": kr / br,
    }


MIXED = [
    ("/v1/stays/summarize_stays", PAYLOAD),
    ("/v1/attendance/evaluate_attendance", evaluation_request("K_OF_N", invitees=100, slots=20)),
    ("/v1/attendance/parse_attendance_intent", {"text": "山田さんと田中さんは必須、あと2人", "invitees": INVITEES}),
    ("/v1/attendance/invitee_key", {"kind": "email", "value": "Yamada@Example.com"}),
]


async def _mixed_load(url: str, seconds: float, concurrency: int = 16) -> float:
    done = 0
    stop = time.perf_counter() + seconds
    bodies = [(path, orjson.dumps(body)) for path, body in MIXED]
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=httpx.Limits(max_connections=concurrency)) as http:

        async def worker(offset: int) -> None:
            nonlocal done
            i = offset
            while time.perf_counter() < stop:
                path, body = bodies[i % len(bodies)]
                response = await http.post(path, content=body, headers={"content-type": "application/json"})
                if response.status_code != 200:
                    raise AssertionError(f"{path}: {response.text[:300]}")
                done += 1
                i += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(i) for i in range(concurrency)))
        return done / (time.perf_counter() - started)


def _load_in_processes(url: str, seconds: float, processes: int = 2) -> float:
    """The load comes from `processes` client processes, so one client core is not the limit."""
    code = (
        "import asyncio,sys; from bench.pipeline_bench import _mixed_load; "
        f"print(asyncio.run(_mixed_load({url!r}, {seconds})))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)}
        )
        for _ in range(processes)
    ]
    return sum(float(p.communicate()[0]) for p in procs)


def workers_scaling(tmp: Path, seconds: float = 8.0) -> dict[str, float]:
    rates: dict[int, list[float]] = {1: [], 2: []}
    for workers in (1, 2):
        (tmp / f"w{workers}").mkdir()
        with kumitate_server(tmp / f"w{workers}", KUMITATE_WORKERS=str(workers)) as served:
            url = f"http://127.0.0.1:{served.port}"
            _load_in_processes(url, 2.0)  # warm-up
            for _ in range(2):
                rates[workers].append(_load_in_processes(url, seconds))
    one, two = statistics.median(rates[1]), statistics.median(rates[2])
    return {"one_rps": one, "two_rps": two, "ratio": two / one}


def _met(ok: bool) -> str:
    return "met" if ok else "**missed**"


def stays_only(**env: str) -> None:
    """`--stays-only`: the summarize_stays row alone (issue 32's "1.15 in 5 of 5"), with its own server."""
    with tempfile.TemporaryDirectory() as tmp_name, kumitate_server(Path(tmp_name), **env) as served:
        print("\n".join(payload_rows(large_payloads(served, CASES[:1])[0])), flush=True)


def heap_pairs(pairs: int) -> None:
    """`--stays-only --heap-pairs N`: N bench runs with the server's default KUMITATE_HEAP_KEEP_MB, each followed
    by one with 0 (glibc's own behaviour), to see what keeping freed memory between large calls changes."""
    for _ in range(pairs):
        for keep in (str(Settings.model_fields["heap_keep_mb"].default), "0"):
            print(f"KUMITATE_HEAP_KEEP_MB={keep}:", end=" ")
            stays_only(KUMITATE_HEAP_KEEP_MB=keep)


def mcp_small_rows(mcp: dict[str, float]) -> list[str]:
    """The two rows of `mcp_small_calls`: the raw JSON-RPC posts, and the same through the fastmcp Client."""
    return [
        f"| small MCP call (5 stays) over streamable HTTP vs hand-written fastmcp tool, time per call, "
        f"JSON-RPC posts (server + protocol) | {mcp['kumitate_raw_ms']:.2f} vs {mcp['baseline_raw_ms']:.2f} ms: "
        f"**{mcp['raw_ratio']:.2f}** | ≤ 1.05 | {_met(mcp['raw_ratio'] <= 1.05)} |",
        f"| same through the fastmcp Client (adds its per-call output-schema validation, larger for the "
        f"spec's richer schema) | {mcp['kumitate_ms']:.2f} vs {mcp['baseline_ms']:.2f} ms: "
        f"**{mcp['ratio']:.2f}** | ≤ 1.05 | {_met(mcp['ratio'] <= 1.05)} |",
    ]


def mcp_small_only() -> None:
    """`--mcp-small-only`: the two small-MCP-call rows alone (a sessionful 2025-06-18 client), with its own server."""
    with tempfile.TemporaryDirectory() as tmp_name, kumitate_server(Path(tmp_name)) as served:
        print("\n".join(mcp_small_rows(mcp_small_calls(f"http://127.0.0.1:{served.port}", Path(tmp_name)))))


def main() -> None:
    if "--mcp-small-only" in sys.argv[1:]:
        mcp_small_only()
        return
    if "--stays-only" in sys.argv[1:]:
        print("| What | Measured | Target | |")
        print("|---|---|---|---|")
        if "--heap-pairs" in sys.argv[1:]:
            heap_pairs(int(sys.argv[sys.argv.index("--heap-pairs") + 1]))
        else:
            stays_only()
        return
    print(
        "Limit = orjson parse + jsonschema_rs validation + handler core + orjson dump of the same payload, "
        "in the benchmark process, same run. Server times are client wall times over loopback with the "
        "body pre-encoded (they include sending the body and reading the response, with the standard library's "
        f"http.client). {RUNS} runs of one call "
        f"per side after {WARMUPS} warm-up calls, interleaved (limit, server, limit, server ...); the target holds when every "
        "run's ratio meets it. CPU: the limit's in this process, the server's in its process (steadier than "
        "wall times on a shared machine). Throughputs: medians of interleaved rounds.\n"
    )
    print("| What | Measured | Target | |")
    print("|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "one").mkdir()
        with kumitate_server(tmp / "one") as served:
            url = f"http://127.0.0.1:{served.port}"
            for row in large_payloads(served):
                print("\n".join(payload_rows(row)), flush=True)
            mcp = mcp_small_calls(url, tmp)
        print("\n".join(mcp_small_rows(mcp)), flush=True)
        throughput = http_throughput()
        print(
            f"| small requests (5 stays), HTTP throughput vs hand-written Litestar route, 16 connections (httpx client: client-bound, see the wrk section) | "
            f"{throughput['kumitate_rps']:.0f} vs {throughput['baseline_rps']:.0f} req/s: "
            f"**{throughput['ratio']:.2f}** | ≥ 0.95 | {_met(throughput['ratio'] >= 0.95)} |",
            flush=True,
        )
        scaling = workers_scaling(tmp)
        print(
            f"| mixed workload throughput, KUMITATE_WORKERS=2 vs 1 (2 client processes × 16 connections) | "
            f"{scaling['two_rps']:.0f} vs {scaling['one_rps']:.0f} req/s: **{scaling['ratio']:.2f}** | recorded | – |"
        )


if __name__ == "__main__":
    main()
