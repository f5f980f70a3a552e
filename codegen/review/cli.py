"""`kumitate diff BASE HEAD`: review the spec changes between two git refs or directories.

Without HEAD, the working tree is reviewed when its specs/ differ from the commit HEAD (the report
says so), else HEAD.

Exit status:
  0  every breaking change is allowed: HTTP ones by a new /vN base path, Python API ones by a major
     `version`, any by a reasoned exception in HEAD's specs/review-exceptions.yaml;
  1  the review fails: a breaking change nothing allows (MCP and HTTP+MCP changes need an exception:
     tool names carry no version), an invalid exceptions file, a new exception that matches nothing,
     or HEAD's specs do not pass `python -m codegen --lint` (or misuse renamed_from) — the report
     lists the problems;
  2  a side cannot be read (not a directory with specs, not a git ref).

The command line itself is defined in kumitate/commands.py (so `kumitate --help` loads no codegen).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from codegen.review import report
from codegen.review.diff import review
from codegen.review.loader import LoadError, load_side, uncommitted_specs
from codegen.review.rules import load_exceptions


def resolve_head(head: str | None, repo: Path | None) -> tuple[str, str, str | None]:
    """(what to load, its label, a note for the report). Without HEAD: the working tree when its specs/
    differ from the commit HEAD (uncommitted edits are what a developer wants reviewed), else HEAD."""
    if head is not None:
        return head, head, None
    where = repo or Path.cwd()
    changed = uncommitted_specs(where)
    if not changed:
        return "HEAD", "HEAD", None
    shown = ", ".join(f"`{p}`" for p in changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    note = (
        f"Reviewing the **working tree**, not the commit HEAD: {len(changed)} file(s) under specs/ differ from"
        f" HEAD ({shown}). Commit them, and CI reviews the same."
    )
    return str(where), "working tree", note


def run(
    base: str,
    head: str | None = None,
    repo: Path | None = None,
    fmt: str = "markdown",
    output: Path | None = None,
    exceptions_file: Path | None = None,
) -> int:
    """`kumitate diff BASE [HEAD]`: load both sides, review them against the exceptions file and print
    the report; returns 0 when nothing breaking is left unexcused, 1 when something is, 2 when a side
    cannot be loaded."""
    head, head_label, note = resolve_head(head, repo)
    with tempfile.TemporaryDirectory(prefix="kumitate-diff-") as tmp:
        try:
            head_side = load_side(head, Path(tmp) / "head", repo)
            base_side = load_side(base, Path(tmp) / "base", repo, meta_fallback=head_side.specs_dir / "_meta")
        except LoadError as exc:
            print(f"kumitate diff: {exc}", file=sys.stderr)
            return 2
        source = exceptions_file.parent if exceptions_file is not None else head_side.specs_dir
        if exceptions_file is not None and exceptions_file.name != "review-exceptions.yaml":
            tmp_exc = Path(tmp) / "exceptions"
            tmp_exc.mkdir()
            (tmp_exc / "review-exceptions.yaml").write_text(
                exceptions_file.read_text(encoding="utf-8"), encoding="utf-8"
            )
            source = tmp_exc
        exceptions, problems = load_exceptions(source)
        earlier, _ = load_exceptions(base_side.specs_dir)
        result = review(base_side.tree, head_side.tree, exceptions, base, head_label, problems, earlier)
        result.head_note = note
    text = json.dumps(result.to_json(), ensure_ascii=False, indent=1) + "\n" if fmt == "json" else report.render(result)
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return result.exit_code
