"""Foundation benchmarks (issue 2): pipeline overhead on HTTP and MCP, stays at 100k, codegen time.

Run: python -m bench.foundation_bench   (prints a Markdown table)
"""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from generated.stays.models import SummarizeStaysInput, SummarizeStaysOutput

REPO = Path(__file__).resolve().parent.parent
PAYLOAD = {
    "granularity": "admin",
    "stays": [
        {
            "ref": f"s{i}",
            "code": f"1310{i}",
            "name": f"区{i}",
            "start_ts": "2024-05-01T09:00:00+09:00",
            "end_ts": "2024-05-01T11:00:00+09:00",
        }
        for i in range(5)
    ],
}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_or_kill(proc: subprocess.Popen[Any], grace_s: float) -> None:
    """Wait for a process the benchmark asked to stop (terminated, or its stdin closed); kill it after `grace_s`."""
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _serve(target: list[str], port: int, data_dir: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "KUMITATE_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO), "FASTMCP_LOG_LEVEL": "CRITICAL"}
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        *target,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "error",
        "--no-access-log",
        "--loop",
        "uvloop",
        "--http",
        "httptools",
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            httpx.post(f"http://127.0.0.1:{port}/v1/stays/summarize_stays", json=PAYLOAD, timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{target} did not start")


async def _load(url: str, seconds: float, concurrency: int) -> float:
    done = 0
    stop = time.perf_counter() + seconds
    async with httpx.AsyncClient(timeout=10, limits=httpx.Limits(max_connections=concurrency)) as client:

        async def worker() -> None:
            nonlocal done
            while time.perf_counter() < stop:
                r = await client.post(url, json=PAYLOAD)
                assert r.status_code == 200, r.text
                done += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return done / (time.perf_counter() - started)


def http_throughput(rounds: int = 3, seconds: float = 4.0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        targets = {
            "kumitate": ["--factory", "kumitate.app:create_app"],
            "baseline": ["bench.baseline_app:app"],
        }
        ports = {name: _free_port() for name in targets}
        procs = {name: _serve(t, ports[name], Path(tmp) / name) for name, t in targets.items()}
        try:
            rates: dict[str, list[float]] = {name: [] for name in targets}
            for _ in range(rounds):  # interleaved, so drift on a noisy machine hits both alike
                for name in targets:
                    url = f"http://127.0.0.1:{ports[name]}/v1/stays/summarize_stays"
                    rates[name].append(asyncio.run(_load(url, seconds, concurrency=16)))
        finally:
            for p in procs.values():
                p.terminate()
                p.wait()
    k, b = statistics.median(rates["kumitate"]), statistics.median(rates["baseline"])
    return {"kumitate_rps": k, "baseline_rps": b, "ratio": k / b}


def mcp_in_memory(calls: int = 400) -> dict[str, Any]:
    from fastmcp import Client, FastMCP

    from handlers.stays import create
    from kumitate.context import CallContext
    from kumitate.runtime import Runtime
    from kumitate.service import ServiceSetup
    from kumitate.settings import Settings
    from kumitate.transports.mcp import build_server

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), sample_dir=REPO / "data", public_base_url="http://127.0.0.1:8000")
        runtime = Runtime(settings, ["stays"])
        generated_server = build_server(runtime, ["stays"])
        setup = ServiceSetup.open("stays", settings)
        handler = create(setup)

        def run_handler(stays: list[dict[str, Any]], granularity: str, mode: str) -> SummarizeStaysOutput:
            ctx = CallContext(service="stays", tool="summarize_stays", transport="mcp", run_id="r", trace_id="t")
            data = {"stays": stays, "granularity": granularity, "mode": mode}
            SummarizeStaysInput.model_validate(data)
            return SummarizeStaysOutput.model_validate(handler.summarize_stays(data, ctx))

        threaded = FastMCP("hand-threaded")

        @threaded.tool(name="summarize_stays")
        def summarize_stays_threaded(
            stays: list[dict[str, Any]], granularity: str = "admin", mode: str = "sequence"
        ) -> SummarizeStaysOutput:
            """The same tool by hand, as a sync tool: fastmcp runs it in a worker thread, as kumitate runs
            sync handlers (and as the HTTP baseline's sync_to_thread route does), so the loop stays free."""
            return run_handler(stays, granularity, mode)

        inline = FastMCP("hand-inline")

        @inline.tool(name="summarize_stays")
        async def summarize_stays_inline(
            stays: list[dict[str, Any]], granularity: str = "admin", mode: str = "sequence"
        ) -> SummarizeStaysOutput:
            """The same tool by hand, run on the event loop itself: no thread hop, but a large
            request blocks every other client for as long as the handler runs."""
            return run_handler(stays, granularity, mode)

        async def timed(server: Any) -> float:
            async with Client(server) as client:
                for _ in range(20):
                    await client.call_tool("summarize_stays", PAYLOAD)
                started = time.perf_counter()
                for _ in range(calls):
                    await client.call_tool("summarize_stays", PAYLOAD)
                return (time.perf_counter() - started) / calls

        times: dict[str, list[float]] = {"generated": [], "threaded": [], "inline": []}
        for _ in range(3):  # interleaved, so drift on a noisy machine hits all alike
            for name, server in (("generated", generated_server), ("threaded", threaded), ("inline", inline)):
                times[name].append(asyncio.run(timed(server)))
        runtime.close()
        setup.close()
    g, t, i = (statistics.median(times[name]) for name in ("generated", "threaded", "inline"))
    return {"generated_ms": g * 1000, "hand_ms": t * 1000, "ratio": g / t, "inline_ms": i * 1000, "inline_ratio": g / i}


def codegen_times() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "codegen", "--out", tmp]
        started = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
        cold = time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
        noop = time.perf_counter() - started
        shutil.rmtree(tmp, ignore_errors=True)
    return {"cold_s": cold, "noop_s": noop}


def main() -> None:
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    http = http_throughput()
    mcp = mcp_in_memory()
    gen = codegen_times()
    print()
    print("| What | Measured | Target |")
    print("|---|---|---|")
    print(
        f"| HTTP throughput, full pipeline vs hand-written Litestar route (16 conns, 5 stays/request; httpx client: client-bound, see the wrk section) | "
        f"{http['kumitate_rps']:.0f} vs {http['baseline_rps']:.0f} req/s, ratio **{http['ratio']:.2f}** | ≥ 0.85 |"
    )
    print(
        f"| MCP in-memory call, generated tool vs hand-written fastmcp sync tool (both run the handler in a "
        f"worker thread) | {mcp['generated_ms']:.2f} vs {mcp['hand_ms']:.2f} ms/call, time ratio "
        f"**{mcp['ratio']:.2f}** | ≤ 1.15 |"
    )
    print(
        f"| same, against a hand-written async tool that runs the handler on the event loop (no thread hop; "
        f"blocks other clients while it runs) | {mcp['generated_ms']:.2f} vs {mcp['inline_ms']:.2f} ms/call, "
        f"time ratio {mcp['inline_ratio']:.2f} | informative: the difference is the worker-thread hop |"
    )
    print(
        f"| `make generate` (python -m codegen), cold / no-op | {gen['cold_s']:.2f} s / {gen['noop_s']:.2f} s | recorded |"
    )


if __name__ == "__main__":
    main()
