"""No import circle in `kumitate/` or `codegen/` (issue 44), hidden ones included.

A circle of modules means none of them can be read, tested or moved without the others, and which one
Python finishes first depends on who imported first. Deferring one of the imports into a function or
under `if TYPE_CHECKING:` keeps Python from tripping over it but leaves the circle: so the graph here is
built from every import statement of every module, wherever it stands (module level, in a function,
under `TYPE_CHECKING`), and every `importlib.import_module("a.b")` that spells its module out; a package's
`__init__` counts as the package, and `from pkg import mod` as an import of `pkg.mod` when `mod` is a
module (importing `pkg.mod` runs `pkg/__init__` too, but that is not counted: a package re-exporting its
modules would otherwise be a circle with each of them). Its strongly connected components (Tarjan) are the circles;
a circle is broken by moving the shared name down, passing a callable in, or splitting a module whose
halves sit on different floors (test_layers.py holds the same rule for a service's core and store).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.review.support import REPO
from tests.review.test_layers import module_name

ROOTS = ("kumitate", "codegen")

Graph = dict[str, dict[str, int]]
"""Module -> {module it imports: line of the first such import}."""


def import_graph(repo: Path, roots: Iterable[str]) -> Graph:
    """Every module under `roots` and the modules of the same tree that it imports, anywhere in its body."""
    files = {module_name(p, repo): p for root in roots for p in sorted((repo / root).rglob("*.py"))}
    graph: Graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1] if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                targets = [f"{target}.{a.name}" if f"{target}.{a.name}" in files else target for a in node.names]
            elif imported := _import_call(node):
                targets = [imported]
            else:
                continue
            for target in targets:
                while target and target not in files:  # `import a.b.c` of a name inside a.b: a.b
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def _import_call(node: ast.AST) -> str | None:
    """The module `importlib.import_module("a.b")` (or `import_module`, `__import__`) names, when it is
    spelled out: loading by name is an import all the same, and no way around a circle."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    first = node.args[0]
    if name in {"import_module", "__import__"} and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def circles(graph: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found, key=lambda c: (-len(c), c))


def describe(graph: Graph, circle: list[str]) -> str:
    """A circle as its modules and the imports that join them, with the line of each."""
    members = set(circle)
    lines = [f"{len(circle)} modules: {', '.join(circle)}"]
    for module in circle:
        for target, line in sorted(graph[module].items()):
            if target in members:
                lines.append(f"    {module} (line {line}) imports {target}")
    return "\n".join(lines)


def test_kumitate_and_codegen_have_no_import_circle() -> None:
    graph = import_graph(REPO, ROOTS)
    found = circles(graph)
    report = "\n".join(describe(graph, c) for c in found)
    assert found == [], (
        f"{len(found)} import circle(s), counting in-function, TYPE_CHECKING and import_module imports:\n{report}"
    )


def test_the_check_sees_circles_hidden_in_functions_type_checking_packages_and_import_module(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "from pkg.sub import helper\n",
        "pkg/sub/__init__.py": "def helper():\n    from pkg.low import y\n",
        "pkg/low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import sub\n",
        "pkg/a.py": "import os\nfrom . import b\n",
        "pkg/b.py": "def f():\n    import pkg.a.thing\n",
        "pkg/leaf.py": "from pkg import low, lazy\n",
        "pkg/lazy.py": "import importlib\ndef f():\n    return importlib.import_module('pkg.leaf')\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.low"] == {"pkg.sub": 3}
    assert graph["pkg.lazy"] == {"pkg.leaf": 3}
    assert circles(graph) == [["pkg.a", "pkg.b"], ["pkg.lazy", "pkg.leaf"], ["pkg.low", "pkg.sub"]]
    assert "pkg.b (line 2) imports pkg.a" in describe(graph, ["pkg.a", "pkg.b"])
    (tmp_path / "pkg/low.py").write_text("")
    (tmp_path / "pkg/b.py").write_text("import pkg.leaf\n")
    (tmp_path / "pkg/lazy.py").write_text(
        "import importlib\nNAME = 'pkg.leaf'\nimportlib.import_module(NAME.upper())\n"
    )
    assert circles(import_graph(tmp_path, ["pkg"])) == []
