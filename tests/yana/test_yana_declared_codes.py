"""Each yana tool and resource raises only the error codes its spec declares (issue 19), read from the source.

From a method of `YanaHandlers` (handlers/yana/__init__.py), the check collects the generated error
classes it constructs itself, in the adapter methods it calls (`self._x(...)`), and in every module
of handlers.yana that the names it uses come from (also through its state: `self.kb` is built from
`KnowledgeBase`, so using it brings in handlers/yana/store/kb.py), with everything those modules import from
handlers.yana in turn. A raise in a module on the way counts whether or not that exact function runs,
so the check can only over-report, never miss a raise of a module the call goes through; and since the
modules of the three tools import each other only where a call really goes (chat → search, ingest →
fetch), that is precise enough to hold: ingest's upstream codes never show up on chat's path.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from generated import errors
from generated.yana.errors import DECLARED
from kumitate.policies.spec import GENERIC_CODES

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "handlers" / "yana"
CLASS_CODES = {cls.__name__: code for code, cls in errors.ERRORS.items()}


def module_path(name: str) -> Path | None:
    """handlers.yana.core.chat → its file (None outside handlers.yana)."""
    if not name.startswith("handlers.yana."):
        return None
    base = REPO.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def made_codes(tree: ast.AST) -> set[str]:
    """Codes of the generated error classes constructed under `tree` (`NotFoundError(...)`)."""
    codes = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in CLASS_CODES:
                codes.add(CLASS_CODES[name])
    return codes


def imports(tree: ast.Module) -> dict[str, str]:
    """Name bound by a `from handlers.yana.x import name` → the module it comes from."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and module_path(node.module):
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
    return found


def module_closure(start: set[str]) -> set[Path]:
    """The modules of handlers.yana in `start` and every one they import, transitively."""
    seen: set[Path] = set()
    todo = [p for p in map(module_path, start) if p is not None]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo += [p for p in map(module_path, set(imports(parse(path)).values())) if p is not None]
    return seen


ADAPTER = parse(PACKAGE / "__init__.py")
ADAPTER_IMPORTS = imports(ADAPTER)
METHODS = {
    node.name: node
    for cls in ADAPTER.body
    if isinstance(cls, ast.ClassDef) and cls.name == "YanaHandlers"
    for node in cls.body
    if isinstance(node, ast.FunctionDef)
}


def _state_modules() -> dict[str, set[str]]:
    """`self.kb = KnowledgeBase(...)` in __init__: kb → the modules of the names that build it."""
    found: dict[str, set[str]] = {}
    for node in ast.walk(METHODS["__init__"]):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    names = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                    found[target.attr] = {ADAPTER_IMPORTS[n] for n in names if n in ADAPTER_IMPORTS}
    return found


STATE = _state_modules()


def reach(method: str) -> tuple[set[str], set[Path]]:
    """(codes raised in the adapter methods `method` runs, the modules of the names they call)."""
    codes: set[str] = set()
    modules: set[str] = set()
    seen: set[str] = set()
    todo = [method]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        codes |= made_codes(METHODS[name])
        for node in ast.walk(METHODS[name]):
            if isinstance(node, ast.Name) and node.id in ADAPTER_IMPORTS:
                modules.add(ADAPTER_IMPORTS[node.id])
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                if node.attr in METHODS:
                    todo.append(node.attr)
                modules |= STATE.get(node.attr, set())  # self.kb.count(): the knowledge base's module
    return codes, module_closure(modules)


def raised_by(method: str) -> set[str]:
    codes, modules = reach(method)
    return codes.union(*(made_codes(parse(path)) for path in modules))


@pytest.mark.parametrize("method", sorted(DECLARED))
def test_a_tool_or_resource_raises_only_declared_codes(method: str) -> None:
    raised = raised_by(method)
    allowed = DECLARED[method] | GENERIC_CODES
    assert raised <= allowed, f"{method} can raise undeclared {sorted(raised - allowed)}"


def test_the_check_follows_the_calls() -> None:
    """It sees raises in the core modules, through imports, and in the adapter's helpers."""
    assert raised_by("chat") == {"BAD_REQUEST", "RAG_UNAVAILABLE"}
    assert raised_by("search") == {"BAD_REQUEST", "RAG_UNAVAILABLE"}
    assert {"UPSTREAM_TIMEOUT", "URI_NOT_ALLOWED", "INVALID_IMAGE"} <= raised_by("ingest")  # via core/fetch.py
    assert raised_by("read_brand") == {"NOT_FOUND"}  # in the adapter's `_group`
    assert raised_by("read_version") == set()
    assert "kb.py" in {p.name for p in reach("read_healthz")[1]}  # self.kb.count()


def test_the_tools_paths_stay_apart() -> None:
    """The precision the check relies on: chat and search never import ingest's modules."""
    for tool in ("chat", "search"):
        names = {p.name for p in reach(tool)[1]}
        assert "ingest.py" not in names and "fetch.py" not in names, (tool, names)
