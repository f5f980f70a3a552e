"""Each yana tool raises only the error codes its spec declares (issue 19): the generated error classes
raised in the modules on a tool's path, read from the source, against specs/yana/tools/<tool>.yaml."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from generated import errors

REPO = Path(__file__).resolve().parents[2]
HANDLERS = REPO / "handlers" / "yana"
# the modules each tool's call runs through (handlers/yana/__init__.py wraps them)
PATHS = {
    "chat": ["chat.py", "search.py", "kb.py", "generate.py", "voice.py", "japanese.py", "ranking.py", "bm25.py"],
    "search": ["search.py", "kb.py", "store.py", "japanese.py", "ranking.py", "bm25.py"],
    "ingest": ["ingest.py", "fetch.py", "kb.py", "store.py"],
}
CLASS_CODES = {cls.__name__: code for code, cls in errors.ERRORS.items()}


def raised_codes(module: Path) -> set[str]:
    """Codes of the generated error classes a module raises (`raise XxxError(...)`)."""
    codes = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        call = node.exc if isinstance(node, ast.Raise) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in CLASS_CODES:
            codes.add(CLASS_CODES[call.func.id])
    return codes


def test_every_handler_module_is_on_some_path_or_raises_nothing() -> None:
    on_a_path = {name for names in PATHS.values() for name in names} | {"__init__.py"}
    for module in HANDLERS.glob("*.py"):
        assert module.name in on_a_path or not raised_codes(module), module.name


@pytest.mark.parametrize("tool", sorted(PATHS))
def test_a_tool_raises_only_declared_codes(tool: str) -> None:
    declared = set(yaml.safe_load((REPO / "specs" / "yana" / "tools" / f"{tool}.yaml").read_text("utf-8"))["errors"])
    raised = set().union(*(raised_codes(HANDLERS / name) for name in PATHS[tool]))
    assert raised, tool
    assert raised <= declared, f"{tool} raises undeclared {sorted(raised - declared)}"


def test_the_check_sees_a_raise() -> None:
    assert raised_codes(HANDLERS / "chat.py") == {"BAD_REQUEST"}
    assert raised_codes(HANDLERS / "search.py") == {"BAD_REQUEST", "RAG_UNAVAILABLE"}
