"""MCP throughput with wrk: a stateless 2026-07-28 `tools/call` of summarize_stays (the README's
one-stay body, headers `Mcp-Method`/`Mcp-Name`, `_meta` with the protocol version), against
`kumitate serve` at /mcp/stays (lean path on, and off: KUMITATE_MCP_LEAN=0) and the one-file
FastMCP 4 server of bench/baseline_mcp.py. The three servers run side by side; the runs are
interleaved (A, B, C, A, B, C, ...) so drift hits all of them alike.

python -m bench.mcp_wrk_bench [--runs 5] [--seconds 8] [--connections 16] [--json]

Needs `wrk` (Debian package). Not part of `make bench`: it takes minutes and owns both cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
VERSION = "2026-07-28"
ARGUMENTS = {
    "granularity": "admin",
    "stays": [
        {
            "ref": "day1-1",
            "code": "13101",
            "name": "千代田区",
            "start_ts": "2024-05-01T09:00:00+09:00",
            "end_ts": "2024-05-01T11:00:00+09:00",
        }
    ],
}


def call_body(request_id: int = 1) -> str:
    meta = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}
    params = {"name": "summarize_stays", "arguments": ARGUMENTS, "_meta": meta}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": VERSION,
    "Mcp-Method": "tools/call",
    "Mcp-Name": "summarize_stays",
}


def lua_script() -> str:
    lines = ['wrk.method = "POST"', f"wrk.body = {json.dumps(call_body())}"]
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in HEADERS.items()]
    return "\n".join(lines) + "\n"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(name: str, argv: list[str], env: dict[str, str], url: str, log: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            reply = httpx.post(url, content=call_body(), headers=HEADERS, timeout=2)
            if reply.status_code == 200 and '"isError":false' in reply.text:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"{name} did not answer within 120 s")


def wrk(url: str, script: Path, seconds: int, connections: int) -> tuple[float, float]:
    """(requests per second, p99 ms) of one wrk run; non-2xx answers fail the run."""
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if "Non-2xx" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    value, unit = re.search(r"99%\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
    return rate, float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed (apt-get install wrk)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        script = root / "call.lua"
        script.write_text(lua_script())
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("KUMITATE_")}
        base_env |= {"FASTMCP_LOG_LEVEL": "CRITICAL", "PYTHONPATH": str(REPO), "KUMITATE_LOG_FORMAT": "json"}
        targets: dict[str, tuple[list[str], dict[str, str], str]] = {}
        for name, lean in (("kumitate lean", "1"), ("kumitate fastmcp", "0")):
            port = _free_port()
            argv = [sys.executable, "-m", "kumitate", "serve", "--host", "127.0.0.1", "--port", str(port)]
            argv += ["--service", "stays", "--log-level", "warning"]
            env = base_env | {"KUMITATE_DATA_DIR": str(root / name.replace(" ", "_")), "KUMITATE_MCP_LEAN": lean}
            targets[name] = (argv, env, f"http://127.0.0.1:{port}/mcp/stays")
        port = _free_port()
        argv = [sys.executable, "-m", "uvicorn", "bench.baseline_mcp:app", "--port", str(port)]
        argv += ["--http", "httptools", "--no-access-log", "--log-level", "warning"]
        targets["bare FastMCP"] = (
            argv,
            base_env | {"KUMITATE_DATA_DIR": str(root / "bare")},
            f"http://127.0.0.1:{port}/mcp",
        )
        procs = []
        try:
            for name, (argv, env, url) in targets.items():
                procs.append(start(name, argv, env, url, root / f"{name.replace(' ', '_')}.log"))
            results: dict[str, list[tuple[float, float]]] = {name: [] for name in targets}
            for _, _, url in targets.values():  # warm-up, not counted
                wrk(url, script, 2, args.connections)
            for _ in range(args.runs):
                for name, (_, _, url) in targets.items():
                    results[name].append(wrk(url, script, args.seconds, args.connections))
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=15)
    if args.json:
        print(json.dumps(results))
        return
    bare = statistics.median(r for r, _ in results["bare FastMCP"])
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{args.connections} connections, {args.runs} interleaved runs of {args.seconds} s, wrk -t1; load average {load}"
    )
    print(f"{'server':18} {'req/s median':>12} {'req/s range':>17} {'p99 ms median':>13} {'vs bare':>8}")
    for name, runs in results.items():
        rates = [r for r, _ in runs]
        p99 = statistics.median(p for _, p in runs)
        median = statistics.median(rates)
        spread = f"{min(rates):.0f}-{max(rates):.0f}"
        print(f"{name:18} {median:12.0f} {spread:>17} {p99:13.1f} {median / bare:8.2f}")


if __name__ == "__main__":
    main()
