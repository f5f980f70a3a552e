"""Line numbers for spec problems: a lint finding names the file, the line and the rule.

Under GitHub Actions (GITHUB_ACTIONS=true) each problem is also printed as a workflow command,
`::error file=…,line=…,title=…::message`, so the pull request shows it on the spec's line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

from codegen.specs import Problem


def line_of(path: Path, pointer: str) -> int | None:
    """The 1-based line of a JSON pointer inside a YAML (or JSON) file, as deep as it resolves."""
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    if node is None:
        return None
    line = node.start_mark.line + 1
    for raw in (p for p in pointer.split("/") if p):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
            if match is None:
                break
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
            line = node.start_mark.line + 1
        else:
            break
    return line


def describe(problem: Problem, base: Path) -> str:
    """`file:line: [RULE] message (at /pointer)`, the form editors and CI logs link."""
    line = line_of(base / problem.file, problem.pointer)
    where = f"{problem.file}:{line}" if line else problem.file
    return f"{where}: [{problem.rule}] {problem.message} (at {problem.pointer or '/'})"


def _escape(text: str, *, prop: bool = False) -> str:
    """A workflow command's escaping: %, CR and LF everywhere; `:` and `,` in properties too."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def annotation(problem: Problem, base: Path, level: str = "error") -> str:
    """`::error file=specs/…,line=N,title=RULE::message (at /pointer)` for GitHub Actions."""
    props = {"file": problem.file, "line": line_of(base / problem.file, problem.pointer), "title": problem.rule}
    shown = ",".join(f"{key}={_escape(str(value), prop=True)}" for key, value in props.items() if value is not None)
    message = f"{problem.message} (at {problem.pointer or '/'})"
    return f"::{level} {shown}::{_escape(message)}"


def annotate(problems: Iterable[Problem], base: Path, env: Mapping[str, str] | None = None) -> None:
    """Under GitHub Actions, each problem as an annotation on stdout (where the runner reads them)."""
    if (os.environ if env is None else env).get("GITHUB_ACTIONS") == "true":
        for problem in problems:
            print(annotation(problem, base))
