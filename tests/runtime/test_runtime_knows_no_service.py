"""Services are plug-ins (issue 43, DESIGN.md): the runtime imports no service, declares no service's table and
carries no service's migration; its own migrations alone make its own tables (idempotency, tasks)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from sqlalchemy import create_engine, inspect

from kumitate.storage import migrate, schema
from tests.conftest import REPO

RUNTIME = REPO / "kumitate"
RUNTIME_TABLES = {"idempotency", "tasks"}
BUNDLED = re.compile(r"stays|household|yana|attendance|analytics", re.IGNORECASE)
"""The bundled services: examples that plug in as a team's own do, named by no code of the runtime."""


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"))) for path in sorted(RUNTIME.rglob("*.py"))]


def test_no_module_of_the_runtime_imports_a_service() -> None:
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            found += [f"{path.relative_to(REPO)}:{node.lineno} {n}" for n in names if n.split(".")[0] == "handlers"]
    assert found == []


def test_the_runtime_declares_only_its_own_tables() -> None:
    assert set(schema.metadata.tables) == RUNTIME_TABLES
    declared = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            call = node if isinstance(node, ast.Call) else None
            if call is None or not call.args or not isinstance(call.args[0], ast.Constant):
                continue
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
            if name in {"Table", "create_table"} and call.args[0].value not in RUNTIME_TABLES:
                declared.append(f"{path.relative_to(REPO)}:{node.lineno} {name}({call.args[0].value!r})")
    assert declared == []


def test_the_runtime_s_migrations_alone_make_only_its_own_tables(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'runtime.sqlite3'}")
    try:
        with engine.connect() as conn:
            from alembic import command

            command.upgrade(migrate.Migrations().config(conn), "heads")
            conn.commit()
        assert set(inspect(engine).get_table_names()) == RUNTIME_TABLES | {"alembic_version"}
    finally:
        engine.dispose()


def test_every_migration_directory_of_the_runtime_is_its_own() -> None:
    """Version directories live in kumitate/storage/migrations only; a service's live next to its code."""
    directories = {p.parent for p in RUNTIME.rglob("versions/*.py")}
    assert directories == {migrate.RUNTIME_VERSIONS}


def test_no_file_and_no_name_of_the_runtime_is_a_bundled_service_s() -> None:
    """Only prose (docstrings, comments, help text) may mention them: no module, package or identifier."""
    found = [str(p.relative_to(REPO)) for p in RUNTIME.rglob("*") if BUNDLED.search(p.name)]
    for path, _ in _modules():
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        found += [
            f"{path.relative_to(REPO)}:{t.start[0]} {t.string}"
            for t in tokens
            if t.type == tokenize.NAME and BUNDLED.search(t.string)
        ]
    assert found == []
