"""`core` -> `store` only (issue 31): in every service, no module of store/ (or store.py) imports its
core/, directly or through another module of the service (a shared module such as problems.py that
imported core would close the cycle again). What both layers use lives beside them, at the service's
top level, and imports neither."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

HANDLERS = REPO / "handlers"
LAYERED = sorted(
    p.name
    for p in HANDLERS.iterdir()
    if (p / "core").is_dir() and ((p / "store").is_dir() or (p / "store.py").is_file())
)


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str, root: Path) -> bool:
    path = root.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports(path: Path, root: Path) -> set[str]:
    """The modules of `root` that `path` imports (relative imports resolved; `from pkg import mod` names
    pkg.mod when that is a module of the tree, else pkg itself, whose __init__ then runs)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if is_module(sub, root) else target)
    return found


def store_to_core(service_dir: Path, root: Path) -> list[str]:
    """Each chain of imports from a store module to a core module of `service_dir`, as `a -> b -> c`."""
    graph = {module_name(p, root): imports(p, root) for p in sorted(service_dir.rglob("*.py"))}
    service = module_name(service_dir / "__init__.py", root)
    core, store = f"{service}.core", f"{service}.store"
    chains: list[str] = []
    for start in (m for m in graph if m == store or m.startswith(store + ".")):
        seen = {start: [start]}
        todo = [start]
        while todo:
            here = todo.pop()
            for nxt in sorted(graph.get(here, ())):
                if nxt in seen or nxt not in graph:
                    continue
                seen[nxt] = [*seen[here], nxt]
                if nxt == core or nxt.startswith(core + "."):
                    chains.append(" -> ".join(seen[nxt]))
                else:
                    todo.append(nxt)
    return chains


@pytest.mark.parametrize("service", LAYERED)
def test_store_never_imports_core(service: str) -> None:
    chains = store_to_core(HANDLERS / service, REPO)
    assert chains == [], "store must not import core: move what both use beside them (e.g. records.py)"


def test_the_check_finds_direct_and_indirect_reach_ins(tmp_path: Path) -> None:
    svc = tmp_path / "handlers" / "svc"
    files = {
        "__init__.py": "from .core import service\n",
        "core/__init__.py": "",
        "core/service.py": "from ..store import rows\n",
        "core/problems.py": "",
        "shared.py": "from .core.problems import x\n",
        "store/__init__.py": "",
        "store/rows.py": "from .. import shared\n",
        "store/checks.py": "from handlers.svc.core import problems\n",
        "store/clean.py": "from ..shared import y\nfrom . import rows\n",
    }
    for name, text in files.items():
        (svc / name).parent.mkdir(parents=True, exist_ok=True)
        (svc / name).write_text(text)
    assert sorted(store_to_core(svc, tmp_path)) == [
        "handlers.svc.store.checks -> handlers.svc.core.problems",
        "handlers.svc.store.clean -> handlers.svc.shared -> handlers.svc.core.problems",
        "handlers.svc.store.rows -> handlers.svc.shared -> handlers.svc.core.problems",
    ]
    (svc / "shared.py").write_text("")
    (svc / "store/checks.py").write_text("from ..shared import x\n")
    assert store_to_core(svc, tmp_path) == []
