"""`make bench`: run every benchmark and write docs/BENCHMARKS.md (with the commands and the machine).

python -m bench [NAME ...]     NAME: one of SUITES below (bench/<NAME>_bench.py); none: all of them, in that order
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUITES = [
    "startup",
    "client_schema",
    "foundation",
    "pipeline",
    "stays",
    "household",
    "attendance",
    "analytics",
    "yana",
    "yana_search",
    "yana_load",
    "cluster",
    "tracing",
    "wrk",
]
"""The benchmarks, in the order docs/BENCHMARKS.md shows them."""


def machine() -> str:
    mem = ""
    try:
        kb = int(
            next(
                line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")
            ).split()[1]
        )
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    return f"{platform.machine()}, {os.cpu_count()} CPUs{mem}, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def run(name: str) -> tuple[str, float, int]:
    cmd = [sys.executable, "-m", f"bench.{name}_bench"]
    started = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=REPO, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False
    )
    out = proc.stdout.strip() or proc.stderr.strip()[-2000:]
    return out, time.perf_counter() - started, proc.returncode


def main() -> int:
    names = sys.argv[1:] or SUITES
    sections = []
    failed = 0
    for name in names:
        print(f"== {name}", flush=True)
        out, seconds, code = run(name)
        print(out, flush=True)
        failed += code != 0
        status = "" if code == 0 else f" (exit {code})"
        sections.append(f"## {name}\n\nCommand: `python -m bench.{name}_bench` ({seconds:.0f} s{status})\n\n{out}\n")
    doc = REPO / "docs" / "BENCHMARKS.md"
    header = (
        "# Benchmarks\n\n"
        "Produced by `make bench` (`python -m bench`), which runs each suite below and rewrites this file.\n"
        f"Machine: {machine()}. These machines are shared and noisy: ratios are measured within one run,\n"
        "and absolute times can move by ±30% between runs.\n\n"
    )
    if names == SUITES or not doc.exists():
        doc.write_text(header + "\n".join(sections), encoding="utf-8")
    else:
        print(f"(partial run: {doc} left as it was)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
