"""Line numbers for spec problems: a lint finding names the file, the line and the rule."""

from __future__ import annotations

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
