"""The fastmcp Client's `call_tool`, kumitate vs a one-file FastMCP server (issue 32: measured 1.58x).

The one-file server is the MCP baselines' (bench.wrk_bench.BASELINE_MCP_TOOL: summarize_stays returning
the generated SummarizeStaysOutput, so it advertises an outputSchema the Client validates as it does
kumitate's). Two paths, both with the same Client and the README's 5-stay payload:

* in memory (`Client(server)`, one process): CPU time per call, and Python function calls per call
  (cProfile's count: it does not move with the machine's load, so it shows structural extra work);
* streamable HTTP (`kumitate serve --service stays`, `/mcp/stays`, vs the one-file app under uvicorn,
  stateful as a Client uses it): wall time per call, and CPU per call of the client and of the server
  process (/proc/<pid>/stat), whose sum is what the call costs the machine.

Rounds are interleaved (kumitate, baseline, ...); each figure is the median with its spread.

Run: python -m bench.client_call_bench  (prints Markdown; a few minutes on a loaded machine)
"""

from __future__ import annotations

import asyncio
import cProfile
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.foundation_bench import PAYLOAD, _free_port, wait_or_kill
from bench.pipeline_bench import BASELINE_MCP, MCP_HEADERS
from bench.startup_bench import cpu_s, spread
from bench.wrk_bench import BASELINE_MCP_TOOL

REPO = Path(__file__).resolve().parent.parent
CALLS = int(os.environ.get("CLIENT_CALLS", "300"))
ROUNDS = int(os.environ.get("CLIENT_ROUNDS", "5"))


async def _calls(target: Any, n: int, profile: cProfile.Profile | None = None) -> tuple[float, float]:
    """(wall s, this process's CPU s) per call over `n` calls after a warm-up."""
    from fastmcp import Client

    async with Client(target) as client:
        for _ in range(20):
            await client.call_tool("summarize_stays", PAYLOAD)
        wall, cpu = time.perf_counter(), time.process_time()
        if profile:
            profile.enable()
        for _ in range(n):
            await client.call_tool("summarize_stays", PAYLOAD)
        if profile:
            profile.disable()
        return (time.perf_counter() - wall) / n, (time.process_time() - cpu) / n


def in_memory(tmp: Path) -> dict[str, list[float]]:
    from kumitate.runtime import Runtime
    from kumitate.settings import Settings
    from kumitate.transports.mcp import build_server

    os.environ["KUMITATE_DATA_DIR"] = str(tmp / "var")
    namespace: dict[str, Any] = {}
    exec(compile(BASELINE_MCP_TOOL, "baseline", "exec"), namespace)
    runtime = Runtime(Settings.from_env(), ["stays"])
    servers = {"kumitate": build_server(runtime, ["stays"]), "baseline": namespace["mcp"]}
    out: dict[str, list[float]] = {f"{name} {what}": [] for name in servers for what in ("cpu", "calls")}
    try:
        for name, server in servers.items():
            profile = cProfile.Profile()
            asyncio.run(_calls(server, 200, profile))
            out[f"{name} calls"].append(pstats.Stats(profile).total_calls / 200)  # type: ignore[attr-defined]
        for _ in range(ROUNDS):
            for name, server in servers.items():
                out[f"{name} cpu"].append(asyncio.run(_calls(server, CALLS))[1])
    finally:
        runtime.close()
    return out


def _up(url: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(1200):
        if proc.poll() is not None:
            raise RuntimeError(f"server for {url} exited {proc.returncode}")
        try:
            httpx.post(url, json={}, headers=MCP_HEADERS, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not start")


def over_http(tmp: Path) -> dict[str, list[float]]:
    from fastmcp.client.transports import StreamableHttpTransport

    (tmp / "baseline_mcp_app.py").write_text(BASELINE_MCP)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("KUMITATE_")},
        "PYTHONPATH": f"{tmp}{os.pathsep}{REPO}",
        "FASTMCP_LOG_LEVEL": "CRITICAL",
        "KUMITATE_DATA_DIR": str(tmp / "var-http"),
    }
    ports = {"kumitate": _free_port(), "baseline": _free_port()}
    commands = {
        "kumitate": [sys.executable, "-m", "kumitate", "serve", "--service", "stays", "--port", str(ports["kumitate"])],
        "baseline": [sys.executable, "-m", "uvicorn", "baseline_mcp_app:app", "--port", str(ports["baseline"])],
    }
    urls = {
        "kumitate": f"http://127.0.0.1:{ports['kumitate']}/mcp/stays",
        "baseline": f"http://127.0.0.1:{ports['baseline']}/mcp",
    }
    procs = {
        name: subprocess.Popen(
            [*cmd, "--log-level", "warning"],
            cwd=REPO if name == "kumitate" else tmp,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, cmd in commands.items()
    }
    out: dict[str, list[float]] = {f"{n} {w}": [] for n in procs for w in ("wall", "client", "server")}
    try:
        for name, url in urls.items():
            _up(url, procs[name])
        for _ in range(ROUNDS):
            for name, url in urls.items():
                before = cpu_s(procs[name].pid)
                wall, client = asyncio.run(_calls(StreamableHttpTransport(url), CALLS))
                out[f"{name} wall"].append(wall)
                out[f"{name} client"].append(client)
                out[f"{name} server"].append((cpu_s(procs[name].pid) - before) / CALLS)
    finally:
        for proc in procs.values():
            proc.terminate()
            wait_or_kill(proc, 10)
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        memory = in_memory(tmp)
        http = over_http(tmp)

    def ms(values: list[float]) -> str:
        return spread([v * 1000 for v in values], ".2f")

    def ratio(a: list[float], b: list[float]) -> str:
        return f"**{statistics.median(a) / statistics.median(b):.2f}**"

    both = {
        name: [c + s for c, s in zip(http[f"{name} client"], http[f"{name} server"], strict=True)]
        for name in ("kumitate", "baseline")
    }
    rows: list[tuple[str, str, str, str]] = [
        (
            "in memory: Python function calls per call (cProfile count)",
            f"{memory['kumitate calls'][0]:.0f}",
            f"{memory['baseline calls'][0]:.0f}",
            ratio(memory["kumitate calls"], memory["baseline calls"]),
        ),
        (
            "in memory: CPU ms per call",
            ms(memory["kumitate cpu"]),
            ms(memory["baseline cpu"]),
            ratio(memory["kumitate cpu"], memory["baseline cpu"]),
        ),
        (
            "streamable HTTP: wall ms per call",
            ms(http["kumitate wall"]),
            ms(http["baseline wall"]),
            ratio(http["kumitate wall"], http["baseline wall"]),
        ),
        (
            "streamable HTTP: client CPU ms per call",
            ms(http["kumitate client"]),
            ms(http["baseline client"]),
            ratio(http["kumitate client"], http["baseline client"]),
        ),
        (
            "streamable HTTP: server CPU ms per call",
            ms(http["kumitate server"]),
            ms(http["baseline server"]),
            ratio(http["kumitate server"], http["baseline server"]),
        ),
        (
            "streamable HTTP: client + server CPU ms per call",
            ms(both["kumitate"]),
            ms(both["baseline"]),
            ratio(both["kumitate"], both["baseline"]),
        ),
    ]
    print(f"Median (min-max) of {ROUNDS} interleaved rounds of {CALLS} calls; Python {sys.version.split()[0]}.\n")
    print("| fastmcp Client `call_tool` (summarize_stays, 5 stays) | kumitate | one-file FastMCP | ratio |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
