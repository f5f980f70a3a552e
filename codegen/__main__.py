"""python -m codegen [--check | --lint] [--specs DIR] [--out DIR]

Without flags: lint the specs, then write generated/ (removing orphans) and the settings table of
the project's README.md or docs/settings.md (codegen/settings_doc.py, where the page has its markers); a service over
its token budget (specs/token-budget.yaml) is reported as a warning.
--check: exit 1 and list stale and orphan files, with a unified diff of each stale one, instead of writing, or when a service's MCP
  tools/list is over its token budget (KT205, unless specs/readiness-baseline.yaml accepts it).
--lint: only report spec problems.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import time
from pathlib import Path

from codegen import docs, emit, lint, locate, readiness, settings_doc, specs
from kumitate.project import Project

GENERATED_DIRS = ("generated", "docs/reference")


def _existing(out_root: Path) -> set[str]:
    """Files under the generated directories: anything codegen did not produce there is an orphan."""
    return {
        p.relative_to(out_root).as_posix()
        for d in GENERATED_DIRS
        if (out_root / d).exists()
        for p in (out_root / d).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


DIFF_LINES = 200
"""At most this many diff lines per stale file: enough to see the drift, not a whole regenerated module."""


def drift(path: str, current: str | None, wanted: str) -> list[str]:
    """The unified diff from the file on disk (or nothing, when missing) to what codegen would write."""
    lines = list(
        difflib.unified_diff(
            (current or "").splitlines(keepends=True),
            wanted.splitlines(keepends=True),
            fromfile=f"a/{path}" if current is not None else "/dev/null",
            tofile=f"b/{path}",
        )
    )
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"... {len(lines) - DIFF_LINES} more diff lines\n"]
    return [line if line.endswith("\n") else line + "\n" for line in lines]


def budget_problems(tree: specs.SpecTree) -> list[specs.Problem]:
    """KT205 (and a malformed budget file), minus what specs/readiness-baseline.yaml accepts."""
    baseline = readiness.load_baseline(tree.root / readiness.BASELINE_FILE)
    accepted = readiness.filter_baseline(docs.check_budget(tree), baseline)
    return [p for p in accepted if p.rule == docs.BUDGET_RULE]


SETTINGS_PAGES = ("README.md", "docs/settings.md")
"""Where a project's settings table may live: a new project's README (`kumitate init` writes it there),
or a docs page (this repository keeps its README a short quick start and the table in docs/settings.md)."""


def readme_table(project: Project, out: Path) -> dict[str, str]:
    """Each of the project's SETTINGS_PAGES that holds the settings table's markers, with the table
    regenerated, keyed like `emit.render_all` (relative to `out`); nothing when no page has the table."""
    found: dict[str, str] = {}
    for name in SETTINGS_PAGES:
        page = project.root / name
        text = page.read_text(encoding="utf-8") if page.is_file() else ""
        wanted = settings_doc.rewrite(text, project.handlers)
        if wanted is not None:
            found[os.path.relpath(page, out)] = wanted
    return found


def _report_drift(
    out: Path,
    wanted: dict[str, str],
    stale: list[str],
    orphans: list[str],
    table: dict[str, str],
    over_budget: list[specs.Problem],
) -> int:
    """`--check`: print each stale file with its diff, each orphan and the services over their token
    budget, and what to run about them; 1 when there is any (CI fails), else 0."""
    for path in stale:
        print(f"stale: {path}{' (its settings table)' if path in table else ''}")
    for path in stale:
        target = out / path
        current = target.read_text(encoding="utf-8") if target.exists() else None
        sys.stdout.writelines(drift(path, current, wanted[path]))
    for path in orphans:
        print(f"orphan: {path}")
    if stale or orphans:
        print(f"generated code is out of date ({len(stale)} stale, {len(orphans)} orphan): run `make generate`.")
    if over_budget:
        print(
            f"{len(over_budget)} service(s) over their tools/list token budget (specs/{docs.BUDGET_FILE}):"
            " shorten the descriptions or schemas, or raise the budget with a reason."
        )
    if stale or orphans or over_budget:
        return 1
    also = f" and {', '.join(table)}'s settings table" if table else ""
    print(f"generated code is up to date ({len(wanted) - len(table)} files{also}).")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Generate, `--check` or `--lint` from the command line; the exit status is what `make` and CI read
    (non-zero when a spec is invalid or a generated file is stale)."""
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="report stale/orphan generated files; write nothing")
    mode.add_argument("--lint", action="store_true", help="only lint the specs")
    parser.add_argument("--specs", type=Path, help="the specs directory (default: the project's)")
    parser.add_argument("--out", type=Path, help="directory that holds generated/ (default: the project's)")
    args = parser.parse_args(argv)
    project = Project.discover() if args.specs is None or args.out is None else Project.at(args.out)
    args.specs = args.specs or project.specs
    args.out = args.out or project.out

    started = time.perf_counter()
    tree = specs.load(args.specs)
    problems = lint.lint(tree)
    if problems:
        for problem in problems:
            print(locate.describe(problem, args.specs.resolve().parent), file=sys.stderr)
        locate.annotate(problems, args.specs.resolve().parent)
        print(f"{len(problems)} spec problem(s); nothing generated.", file=sys.stderr)
        return 1
    if args.lint:
        print(f"specs OK: {len(tree.services)} services, {len(tree.all_tools())} tools")
        return 0

    over_budget = budget_problems(tree)
    for problem in over_budget:
        print(f"{'' if args.check else 'warning: '}{problem}", file=sys.stderr)
    table = readme_table(project, args.out)
    wanted = emit.render_all(tree) | table
    existing = _existing(args.out)
    stale = [
        p
        for p, text in wanted.items()
        if not (args.out / p).exists() or (args.out / p).read_text(encoding="utf-8") != text
    ]
    orphans = sorted(existing - set(wanted))
    if args.check:
        return _report_drift(args.out, wanted, stale, orphans, table, over_budget)
    for path in stale:
        target = args.out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(wanted[path], encoding="utf-8")
    for path in orphans:
        (args.out / path).unlink()
    elapsed = time.perf_counter() - started
    print(f"generated {len(wanted)} files ({len(stale)} written, {len(orphans)} removed) in {elapsed:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
