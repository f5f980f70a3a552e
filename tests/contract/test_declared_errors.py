"""Per tool, statically: a handler raises only the error codes its spec declares (plus BAD_REQUEST and INTERNAL).

Read from the handler package's source (AST), not by running it: from the tool's method (and a
resource's `read_<name>`), every function of the package it calls by name is followed, and every
error it can make is collected: a `generated` error class (`NotFoundError(...)`, `errors.NotFoundError`)
or a `ToolError(..., code="...")` literal. The closure follows names, so it may over-approximate
(two functions with one name); it never misses a call made by name inside the package.
A converted service also carries no `ToolError(code="...")` literal: it raises the generated classes.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from generated.errors import ERRORS
from generated.registry import SERVICES

REPO = Path(__file__).resolve().parents[2]
CLASS_CODES = {cls.__name__: code for code, cls in ERRORS.items()}

OVER_REPORTED = "the name-based call closure reaches functions the tool never calls (same-named helpers); "
NOT_CONVERTED: dict[str, str] = {
    "analytics": OVER_REPORTED + "tests/analytics/test_declared_errors.py drives every failure path instead",
    "attendance": OVER_REPORTED + "tests/attendance/test_declared_codes.py drives every failure path instead",
    "yana": OVER_REPORTED + "tests/yana/test_yana_declared_codes.py drives every failure path instead",
}
"""Services this static check over-reports for (xfail with the reason); the pipeline fails closed at run time."""


def _service(name: str) -> pytest.param:  # type: ignore[valid-type]
    marks = [pytest.mark.xfail(reason=NOT_CONVERTED[name], strict=False)] if name in NOT_CONVERTED else []
    return pytest.param(name, marks=marks, id=name)


class Package:
    """Every function of handlers/<svc>/ by name, for a name-based call closure."""

    def __init__(self, service: str) -> None:
        self.functions: dict[str, list[ast.AST]] = {}
        for path in sorted((REPO / "handlers" / service).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    self.functions.setdefault(node.name, []).append(node)

    def reachable(self, entry: str) -> Iterator[ast.AST]:
        seen: set[str] = set()
        todo = [entry]
        while todo:
            name = todo.pop()
            if name in seen or name not in self.functions:
                continue
            seen.add(name)
            for fn in self.functions[name]:
                yield fn
                for node in ast.walk(fn):
                    if isinstance(node, ast.Call):
                        callee = node.func
                        todo.append(callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", ""))


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def made_errors(functions: Iterator[ast.AST]) -> dict[str, int]:
    """Code -> line of one place it is made, for each catalogue error the functions construct."""
    found: dict[str, int] = {}
    for fn in functions:
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            name = _called_name(node)
            if name in CLASS_CODES:
                found.setdefault(CLASS_CODES[name], node.lineno)
            elif name == "ToolError":
                for kw in node.keywords:
                    if kw.arg == "code" and isinstance(kw.value, ast.Constant):
                        found.setdefault(str(kw.value.value), node.lineno)
    return found


def _entries(service: str) -> dict[str, frozenset[str]]:
    return importlib.import_module(f"generated.{service}.errors").DECLARED  # type: ignore[no-any-return]


@pytest.mark.parametrize("service", [_service(s) for s in sorted(SERVICES)])
def test_each_tool_raises_only_declared_codes(service: str) -> None:
    package = Package(service)
    declared = _entries(service)
    assert set(declared) >= {t.name for t in SERVICES[service].tools}
    problems = []
    for entry, codes in sorted(declared.items()):
        for code, line in sorted(made_errors(package.reachable(entry)).items()):
            if code not in codes:
                problems.append(f"{entry} can raise {code} (line {line}), which its spec does not declare")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("service", [_service(s) for s in sorted(SERVICES)])
def test_handlers_raise_generated_classes_not_code_strings(service: str) -> None:
    literals = []
    for path in sorted((REPO / "handlers" / service).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _called_name(node) == "ToolError":
                literals.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not literals, "raise the generated error classes (generated.<svc>.errors) instead:\n" + "\n".join(literals)


def test_the_check_sees_a_raise_through_a_helper(tmp_path: Path) -> None:
    """The closure follows a call into a helper, and sees both spellings of an error."""
    source = (
        "def tool(self, input, ctx):\n    return _helper(input)\n"
        "def _helper(x):\n    if x:\n        raise errors.NotFoundError('no')\n"
        "    raise ToolError('gone', code='CONFLICT')\n"
        "def unrelated():\n    raise RateLimitedError('x')\n"
    )
    package = Package.__new__(Package)
    package.functions = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            package.functions.setdefault(node.name, []).append(node)
    assert set(made_errors(package.reachable("tool"))) == {"NOT_FOUND", "CONFLICT"}
