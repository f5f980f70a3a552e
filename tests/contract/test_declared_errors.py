"""Per tool, statically: a handler raises only the error codes its spec declares (plus BAD_REQUEST and INTERNAL).

`codegen.raises` (run by `make types` right after mypy) follows each tool's and resource's calls through
mypy's typed tree of handlers/<svc>/ and reports every generated error class it can make whose code the
spec does not declare; here it runs on every service, strictly. Its own cases are in tests/codegen/test_raises.py.
A converted service also carries no `ToolError(code="...")` literal: it raises the generated classes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codegen import raises
from generated.registry import SERVICES

REPO = Path(__file__).resolve().parents[2]


def test_the_check_covers_every_service_and_tool() -> None:
    assert raises.services() == sorted(SERVICES)
    for name, service in SERVICES.items():
        assert set(raises.service_package(name).declared) >= {tool.name for tool in service.tools}


def test_each_tool_raises_only_declared_codes() -> None:
    findings = raises.check_services(raises.services())
    assert not findings, "\n".join(map(str, findings))


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_handlers_raise_generated_classes_not_code_strings(service: str) -> None:
    literals = []
    for path in sorted((REPO / "handlers" / service).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "ToolError":
                literals.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not literals, "raise the generated error classes (generated.<svc>.errors) instead:\n" + "\n".join(literals)
