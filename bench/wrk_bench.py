"""Throughput and tail latency with a load generator that is not the limit (issue 32): `wrk`.

`kumitate serve` (one worker) against the bare Litestar route `bench/baseline_app.py` under the
same uvicorn (uvloop, httptools, one worker, no access log), both POSTing the README's
summarize_stays body. Runs are interleaved (round by round, the order of the two alternating) so
the machine's load falls on both alike; each row gives the median and the range over the rounds of
req/s and p99, and the ratio of each round's pair. A row counts only if the baseline is faster than
kumitate: otherwise the client (or the machine) is the limit, and the row says so.

At the overload row (500 connections) kumitate sheds what it cannot admit (503 SERVICE_UNAVAILABLE
with Retry-After): wrk's latency mixes the quick refusals with the admitted calls, so a probe (one
more keep-alive connection, sequential calls) samples the admitted calls' latency on its own.

The MCP row (`mcp_row`) is a stateless 2026-07-28 `tools/call` (`_meta` envelope, `Mcp-Method` /
`Mcp-Name` headers) against `/mcp/stays` and a one-file FastMCP 4 server with the same tool.

Run: python -m bench.wrk_bench [--rounds 5] [--seconds 8] [--connections 16,256,500] [--no-mcp] [--no-http]
     (needs /usr/bin/wrk: `apt-get install wrk`; prints Markdown)
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.foundation_bench import _free_port, wait_or_kill

REPO = Path(__file__).resolve().parent.parent
PATH = "/v1/stays/summarize_stays"
BODY = {  # the README's example
    "stays": [
        {
            "code": "13101",
            "name": "千代田区",
            "start_ts": "2024-05-01T09:00:00+09:00",
            "end_ts": "2024-05-01T11:00:00+09:00",
        },
        {
            "code": "13102",
            "name": "中央区",
            "start_ts": "2024-05-01T11:15:00+09:00",
            "end_ts": "2024-05-01T11:45:00+09:00",
        },
    ]
}
MODERN = "2026-07-28"
MCP_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "wrk", "version": "1"},
}
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": MODERN,
    "Mcp-Method": "tools/call",
    "Mcp-Name": "summarize_stays",
}
UVICORN = ["--loop", "uvloop", "--http", "httptools", "--workers", "1", "--no-access-log", "--log-level", "warning"]
"""The baselines' uvicorn options: what `kumitate serve` runs (uvloop is uvicorn's `auto` choice here)."""

BASELINE_MCP_TOOL = """
from typing import Any
from fastmcp import FastMCP
from generated.stays.models import SummarizeStaysInput, SummarizeStaysOutput
from handlers.stays import create
from kumitate.context import CallContext
from kumitate.service import ServiceSetup
from kumitate.settings import Settings

HANDLER = create(ServiceSetup.open("stays", Settings.from_env()))
mcp = FastMCP("hand-written")


@mcp.tool(name="summarize_stays")
def summarize_stays(stays: list[dict[str, Any]], granularity: str = "admin", mode: str = "sequence") -> SummarizeStaysOutput:
    ctx = CallContext(service="stays", tool="summarize_stays", transport="mcp", run_id="r", trace_id="t")
    data = SummarizeStaysInput.model_validate({"stays": stays, "granularity": granularity, "mode": mode})
    return SummarizeStaysOutput.model_validate(HANDLER.summarize_stays(data.model_dump(mode="json"), ctx))


