"""Start-up benchmarks (issue 32): what a process costs before its first call, against a one-file
FastMCP server with the same tool.

* stdio cold start: spawn -> `initialize` -> `tools/list` answered, `kumitate mcp --stdio --service
  stays` vs `python baseline.py` (FastMCP over stdio, summarize_stays calling the same core);
* resident memory (VmRSS) right after that `tools/list`, over stdio and over HTTP (`kumitate serve
  --service stays`, HTTP + MCP, vs the one-file server's streamable-HTTP app under uvicorn).

Runs are interleaved (kumitate, baseline, kumitate, ...) so the machine's load hits both alike;
each figure is the median of RUNS with its spread (min-max). Targets: start <= 1.15x, RSS <= 1.2x.

* restart of a whole instance: `kumitate serve` (every service) on a data directory an earlier start
  has filled, spawn -> `/readyz` 200 (what a supervisor waits for after a crash). With
  STARTUP_BEFORE=<a checkout of an earlier commit>, that tree's `kumitate serve` is measured in the
  same rounds (interleaved), for a before/after of the same run.

Run: python -m bench.startup_bench  (prints a Markdown table; a few minutes on a loaded machine)
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.foundation_bench import wait_or_kill

REPO = Path(__file__).resolve().parent.parent
RUNS = int(os.environ.get("STARTUP_RUNS", "7"))
PY = sys.executable

BASELINE = '''
"""One-file FastMCP server with kumitate's summarize_stays tool (the same pure core)."""
import os
from typing import Any, Literal

from fastmcp import FastMCP

from handlers.stays.core import summarize

mcp = FastMCP("hand-written")


@mcp.tool(name="summarize_stays")
def summarize_stays(
    stays: list[dict[str, Any]],
    granularity: Literal["admin", "city"] = "admin",
    mode: Literal["sequence", "aggregate"] = "sequence",
) -> dict[str, Any]:
    """Summarise GPS stay records into a Japanese travel summary."""
    return summarize({"stays": stays, "granularity": granularity, "mode": mode})


app = mcp.http_app(path="/mcp", transport="http") if os.environ.get("BASELINE_HTTP") else None

