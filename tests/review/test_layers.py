"""`core` -> `store` only (issue 31): in every service, no module of store/ (or store.py) imports its
core/, directly or through another module of the service (a shared module such as problems.py that
imported core would close the cycle again). What both layers use lives beside them, at the service's
top level, and imports neither.

And the store is where the statements are (issue 44): no module of a service's core/ imports SQLAlchemy
or a database driver, builds a statement (`select(`, `insert(`, `update(`, `delete(`, `text(`) or runs
one (`.execute(`, `.scalar(`, ...). Core may hold the connection a store's `read()`/`write()` yields, to
hand it back to store functions (an import is one transaction over many files); the store names its
type (household's `store.Connection`)."""

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
#: every service with a core/, with a store or without one (a core without a store keeps nothing either)
WITH_CORE = sorted(p.name for p in HANDLERS.iterdir() if (p / "core").is_dir())

#: modules a core/ never imports: the storage layer's toolkit and the drivers under it
STORAGE_MODULES = frozenset({"sqlalchemy", "sqlite3", "psycopg", "psycopg2", "asyncpg"})
#: functions that build a statement (SQLAlchemy's, or a store's re-export of them)
STATEMENT_BUILDERS = frozenset({"select", "insert", "update", "delete", "text"})
#: methods that run a statement on a connection or cursor
STATEMENT_RUNNERS = frozenset({"execute", "executemany", "executescript", "exec_driver_sql", "scalar", "scalars"})
#: calls a runner's name matches that run no SQL, by module (under handlers/) and call as written
NOT_SQL = {"household/core/charts.py": {"engine.execute"}}  # matplotlib's layout engine lays out a figure
#: services whose core runs SQL that is not the storage layer's, and why; their imports are still checked
OWN_ENGINE = {
    "analytics": "its tools run the caller's SQL on DuckDB over the analytics file (a read-only engine of its own, "
    "the service's subject); the registries it keeps in the shared database are its store.py",
}


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


def sql_in_core(service_dir: Path, *, calls: bool = True, not_sql: dict[str, set[str]] | None = None) -> list[str]:
    """Each place in `service_dir`/core that imports a storage module or (with `calls`) builds or runs a
    statement, as `core/x.py:12: what`; `not_sql` names calls by module (relative to service_dir's parent)
    that only look like it."""
    found: list[tuple[str, int, str]] = []
    for path in sorted((service_dir / "core").rglob("*.py")):
        module = path.relative_to(service_dir).as_posix()
        allowed = (not_sql or {}).get(path.relative_to(service_dir.parent).as_posix(), set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            line = getattr(node, "lineno", 0)
            if isinstance(node, ast.Import):
                found += [
                    (module, line, f"import {a.name}") for a in node.names if a.name.split(".")[0] in STORAGE_MODULES
                ]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                if node.module.split(".")[0] in STORAGE_MODULES:
                    found.append((module, line, f"from {node.module} import ..."))
            elif calls and isinstance(node, ast.Call):
                func = node.func
                called = ast.unparse(func)
                builds = isinstance(func, ast.Name) and func.id in STATEMENT_BUILDERS
                runs = isinstance(func, ast.Attribute) and func.attr in STATEMENT_RUNNERS
                if (builds or runs) and called not in allowed:
                    found.append((module, line, f"{called}(...)"))
    return [f"{module}:{line}: {what}" for module, line, what in sorted(found)]


@pytest.mark.parametrize("service", WITH_CORE)
def test_core_leaves_the_statements_to_the_store(service: str) -> None:
    found = sql_in_core(HANDLERS / service, calls=service not in OWN_ENGINE, not_sql=NOT_SQL)
    assert found == [], "core/ calls store functions; statements and their imports belong in the store"


def test_the_exceptions_are_still_needed() -> None:
    """An exception nothing needs any more goes (else it would let a later statement through unseen)."""
    for rel, called in NOT_SQL.items():
        text = (HANDLERS / rel).read_text(encoding="utf-8")
        assert all(f"{c}(" in text for c in called), f"{rel}: {called} no longer there: drop it from NOT_SQL"
    for service in OWN_ENGINE:
        assert sql_in_core(HANDLERS / service, calls=True) != [], f"{service} runs no SQL in core: drop it"


def test_the_check_finds_statements_in_core(tmp_path: Path) -> None:
    svc = tmp_path / "svc"
    files = {
        "core/__init__.py": "",
        "core/importer.py": "from sqlalchemy import Connection, select\nimport sqlite3\n",
        "core/service.py": (
            "from ..store import Connection, queries, select, t\n"
            "def total(con: Connection) -> int:\n"
            "    rows = con.execute(select(t.c.id)).all()\n"
            "    return queries.count(con) + len(rows) + con.scalar(q)\n"
        ),
        "core/charts.py": "def lay_out(fig):\n    fig.get_layout_engine().execute(fig)\n    engine.execute(fig)\n",
        "core/clean.py": "from ..store import Connection, queries\ndef n(con: Connection) -> int:\n"
        "    return queries.count(con)\n",
        "store.py": "from sqlalchemy import select\ndef count(con):\n    return con.scalar(select(1))\n",
    }
    for name, text in files.items():
        (svc / name).parent.mkdir(parents=True, exist_ok=True)
        (svc / name).write_text(text)
    assert sql_in_core(svc, not_sql={"svc/core/charts.py": {"engine.execute"}}) == [
        "core/charts.py:2: fig.get_layout_engine().execute(...)",
        "core/importer.py:1: from sqlalchemy import ...",
        "core/importer.py:2: import sqlite3",
        "core/service.py:3: con.execute(...)",
        "core/service.py:3: select(...)",
        "core/service.py:4: con.scalar(...)",
    ]
    assert sql_in_core(svc, calls=False) == [
        "core/importer.py:1: from sqlalchemy import ...",
        "core/importer.py:2: import sqlite3",
    ]