"""
"""The hand-written MCP baselines' module without its app: a one-file FastMCP 4 server with the summarize_stays
tool that validates as kumitate does (bench.pipeline_bench adds a stateful app, this module a stateless one)."""
BASELINE_MCP = BASELINE_MCP_TOOL + 'app = mcp.http_app(path="/mcp", transport="http", stateless_http=True)\n'


# -- servers -------------------------------------------------------------------------------------
def _env(tmp: Path, **extra: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("KUMITATE_")},
        "KUMITATE_DATA_DIR": str(tmp / "var"),
        "FASTMCP_LOG_LEVEL": "CRITICAL",
        "PYTHONPATH": f"{tmp}:{REPO}",
        **extra,
    }


def _wait_ready(port: int, proc: subprocess.Popen[bytes], path: str = "/", seconds: float = 120) -> None:
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", path)
            conn.getresponse().read()
            conn.close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("server did not start")


@dataclass(frozen=True)
class Served:
    port: int
    pid: int


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user + system, every thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def server(cmd: list[str], tmp: Path, ready_path: str, **env: str) -> Iterator[Served]:
    """A server on a free port (`cmd` gets `--port N` appended); its log is thrown away (the call
    log is one line per call: its cost is part of what is measured, not its storage)."""
    port = _free_port()
    proc = subprocess.Popen(
        [*cmd, "--port", str(port)],
        cwd=tmp,
        env=_env(tmp, **env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_ready(port, proc, ready_path)
        yield Served(port, proc.pid)
    finally:
        proc.terminate()
        wait_or_kill(proc, 20)


def kumitate_server(tmp: Path, **env: str) -> AbstractContextManager[Served]:
    return server([sys.executable, "-m", "kumitate", "serve", "--log-level", "warning"], tmp, "/healthz", **env)


def uvicorn_server(target: str, tmp: Path, **env: str) -> AbstractContextManager[Served]:
    return server([sys.executable, "-m", "uvicorn", target, *UVICORN], tmp, "/", **env)


# -- wrk -----------------------------------------------------------------------------------------
@dataclass
class Run:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    non_2xx: int
    socket_errors: int
    client_cpu: float
    """wrk's CPU seconds per second of the run (1.0 = one core busy: the client would be the limit)."""
    server_cpu_ms: float
    """The server's CPU time per answer (every thread): steadier than rates on a shared machine."""
    admitted_p99_ms: float | None = None
    admitted: int = 0


CLIENT_BOUND = 0.8
"""wrk's CPU share (cores) from which the client, not the server, may set the rate."""
UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()  # type: ignore[union-attr]
    return float(number) * UNITS[unit]