if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
'''

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used so far (all its threads): start-up cost that a
    loaded machine does not stretch the way it stretches wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _read_reply(proc: subprocess.Popen[bytes], want_id: int) -> dict[str, object]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"server exited ({proc.poll()}) before answering id {want_id}")
        message = json.loads(line)
        if message.get("id") == want_id:
            return dict(message)


def stdio_once(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Seconds from spawn to `tools/list` answered, the server's RSS (MB) and CPU seconds at that moment."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write((json.dumps(INIT) + "\n").encode())
        proc.stdin.flush()
        _read_reply(proc, 1)
        proc.stdin.write((json.dumps(INITIALIZED) + "\n" + json.dumps(LIST) + "\n").encode())
        proc.stdin.flush()
        listed = _read_reply(proc, 2)
        seconds = time.perf_counter() - started
        tools = listed["result"]["tools"]  # type: ignore[index]
        assert [t["name"] for t in tools] == ["summarize_stays"], tools
        return seconds, rss_mb(proc.pid), cpu_s(proc.pid)
    finally:
        proc.stdin.close()
        wait_or_kill(proc, 10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_once(cmd: Callable[[int], list[str]], path: str, env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Seconds from spawn to `tools/list` answered over streamable HTTP, and the RSS (MB) then."""
    port = _free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(cmd(port), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}{path}"
    try:
        with httpx.Client(timeout=60) as http:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"{cmd(port)} exited {proc.returncode}")
                try:
                    reply = http.post(url, json=INIT, headers=MCP_HEADERS)
                    break
                except httpx.HTTPError:
                    time.sleep(0.02)
            headers = dict(MCP_HEADERS)
            if "mcp-session-id" in reply.headers:
                headers["mcp-session-id"] = reply.headers["mcp-session-id"]
            headers["mcp-protocol-version"] = "2025-06-18"
            http.post(url, json=INITIALIZED, headers=headers)
            listed = http.post(url, json=LIST, headers=headers)
            seconds = time.perf_counter() - started
            assert "summarize_stays" in listed.text, listed.text[:300]
            return seconds, rss_mb(proc.pid), cpu_s(proc.pid)
    finally:
        proc.terminate()
        wait_or_kill(proc, 10)


def restart_once(repo: Path, data_dir: Path) -> tuple[float, float]:
    """Seconds from spawning `kumitate serve` (all services) from `repo` until `/readyz` answers 200, and the
    CPU seconds it used by then."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(repo), "KUMITATE_DATA_DIR": str(data_dir), "FASTMCP_LOG_LEVEL": "WARNING"}
    cmd = [PY, "-m", "kumitate", "serve", "--port", str(port), "--log-level", "warning"]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(timeout=10) as http:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"kumitate serve ({repo}) exited {proc.returncode}")
                try:
                    if http.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                        return time.perf_counter() - started, cpu_s(proc.pid)
                except httpx.HTTPError:
                    pass
                time.sleep(0.02)
    finally:
        proc.terminate()
        wait_or_kill(proc, 10)


def restart_rows(tmp: Path) -> list[str]:
    """Table rows for the whole-instance restart, this tree and (STARTUP_BEFORE) an earlier one, interleaved."""
    trees = {"this tree": REPO}
    if os.environ.get("STARTUP_BEFORE"):
        trees["before (STARTUP_BEFORE)"] = Path(os.environ["STARTUP_BEFORE"]).resolve()
    data = {name: tmp / f"restart-{i}" for i, name in enumerate(trees)}
    for name, repo in trees.items():  # the first start builds the samples; not counted
        restart_once(repo, data[name])
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for _ in range(RUNS):
        for name, repo in trees.items():
            runs[name].append(restart_once(repo, data[name]))
    return [
        f"| `kumitate serve` (all services) restart, spawn -> `/readyz` 200, {name}: seconds; CPU seconds "
        f"| {spread([r[0] for r in got], '.2f')}; {spread([r[1] for r in got], '.2f')} | - | - | - |"
        for name, got in runs.items()
    ]


def spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "baseline.py").write_text(BASELINE)
        env = {
            **os.environ,
            "PYTHONPATH": f"{REPO}{os.pathsep}{tmp}",
            "KUMITATE_DATA_DIR": str(tmp / "var"),
            "FASTMCP_LOG_LEVEL": "WARNING",
            "PYTHONDONTWRITEBYTECODE": "0",
        }
        kumitate_stdio = [PY, "-m", "kumitate", "mcp", "--stdio", "--service", "stays"]
        baseline_stdio = [PY, str(tmp / "baseline.py")]
        uvicorn = [PY, "-m", "uvicorn", "--log-level", "warning"]

        def kumitate_http(port: int) -> list[str]:
            return [PY, "-m", "kumitate", "serve", "--service", "stays", "--port", str(port), "--log-level", "warning"]

        def baseline_http(port: int) -> list[str]:
            return [*uvicorn, "baseline:app", "--port", str(port)]

        # one warm-up of each (bytecode caches, page cache), not counted
        stdio_once(kumitate_stdio, env, REPO)
        stdio_once(baseline_stdio, env, tmp)
        runs: dict[str, list[tuple[float, float, float]]] = {k: [] for k in ("k_stdio", "b_stdio", "k_http", "b_http")}
        for _ in range(RUNS):
            runs["k_stdio"].append(stdio_once(kumitate_stdio, env, REPO))
            runs["b_stdio"].append(stdio_once(baseline_stdio, env, tmp))
            runs["k_http"].append(http_once(kumitate_http, "/mcp/stays", env, REPO))
            runs["b_http"].append(http_once(baseline_http, "/mcp", {**env, "BASELINE_HTTP": "1"}, tmp))
        restarts = restart_rows(tmp)

    def col(key: str, i: int) -> list[float]:
        return [r[i] for r in runs[key]]

    start_ratio = statistics.median(col("k_stdio", 0)) / statistics.median(col("b_stdio", 0))
    rss_stdio = statistics.median(col("k_stdio", 1)) / statistics.median(col("b_stdio", 1))
    rss_http = statistics.median(col("k_http", 1)) / statistics.median(col("b_http", 1))
    http_ratio = statistics.median(col("k_http", 0)) / statistics.median(col("b_http", 0))
    cpu_stdio = statistics.median(col("k_stdio", 2)) / statistics.median(col("b_stdio", 2))
    cpu_http = statistics.median(col("k_http", 2)) / statistics.median(col("b_http", 2))

    def met(ok: bool) -> str:
        return "met" if ok else "**missed**"

    print(f"Median (min-max) of {RUNS} interleaved runs, after one warm-up of each; Python {sys.version.split()[0]}.\n")
    print("| what | kumitate | one-file FastMCP | ratio | target |")
    print("|---|---|---|---|---|")
    print(
        f"| stdio cold start, spawn -> `tools/list` answered (s) | {spread(col('k_stdio', 0), '.3f')} "
        f"| {spread(col('b_stdio', 0), '.3f')} | **{start_ratio:.2f}** | <= 1.15 {met(start_ratio <= 1.15)} |"
    )
    print(
        f"| stdio start, CPU seconds used by the server until `tools/list` is answered | "
        f"{spread(col('k_stdio', 2), '.2f')} | {spread(col('b_stdio', 2), '.2f')} | **{cpu_stdio:.2f}** "
        f"| <= 1.15 {met(cpu_stdio <= 1.15)} |"
    )
    print(
        f"| RSS after start, stdio (MB) | {spread(col('k_stdio', 1), '.0f')} | {spread(col('b_stdio', 1), '.0f')} "
        f"| **{rss_stdio:.2f}** | <= 1.2 {met(rss_stdio <= 1.2)} |"
    )
    print(
        f"| HTTP + MCP start (`kumitate serve --service stays` vs uvicorn + the FastMCP app), spawn -> "
        f"`tools/list` over HTTP (s) | {spread(col('k_http', 0), '.3f')} | {spread(col('b_http', 0), '.3f')} "
        f"| {http_ratio:.2f} | - |"
    )
    print(
        f"| HTTP + MCP start, CPU seconds until `tools/list` is answered | {spread(col('k_http', 2), '.2f')} "
        f"| {spread(col('b_http', 2), '.2f')} | {cpu_http:.2f} | - |"
    )
    print(
        f"| RSS after start, HTTP + MCP (MB) | {spread(col('k_http', 1), '.0f')} | {spread(col('b_http', 1), '.0f')} "
        f"| **{rss_http:.2f}** | <= 1.2 {met(rss_http <= 1.2)} |"
    )
    print("\n".join(restarts))


if __name__ == "__main__":
    main()
