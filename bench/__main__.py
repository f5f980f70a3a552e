"""`make bench`: run the benchmarks and add their results to docs/BENCHMARKS.md (with the commands and the machine).

python -m bench [NAME ...]     NAME: one of SUITES below (bench/<NAME>_bench.py); none: all of them, in that order

Each run becomes one dated section below the file's marker, newest first. The sections already there (earlier
runs, and the analyses written from the commands they name) are kept: a run used to rewrite the whole file.
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


DOC = REPO / "docs" / "BENCHMARKS.md"
MARKER = "<!-- `make bench` adds each run below this line, newest first -->"
HEADER = (
    "# Benchmarks\n\n"
    "`make bench` (`python -m bench [NAME ...]`) runs the suites and adds each run below as a dated section; the\n"
    "other sections were written from the commands they name. These machines are shared and noisy: ratios are\n"
    "measured within one run, and absolute times can move by ±30% between runs.\n\n"
)


def record(doc: Path, section: str) -> None:
    """Put one run's `section` below the marker of `doc` (newest first), keeping everything else in it."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else HEADER
    if MARKER not in text:
        text = text.rstrip("\n") + f"\n\n{MARKER}\n"
    head, _, rest = text.partition(MARKER)
    body = f"{head}{MARKER}\n\n{section.strip()}\n"
    if rest.strip():
        body += "\n" + rest.lstrip("\n")
    doc.write_text(body.rstrip("\n") + "\n", encoding="utf-8")


def commit() -> str:
    """The commit measured, and whether the tree had changes on top of it."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    )
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, check=False)
    return (head.stdout.strip() or "unknown") + (" with uncommitted changes" if dirty.stdout.strip() else "")


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
        sections.append(f"### {name}\n\nCommand: `python -m bench.{name}_bench` ({seconds:.0f} s{status})\n\n{out}\n")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    suites = "every suite" if names == SUITES else ", ".join(names)
    record(
        DOC, f"## `make bench`, {when}, commit {commit()} ({suites})\n\nMachine: {machine()}.\n\n" + "\n".join(sections)
    )
    print(f"(added to {DOC})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