def parse(out: str) -> dict[str, float]:
    found: dict[str, float] = {}
    if m := re.search(r"Requests/sec:\s+([\d.]+)", out):
        found["rps"] = float(m.group(1))
    for pct in ("50", "99"):
        if m := re.search(rf"^\s+{pct}%\s+(\S+)", out, re.M):
            found[f"p{pct}"] = _ms(m.group(1))
    if m := re.search(r"(\d+) requests in", out):
        found["requests"] = int(m.group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    found["non_2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    found["socket_errors"] = sum(int(g) for g in m.groups()) if m else 0
    return found


def lua_script(tmp: Path, name: str, body: bytes, headers: dict[str, str]) -> Path:
    (tmp / f"{name}.body").write_bytes(body)
    lines = ['wrk.method = "POST"']
    lines += [f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()]
    lines += [f'local f = io.open("{tmp / name}.body", "rb")', 'wrk.body = f:read("*a")', "f:close()"]
    script = tmp / f"{name}.lua"
    script.write_text("\n".join(lines) + "\n")
    return script


class Probe(threading.Thread):
    """One more keep-alive connection calling in a loop beside wrk: each call's status and latency,
    so the admitted calls' tail can be told apart from the quick refusals wrk's histogram mixes in."""

    def __init__(self, port: int, path: str, body: bytes, headers: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.port, self.path, self.body, self.headers = port, path, body, headers
        self.samples: list[tuple[int, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                conn.request("POST", self.path, self.body, self.headers)
                response = conn.getresponse()
                response.read()
            except OSError:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                continue
            self.samples.append((response.status, (time.perf_counter() - started) * 1000))
            if response.status == 503:  # a client honouring Retry-After would wait; the probe just goes on
                time.sleep(0.005)
        conn.close()


def wrk(served: Served, path: str, script: Path, connections: int, seconds: float, probe: Probe | None = None) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = cpu_seconds(served.pid)
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--latency", "--timeout", "30s", "-s", str(script)]
    if probe is not None:
        probe.start()
    try:
        url = f"http://127.0.0.1:{served.port}{path}"
        out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True)
    finally:
        if probe is not None:
            probe.stop.set()
            probe.join()
    server_cpu = cpu_seconds(served.pid) - server_before
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / seconds
    found = parse(out.stdout)
    if "rps" not in found:
        raise RuntimeError(f"wrk printed no rate:\n{out.stdout}\n{out.stderr}")
    run = Run(
        found["rps"],
        found["p50"],
        found["p99"],
        int(found["requests"]),
        int(found["non_2xx"]),
        int(found["socket_errors"]),
        cpu,
        1000 * server_cpu / max(1, int(found["requests"]) + (len(probe.samples) if probe else 0)),
    )
    if probe is not None:
        admitted = sorted(ms for status, ms in probe.samples if status == 200)
        run.admitted = len(admitted)
        run.admitted_p99_ms = admitted[min(len(admitted) - 1, int(len(admitted) * 0.99))] if admitted else None
    return run


# -- rounds and the report -----------------------------------------------------------------------
@dataclass
class Target:
    name: str
    served: Served
    path: str
    script: Path
    body: bytes
    headers: dict[str, str]
    runs: dict[int, list[Run]] = field(default_factory=dict)


def interleaved(targets: list[Target], connections: list[int], rounds: int, seconds: float, probe_at: int) -> None:
    for target in targets:  # warm-up: imports, caches, the first connections
        wrk(target.served, target.path, target.script, 16, 2)
    for r in range(rounds):
        for conns in connections:
            order = targets if r % 2 == 0 else targets[::-1]
            for target in order:
                port = target.served.port
                probe = Probe(port, target.path, target.body, target.headers) if conns >= probe_at else None
                run = wrk(target.served, target.path, target.script, conns, seconds, probe)
                target.runs.setdefault(conns, []).append(run)
                print(
                    f"  round {r + 1} {conns:>3} conns {target.name:<9} {run.rps:8.0f} req/s p99 {run.p99_ms:7.1f} ms"
                    f" non-2xx {run.non_2xx} wrk cpu {run.client_cpu:.2f} server cpu/call {run.server_cpu_ms:.2f} ms",
                    file=sys.stderr,
                    flush=True,
                )


def spread(values: list[float], fmt: str = "{:,.0f}") -> str:
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def report(
    sut: Target, base: Target, connections: list[int], bare: bool = True, ceiling: Target | None = None
) -> list[str]:
    """One row per connection count. `bare`: the baseline is the bare framework, which must be the
    faster of the two for the row to show the server's cost and not the client's; or, given, the
    `ceiling` (a bare ASGI app, bench/ceiling_app.py) must be, when kumitate outruns the framework."""
    last = ("ceiling faster (its req/s)" if ceiling else "baseline faster") if bare else "client the limit"
    lines = [
        f"| connections | {sut.name} req/s | {sut.name} p99 ms | {base.name} req/s | {base.name} p99 ms "
        f"| ratio req/s | ratio p99 | server CPU ms/call | client (wrk) CPU | {last} |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for conns in connections:
        s, b = sut.runs[conns], base.runs[conns]
        ratios = [x.rps / y.rps for x, y in zip(s, b, strict=True)]
        p99s = [x.p99_ms / y.p99_ms for x, y in zip(s, b, strict=True)]
        top = ceiling.runs[conns] if ceiling else b
        faster = sum(y.rps > x.rps for x, y in zip(s, top, strict=True))
        cpu = max(r.client_cpu for r in s + b)
        if bare:
            verdict = f"{faster}/{len(s)}" + ("" if faster == len(s) else " (client or machine may be the limit)")
            if ceiling:
                verdict += f" ({spread([r.rps for r in top])})"
        else:
            verdict = "no" if cpu < CLIENT_BOUND else "maybe: wrk used a whole core"
        lines.append(
            f"| {conns} | {spread([r.rps for r in s])} | {spread([r.p99_ms for r in s], '{:.1f}')} "
            f"| {spread([r.rps for r in b])} | {spread([r.p99_ms for r in b], '{:.1f}')} "
            f"| **{spread(ratios, '{:.2f}')}** | {spread(p99s, '{:.2f}')} "
            f"| {statistics.median(r.server_cpu_ms for r in s):.2f} vs {statistics.median(r.server_cpu_ms for r in b):.2f} "
            f"| ≤ {cpu:.2f} core | {verdict} |"
        )
    return [*lines, "", *each_round(sut, base, connections)]


def each_round(sut: Target, base: Target, connections: list[int]) -> list[str]:
    """Every round's figures, in order, so a quiet re-run can be compared round by round (not only medians)."""
    lines = []
    for conns in connections:
        pairs = list(zip(sut.runs[conns], base.runs[conns], strict=True))
        rounds = "; ".join(
            f"{x.rps:,.0f}/{y.rps:,.0f} req/s, p99 {x.p99_ms:.1f}/{y.p99_ms:.1f} ms ({x.p99_ms / y.p99_ms:.2f}), "
            f"CPU {x.server_cpu_ms:.2f}/{y.server_cpu_ms:.2f} ms/call"
            for x, y in pairs
        )
        lines.append(f"- {conns} connections, each round ({sut.name}/{base.name}): {rounds}")
    return lines


def overload(sut: Target, base: Target, connections: list[int], probe_at: int) -> list[str]:
    lines = []
    for conns in [c for c in connections if c >= probe_at]:
        for target in (sut, base):
            runs = target.runs[conns]
            shed = [r.non_2xx / r.requests for r in runs if r.requests]
            admitted = [r.admitted_p99_ms for r in runs if r.admitted_p99_ms is not None]
            ok_rate = [r.rps * (1 - r.non_2xx / r.requests) for r in runs if r.requests]
            lines.append(
                f"| {conns} | {target.name} | {spread(ok_rate)} | {spread([100 * s for s in shed], '{:.1f}')} % "
                f"| {spread(admitted, '{:.0f}') if admitted else '–'} "
                f"(probe: {sum(r.admitted for r in runs)} calls) | {spread([r.p99_ms for r in runs], '{:.0f}')} |"
            )
    if not lines:
        return []
    head = [
        "| connections | server | admitted calls/s | shed (503) | admitted p99 ms, probe | all answers p99 ms, wrk |",
        "|---|---|---|---|---|---|",
    ]
    return head + lines


def load_average() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def http_rows(
    tmp: Path, connections: list[int], rounds: int, seconds: float, probe_at: int, env: dict[str, str]
) -> list[str]:
    body = json.dumps(BODY, ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json"}
    script = lua_script(tmp, "http", body, headers)
    with kumitate_server(tmp, **env) as kumitate, uvicorn_server("bench.baseline_app:app", tmp) as baseline:
        sut = Target("kumitate", kumitate, PATH, script, body, headers)
        base = Target("baseline", baseline, PATH, script, body, headers)
        answer = tmp / "ceiling-answer.json"
        answer.write_bytes(_check(sut, lambda reply: reply.get("summary") is not None))
        _check(base, lambda reply: reply.get("summary") is not None)
        with uvicorn_server("bench.ceiling_app:app", tmp, CEILING_ANSWER=str(answer)) as bare:
            ceiling = Target("ceiling", bare, PATH, script, body, headers)
            interleaved([sut, base, ceiling], connections, rounds, seconds, probe_at)
    lines = [
        f"POST {PATH}, README body ({len(body)} bytes); `kumitate serve` vs `uvicorn bench.baseline_app:app` "
        f"({' '.join(UVICORN)}); wrk -t1, {seconds:g} s per run, {rounds} interleaved rounds; "
        "median (min–max) over the rounds; ratios are per round (kumitate / baseline). The ceiling is "
        "`bench/ceiling_app.py` under the same uvicorn: no framework, kumitate's answer bytes; wrk driving it "
        "faster than kumitate shows the client is not what limits kumitate's rate.",
        "",
        *report(sut, base, connections, ceiling=ceiling),
    ]
    shed = overload(sut, base, connections, probe_at)
    if shed:
        lines += ["", "Overload: what is admitted and how fast.", "", *shed]
    return lines


def mcp_row(tmp: Path, rounds: int, seconds: float, connections: int = 16) -> list[str]:
    """Stateless 2026-07-28 tools/call: kumitate `/mcp/stays` vs a one-file FastMCP 4 server."""
    (tmp / "baseline_mcp_app.py").write_text(BASELINE_MCP)
    rpc = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "summarize_stays", "arguments": BODY, "_meta": MCP_META},
    }
    body = json.dumps(rpc, ensure_ascii=False).encode()
    script = lua_script(tmp, "mcp", body, MCP_HEADERS)
    with kumitate_server(tmp) as kumitate, uvicorn_server("baseline_mcp_app:app", tmp) as baseline:
        sut = Target("kumitate", kumitate, "/mcp/stays", script, body, MCP_HEADERS)
        base = Target("fastmcp", baseline, "/mcp", script, body, MCP_HEADERS)
        for target in (sut, base):
            _check(target, lambda reply: reply.get("result", {}).get("isError") is False)
        interleaved([sut, base], [connections], rounds, seconds, probe_at=10**9)
    return [
        f"MCP streamable HTTP, stateless {MODERN} `tools/call` (`_meta` envelope, Mcp-Method / Mcp-Name headers), "
        f"same body as above: kumitate `/mcp/stays` vs a one-file FastMCP 4 server (stateless_http, {' '.join(UVICORN)}); "
        f"wrk -t1, {seconds:g} s per run, {rounds} interleaved rounds.",
        "",
        *report(sut, base, [connections], bare=False),
    ]


def _check(target: Target, good: object) -> bytes:
    """One call before measuring (a benchmark of error answers measures nothing); the answer."""
    conn = http.client.HTTPConnection("127.0.0.1", target.served.port, timeout=30)
    conn.request("POST", target.path, target.body, target.headers)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    reply = json.loads(raw)
    if response.status != 200 or not good(reply):  # type: ignore[operator]
        raise RuntimeError(f"{target.name}: {response.status} {raw[:500]!r}")
    return raw


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--connections", default="16,256,500")
    parser.add_argument("--probe-at", type=int, default=500, help="connections from which the admitted-call probe runs")
    parser.add_argument("--mcp-connections", type=int, default=16)
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="a setting for kumitate (repeatable)"
    )
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--no-mcp", action="store_true")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed: apt-get install wrk (Debian package)", file=sys.stderr)
        return 2
    connections = [int(c) for c in args.connections.split(",")]
    started = time.perf_counter()
    lines = [f"Load average at the start: {load_average()} (2 CPUs shared by server, baseline and wrk)."]
    with tempfile.TemporaryDirectory(prefix="wrk-bench-") as name:
        tmp = Path(name)
        if not args.no_http:
            env = dict(item.split("=", 1) for item in args.env)
            if env:
                lines += ["", "kumitate settings: " + ", ".join(f"`{k}={v}`" for k, v in env.items())]
            lines += ["", *http_rows(tmp, connections, args.rounds, args.seconds, args.probe_at, env)]
        if not args.no_mcp:
            lines += ["", *mcp_row(tmp, args.rounds, args.seconds, args.mcp_connections)]
    lines += ["", f"Load average at the end: {load_average()}; {time.perf_counter() - started:.0f} s in all."]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
